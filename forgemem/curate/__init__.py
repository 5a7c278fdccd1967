"""Keeping a store true over time: consolidation, resolving forks and conflicts, staleness, 
health. Writes only through `Workspace`; never imports `agents` or `cli`.
"""
