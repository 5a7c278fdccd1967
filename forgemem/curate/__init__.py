"""Keeping a store true over time: consolidation, resolving forks and conflicts, staleness,
health, near-duplicates and contradictions (`nearby`), `tidy`. Writes only through `Workspace`;
never imports `agents` or `cli`.
"""
