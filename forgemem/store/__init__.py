"""What is on disk and what it means: the memory record, one file in and out, a scope's
folder, safe writes (the store lock, stale temporary files, retried adds), the graph of
versions and edges, validation, redaction. Imports nothing else of forgemem but `errors`,
`config` and `permissions`.
"""
