"""Redaction of secrets before anything is written to a memory file.

Patterns cover the credentials that show up in agent sessions: cloud and
API keys, tokens, private key blocks, passwords in URLs and assignments.
A match is replaced by `[REDACTED:<kind>]` (a `keep` group, such as
the `password=` before a value, is kept); the caller is told what was found.
"""

from __future__ import annotations

import re

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
            re.S,
        ),
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("url-password", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
    (
        "password",
        re.compile(
            r"(?i)(?P<keep>\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|token)"
            r"[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)[^\s\"']{6,}"
        ),
    ),
]


def redact(text: str) -> tuple[str, list[str]]:
    """The text with secrets replaced, and the kinds of secret found (in order)."""
    found: list[str] = []
    for kind, pattern in _PATTERNS:
        keep = "keep" in pattern.groupindex
        text, count = pattern.subn(
            lambda m, keep=keep, kind=kind: (m.group("keep") if keep else "") + f"[REDACTED:{kind}]", text
        )
        found.extend([kind] * count)
    return text, found
