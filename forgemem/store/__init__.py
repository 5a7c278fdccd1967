"""What is on disk and what it means: the memory record, one file in and out, a scope's 
folder, the graph of versions and edges, validation, redaction. Imports nothing else of 
forgemem but `errors`, `config` and `permissions`.
"""
