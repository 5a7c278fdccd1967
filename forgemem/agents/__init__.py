"""Each agent's dialect at the edge: Claude Code and Codex hooks, install, the /memory 
language, MCP. Hooks fail open. Never imports `cli`.
"""
