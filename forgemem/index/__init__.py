"""Derived state only: the rebuildable cache of a store (manifest, lexical index, vectors) 
and the embedder. Deleting it loses only time. Imports `store`, never `workspace` or 
anything above.
"""
