"""Redaction of secrets before anything is written to a memory file.

Two layers, both run on every memory text and provenance quote:

1. Token shapes that show up in agent sessions (cloud and API keys, tokens,
   private key blocks, passwords in URLs, `.env` assignments, auth headers).
   A match is replaced by `[REDACTED:<kind>]`; a `keep` group, such as the
   `password=` before a value, is kept.
2. Yelp's detect-secrets plugins (a maintained detector: AWS, Azure, GitHub,
   GitLab, Slack, Stripe, Twilio, npm, PyPI, JWT, keyword assignments,
   high-entropy quoted strings, …), line by line, for whatever layer 1 missed.
   A finding is widened to the whole token it sits in before it is redacted.

The caller is told the kinds found; nothing is logged with the secret in it.
"""

from __future__ import annotations

import re
from functools import lru_cache

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("aws-secret-key", re.compile(r"(?i)(?P<keep>aws_?secret_?(?:access_?)?key\W{0,4})[A-Za-z0-9/+]{40}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi-token", re.compile(r"\bpypi-AgE[A-Za-z0-9_\-]{50,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+")),
    ("discord-webhook", re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("google-oauth-secret", re.compile(r"\bGOCSPX-[A-Za-z0-9_\-]{20,}")),
    ("stripe-key", re.compile(r"\b(?:[rs]k|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),
    ("twilio-key", re.compile(r"\b(?:SK|AC)[0-9a-f]{32}\b")),
    ("mailgun-key", re.compile(r"\bkey-[0-9a-f]{32}\b")),
    ("telegram-bot-token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b")),
    ("digitalocean-token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    ("azure-storage-key", re.compile(r"(?i)(?P<keep>AccountKey=)[A-Za-z0-9+/=]{40,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("auth-header", re.compile(r"(?i)(?P<keep>\b(?:authorization|proxy-authorization)\s*:\s*(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]{8,}")),
    ("bearer-token", re.compile(r"(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/\-]{20,}=*")),
    ("url-password", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
    (
        "env-secret",
        re.compile(
            r"(?P<keep>(?<![A-Za-z0-9_])[A-Z0-9_]*(?:SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
            r"PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH)[A-Z0-9_]*\s*=\s*[\"']?)(?!\[REDACTED)[^\s\"']{4,}"
        ),
    ),
    (
        "password",
        re.compile(
            r"(?i)(?P<keep>(?<![A-Za-z0-9])(?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?token|"
            r"auth[_-]?token|refresh[_-]?token|token)[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)[^\s\"']{6,}"
        ),
    ),
]

#: detect-secrets plugins not used: a public IP address is not a secret
_SKIPPED_PLUGINS = {"IPPublicDetector"}
_TOKEN_EDGE = re.compile(r"[\s\"'`<>()\[\]{},;=:]")


@lru_cache(maxsize=1)
def _plugins() -> tuple:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:  # pragma: no cover - a declared dependency; layer 1 still runs
        return ()
    return tuple(
        cls() for cls in get_mapping_from_secret_type_to_class().values() if cls.__name__ not in _SKIPPED_PLUGINS
    )


def _detected_spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each detect-secrets finding, widened to its whole token."""
    spans = []
    for plugin in _plugins():
        try:
            findings = plugin.analyze_line(filename="memory.md", line=line, line_number=1)
        except Exception:  # noqa: BLE001 - one plugin's bug must not stop the others
            continue
        for finding in findings:
            value = finding.secret_value or ""
            if len(value) < 4 or "[REDACTED" in value:
                continue
            kind = finding.type.lower().replace(" ", "-")
            for match in re.finditer(re.escape(value), line):
                start, end = match.start(), match.end()
                while start > 0 and not _TOKEN_EDGE.match(line[start - 1]):
                    start -= 1
                while end < len(line) and not _TOKEN_EDGE.match(line[end]):
                    end += 1
                if "[REDACTED" not in line[start:end]:
                    spans.append((start, end, kind))
    return spans


def _redact_detected(text: str, found: list[str]) -> str:
    lines = text.split("\n")
    for number, line in enumerate(lines):
        spans = _detected_spans(line)
        if not spans:
            continue
        spans.sort()
        merged: list[list] = []
        for start, end, kind in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end, kind])
        for start, end, kind in reversed(merged):
            line = line[:start] + f"[REDACTED:{kind}]" + line[end:]
            found.append(kind)
        lines[number] = line
    return "\n".join(lines)


def redact(text: str) -> tuple[str, list[str]]:
    """The text with secrets replaced, and the kinds of secret found (in order)."""
    found: list[str] = []
    for kind, pattern in _PATTERNS:
        keep = "keep" in pattern.groupindex
        text, count = pattern.subn(
            lambda m, keep=keep, kind=kind: (m.group("keep") if keep else "") + f"[REDACTED:{kind}]", text
        )
        found.extend([kind] * count)
    return _redact_detected(text, found), found


def redact_value(value):
    """`redact` applied to every string inside a str/list/dict value (e.g. `source`)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        found: list[str] = []
        items = []
        for item in value:
            clean, kinds = redact_value(item)
            items.append(clean)
            found.extend(kinds)
        return items, found
    if isinstance(value, dict):
        found = []
        result = {}
        for key, item in value.items():
            clean, kinds = redact_value(item)
            result[key] = clean
            found.extend(kinds)
        return result, found
    return value, []
