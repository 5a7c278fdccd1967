"""Redaction's layer 3: detect-secrets plugins (vendor keys, keyword assignments, high entropy), line by line."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from forgemem.store.redact_values import MARK_PREFIX, not_a_value

#: detect-secrets plugins not used: a public IP address is not a secret
_SKIPPED_PLUGINS = {"IPPublicDetector"}
_KEYWORDS = ("key", "pw", "pass", "token", "secret", "contras", "cloudant")
_RUN8 = re.compile(r"[\w+/=-]{8}")
_RUN24 = re.compile(r"[\w-]{24}")


class _Line:
    """What a line holds, worked out once and only when a plugin asks: lets `_detected_spans` skip
    the plugins that cannot match (each skip is exact: the plugin's own patterns need that feature)."""

    def __init__(self, line: str):
        self.line = line
        self.lower = line.lower()
        self._cache: dict[str, bool] = {}

    def has(self, feature: str) -> bool:
        if feature not in self._cache:
            line, lower = self.line, self.lower
            self._cache[feature] = {
                "keyword": lambda: any(word in lower for word in _KEYWORDS),
                "quote": lambda: "'" in line or '"' in line,
                "quote-or-backtick": lambda: "'" in line or '"' in line or "`" in line,
                "run8": lambda: bool(_RUN8.search(line)),
                "run24": lambda: bool(_RUN24.search(line)),
                "url-at": lambda: "://" in line and "@" in line,
                "slack": lambda: "xox" in lower or "slack" in lower,
                "npm": lambda: "_authtoken" in lower,
            }[feature]()
        return self._cache[feature]


#: per plugin, the features a line must have for the plugin to possibly match (all of them);
#: plugins not listed need a run of 8 token characters
_PLUGIN_NEEDS = {
    "KeywordDetector": ("keyword", "quote-or-backtick"),
    "CloudantDetector": ("keyword", "run24"),
    "IbmCloudIamDetector": ("keyword", "run24"),
    "IbmCosHmacDetector": ("keyword", "run24"),
    "SoftlayerDetector": ("keyword", "run24"),
    "AzureStorageKeyDetector": ("keyword",),
    "PrivateKeyDetector": ("keyword",),
    "NpmDetector": ("npm",),
    "Base64HighEntropyString": ("quote",),
    "HexHighEntropyString": ("quote",),
    "BasicAuthDetector": ("url-at",),
    "SlackDetector": ("slack",),
}
_HASH_CONTEXT = re.compile(r"(?i)sha|md5|hash|digest|checksum|commit|integrity|etag|\brev\b|revision|fingerprint")
_API_OBJECT_ID = re.compile(r"^(?:msg|toolu|srvtoolu|req|call|resp|chatcmpl|run|thread|asst|batch)[_-][A-Za-z0-9]{10,40}$")
_TOKEN_EDGE = re.compile(r"[\s\"'`<>()\[\]{},;=:]")


@lru_cache(maxsize=1)
def _plugins() -> tuple:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:  # pragma: no cover - a declared dependency; layers 1 and 2 still run
        return ()
    classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    return tuple(
        (cls(), _PLUGIN_NEEDS.get(cls.__name__, ("run8",))) for cls in classes if cls.__name__ not in _SKIPPED_PLUGINS
    )


def _detected_spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each detect-secrets finding, widened to its whole token."""
    spans = []
    features = _Line(line)
    for plugin, needs in _plugins():
        if not all(features.has(feature) for feature in needs):
            continue
        try:
            findings = plugin.analyze_line(filename="memory.md", line=line, line_number=1)
        except Exception:  # noqa: BLE001 - one plugin's bug must not stop the others
            continue
        for finding in findings:
            value = finding.secret_value or ""
            if len(value) < 4 or MARK_PREFIX in value:
                continue
            kind = finding.type.lower().replace(" ", "-")
            if kind == "hex-high-entropy-string" and len(value) in (32, 40, 56, 64, 96, 128) and _HASH_CONTEXT.search(line):
                continue  # a commit id or a checksum, said to be one
            if kind == "base64-high-entropy-string" and _API_OBJECT_ID.match(value):
                continue  # a message, tool-call or request id in an agent transcript
            if kind == "secret-keyword" and not_a_value(value):
                continue  # password = "REDACTED_API_KEY", token = "${TOKEN}"
            for match in re.finditer(re.escape(value), line):
                start, end = match.start(), match.end()
                while start > 0 and not _TOKEN_EDGE.match(line[start - 1]):
                    start -= 1
                while end < len(line) and not _TOKEN_EDGE.match(line[end]):
                    end += 1
                if MARK_PREFIX not in line[start:end] and not re.match(r"(?i)sha\d+-", line[start:end]):
                    spans.append((start, end, kind))
    return spans


def redact_detected(text: str, found: list[str]) -> str:
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
