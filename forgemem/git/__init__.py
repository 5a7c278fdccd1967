"""Memory in git: reviewing memory diffs, proposals, the diff driver. Never writes memory 
files except through `Workspace`; never imports `agents` or `cli`.
"""
