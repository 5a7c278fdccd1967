"""Memories in and out of the files other tools read: instruction files and other memory tools' exports.

`forgemem import` turns the rules people already keep in `CLAUDE.md`, `AGENTS.md`,
`GEMINI.md`, `.cursorrules`, `.cursor/rules/*.mdc`, `.github/copilot-instructions.md`
and plain markdown (or in basic-memory notes, mem0's and the MCP memory server's
exports) into memories, with their provenance; `forgemem export` writes the current
memories back into a generated section of those files, so agents without hooks get
them too.

Layer 5, beside `capture/`, `curate/` and `git/`, above `workspace`: the rule is that
a memory file is written only through `Workspace.add` (never by hand), category and
scope come from capture's classifier (imported, never changed here), a user's file is
changed only between forgemem's own markers and only atomically, and bad input
(a binary file, an oversized one, hand-edited markers, a read-only target) stops the
command with one sentence before anything is written.
"""
