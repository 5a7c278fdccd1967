"""Parsing YAML from files anyone may have written, with limits.

Memory files and config files may come from a repository someone else wrote. A
YAML alias "bomb" of a few hundred bytes expands to gigabytes in whatever walks
the result, and deep nesting exhausts the recursion of every command; both are
refused here, before anything is parsed, as a problem with the file's line.
"""

from __future__ import annotations

import re

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


#: Front matter is a few hundred bytes; this much is already absurd.
MAX_FRONT_MATTER_CHARS = 64 * 1024
#: Nesting deeper than this is refused before parsing (the format needs 3 levels).
MAX_YAML_DEPTH = 32
#: Only text with one of these can hold an anchor, an alias, a complex key or deep nesting on
#: few lines (an empty `[]` or `{}`, as every file's `related: []`, cannot).
_MAYBE_UNSAFE = re.compile(r"(?:^|[\s\[{,:-])[&*?]|\[(?!\])|\{(?!\})|-[ \t]+-|\t", re.M)
_OPENING = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken,
            yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)
_CLOSING = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def unsafe_yaml(text: str, max_depth: int = MAX_YAML_DEPTH) -> tuple[str, int] | None:
    """Why YAML text must not be parsed, and the line (None: it may be).

    Anchors and aliases are refused (an alias "bomb" of a few hundred bytes
    expands to gigabytes in whatever walks the result), and so is nesting
    deeper than `max_depth`. Checked on the token stream, which is flat: no
    recursion and no expansion. Text that cannot hold either is not scanned.
    Invalid YAML is left for the parser to report.
    """
    if len(text) < 4096 and not _MAYBE_UNSAFE.search(text):
        return None
    depth = 0
    try:
        for token in yaml.scan(text, Loader=_LOADER):
            if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
                return "YAML anchors and aliases (&name, *name) are not allowed in forgemem files", token.start_mark.line + 1
            if isinstance(token, _OPENING):
                depth += 1
                if depth > max_depth:
                    return f"the YAML is nested more than {max_depth} levels deep", token.start_mark.line + 1
            elif isinstance(token, _CLOSING):
                depth -= 1
    except yaml.YAMLError as exc:
        # libyaml 0.2.6+ (PyYAML 6.0.3+) limits nesting itself, before the tokens reach us
        if "nesting depth" in str(getattr(exc, "problem", "") or ""):
            mark = getattr(exc, "problem_mark", None)
            return f"the YAML is nested more than {max_depth} levels deep", (mark.line + 1 if mark else 1)
        return None
    return None


def unsafe_yaml_reason(text: str) -> str | None:
    """`unsafe_yaml` as one sentence (for config files)."""
    found = unsafe_yaml(text)
    return None if found is None else f"{found[0]} (line {found[1]})"


