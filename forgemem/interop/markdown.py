"""Rules out of an instruction file: each bullet, numbered item or short paragraph is one rule.

An item keeps its continuation lines and the items nested under it; a code block joins the
rule it follows when that rule leads into it (ends with ":"), and otherwise stands alone under
its section's heading. Headings, rules (`---`), HTML comments, YAML front matter and forgemem's
own generated section are not rules. The text stays as it was written, less markdown emphasis
(`**`, `__`, `*…*`, `_…_`, `~~`) outside code; each rule knows its lines and its section.
One pass over the lines, no backtracking: a file of any size is read in linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from forgemem.interop import sections

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)\s*$")
_ITEM = re.compile(r"^( *)([-*+]|\d{1,9}[.)])(?:( +)(.*)|$)")
_THEMATIC = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
#: what `claude /init` puts at the top of every CLAUDE.md: about the file, not a rule
_BOILERPLATE = re.compile(r"^this file provides guidance to .{0,80}when working with code in this repository\.?$", re.I)
_CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.S)
_EMPHASIS = (
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),
    (re.compile(r"(?<![\w*\\])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*\\])\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w\\])_(?=[^\s_])([^_\n]+?)(?<=[^\s_\\])_(?!\w)"), r"\1"),
)


@dataclass(frozen=True)
class Rule:
    """One rule found in a file, ready to become a memory."""

    text: str
    file: str  # the provenance key (`reading.file_key`)
    lines: str  # `12` or `12-14`
    start: int  # its first line, for ordering
    section: str = ""  # the heading it sits under
    tags: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # more provenance (globs, an id in another tool)
    scope: str | None = None  # decided by where the file is (a personal file: user), not the classifier
    personal: bool = True  # a user fact must say "I"/"my" (false for third-person exports)
    about_user: bool = False  # a statement about the user with the subject left out ("Prefers tabs")

    def source(self) -> dict[str, Any]:
        value: dict[str, Any] = {"file": self.file}
        if self.lines:
            value["lines"] = self.lines
        if self.section:
            value["section"] = self.section
        value.update(self.extra)
        return value


def strip_emphasis(text: str) -> str:
    """`text` without markdown emphasis markers; code spans and blocks are left as they are."""
    parts = _CODE.split(text)
    for n in range(0, len(parts), 2):
        for pattern, replacement in _EMPHASIS:
            parts[n] = pattern.sub(replacement, parts[n])
    return "".join(parts)


def normalise(text: str) -> str:
    """The form two rules are compared in: no emphasis, no case, blank space folded, no end punctuation."""
    return " ".join(strip_emphasis(text).lower().split()).rstrip(" .;:!")


def front_matter(text: str) -> tuple[dict[str, Any], int]:
    """A leading YAML front matter block (`.mdc`, notes) and how many lines it spans ({} and 0 if none).
    Parsed with forgemem's limits; front matter that is not a mapping, too large or unsafe is skipped."""
    import yaml

    from forgemem.yamlsafe import MAX_FRONT_MATTER_CHARS, unsafe_yaml

    lines = sections.lines_of(text)
    if not lines or lines[0].rstrip("\r\n") != "---":
        return {}, 0
    for n, line in enumerate(lines[1:201], start=1):
        if line.rstrip("\r\n") in ("---", "..."):
            body = "".join(lines[1:n])
            meta: Any = {}
            if len(body) <= MAX_FRONT_MATTER_CHARS and unsafe_yaml(body) is None:
                try:
                    meta = yaml.safe_load(body) or {}
                except yaml.YAMLError:
                    meta = {}
            return (meta if isinstance(meta, dict) else {}), n + 1
    return {}, 0


class _Unit:
    def __init__(self, kind: str, start: int, section: str, indent: int = 0):
        self.kind, self.start, self.section, self.indent = kind, start, section, indent
        self.content = indent + 2  # where an item's text starts (its continuation lines are cut there)
        self.lines: list[str] = []
        self.last = start  # last line that held text
        self.blank = False  # a blank line since the last text (an item may go on after one)


def rules_of(text: str, file: str, name: str | None = None, scope: str | None = None,
             tags: tuple[str, ...] = (), extra: dict[str, Any] | None = None, personal: bool = True) -> list[Rule]:
    """Every rule in a markdown instruction file, in order. `name` is the file as messages show it
    (broken forgemem markers are an error naming it)."""
    text, _ = sections.strip(text, name or file)
    _, skip = front_matter(text)
    found: list[Rule] = []
    section = ""
    unit: _Unit | None = None
    fence: str | None = None
    comment = False

    def flush() -> None:
        nonlocal unit
        if unit is not None and unit.lines:
            body = _text_of(unit)
            if body:
                lines = str(unit.start + 1) if unit.last == unit.start else f"{unit.start + 1}-{unit.last + 1}"
                found.append(Rule(body, file, lines, unit.start, unit.section, tags, dict(extra or {}), scope,
                                  personal))
        unit = None

    for n, raw in enumerate(sections.lines_of(text)):
        line = raw.rstrip("\r\n").replace("\t", "    ")
        if n < skip:
            continue
        if fence is not None:  # inside a code block: it belongs to the unit that holds it
            assert unit is not None
            unit.lines.append(line)
            unit.last = n
            closing = _FENCE.match(line)
            if closing and closing.group(2)[0] == fence[0] and len(closing.group(2)) >= len(fence) \
                    and not line.strip()[len(closing.group(2)):].strip():
                fence = None
            continue
        if comment:
            comment = "-->" not in line
            continue
        stripped = line.strip()
        if not stripped:
            if unit is not None and (unit.kind == "item" or (unit.kind == "para" and _leads_in(unit))):
                unit.blank = True  # an item may go on after a blank line; a lead-in may be followed by its code
            else:
                flush()
            continue
        indent = len(line) - len(line.lstrip(" "))
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(2)
            if unit is not None and ((unit.kind == "item" and indent > unit.indent)
                                     or (unit.lines and _leads_in(unit))):
                if unit.blank:
                    unit.lines.append("")
                unit.blank = False
            else:
                flush()
                unit = _Unit("code", n, section)
                if section:
                    unit.lines += [f"{section}:", ""]
            unit.lines.append(line)
            unit.last = n
            continue
        if stripped.startswith("<!--"):
            flush()
            comment = "-->" not in stripped
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            section = strip_emphasis(heading.group(2) or "").strip()
            continue
        if unit is not None and unit.kind == "para" and len(unit.lines) == 1 and _SETEXT.match(line):
            section = strip_emphasis(unit.lines[0]).strip()  # `Title` underlined by === or ---
            unit = None
            continue
        if _THEMATIC.match(line):
            flush()
            continue
        item = _ITEM.match(line)
        if item and unit is not None and unit.kind == "item" and indent > unit.indent:
            _append(unit, line, n)  # a nested item stays with its parent
            continue
        if item:
            if unit is not None and _is_lead_in(unit):
                section = strip_emphasis(unit.lines[0]).strip().rstrip(":").strip()  # `Tests:` over a list heads it
                unit = None
            flush()
            unit = _Unit("item", n, section, indent)
            unit.lines.append(item.group(4) or "")
            unit.content = indent + len(item.group(2)) + len(item.group(3) or " ")
            continue
        if unit is not None and unit.kind == "item" and (not unit.blank or indent > unit.indent):
            _append(unit, line, n)
            continue
        if unit is not None and unit.kind == "para" and not unit.blank:
            unit.lines.append(line.rstrip())
            unit.last = n
            continue
        flush()
        unit = _Unit("para", n, section)
        unit.lines.append(line.rstrip())
    flush()
    return found


def _append(unit: _Unit, line: str, n: int) -> None:
    if unit.blank:
        unit.lines.append("")
        unit.blank = False
    unit.lines.append(line.rstrip())
    unit.last = n


def _leads_in(unit: _Unit) -> bool:
    last = next((line for line in reversed(unit.lines) if line.strip()), "")
    return last.rstrip().endswith(":")


def _is_lead_in(unit: _Unit) -> bool:
    """A one-line paragraph of a few words ending with ":" (`Tests:`): a heading for the list under it."""
    return unit.kind == "para" and len(unit.lines) == 1 and _leads_in(unit) and len(unit.lines[0]) <= 60


def _text_of(unit: _Unit) -> str:
    lines = unit.lines
    if unit.kind == "item":
        lines = [lines[0].strip()] + [_dedent(line, unit.content) for line in lines[1:]]
    elif unit.kind == "para":
        lines = [line.strip() for line in lines]
    text = strip_emphasis("\n".join(lines)).strip()
    if not re.search(r"\w", text) or _BOILERPLATE.match(" ".join(text.split())):
        return ""
    return text


def _dedent(line: str, width: int) -> str:
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, width):].rstrip()


def cursor_rule(text: str, file: str, name: str | None = None, scope: str | None = None) -> list[Rule]:
    """The rules of a Cursor `.mdc` file: its front matter's `globs` and `alwaysApply` go with each one's
    provenance (the rule applies to those files), its `description` too."""
    meta, _ = front_matter(text)
    extra: dict[str, Any] = {}
    globs = meta.get("globs")
    if isinstance(globs, str) and globs.strip():
        globs = [g.strip() for g in globs.split(",") if g.strip()]
    if isinstance(globs, list) and globs:
        extra["globs"] = [str(g) for g in globs]
    if isinstance(meta.get("description"), str) and meta["description"].strip():
        extra["description"] = meta["description"].strip()
    if isinstance(meta.get("alwaysApply"), bool):
        extra["always_apply"] = meta["alwaysApply"]
    return rules_of(text, file, name, scope=scope, extra=extra)
