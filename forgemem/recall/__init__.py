"""Finding the memories that matter: ranking, the engine, the context block for agents, the 
recall server and its client. Never imports `capture`, `curate`, `git`, `agents` or 
`cli`.
"""
