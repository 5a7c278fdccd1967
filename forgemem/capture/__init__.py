"""Transcripts in, memories out: the transcript readers, the observer, the classifiers and 
the capturer, which writes only through `Workspace`. Never imports `curate`, `git`, 
`agents` or `cli`.
"""
