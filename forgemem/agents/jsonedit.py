"""Edit a JSON settings file in place: add or remove one member or element, leave every other byte.

Agents' settings files are the user's: their key order, indentation, spacing and
everything forgemem did not add stay as they were. `locate` maps the text to the
spans of its values (the text must be valid JSON: callers check with `json.loads`
first); `remove` cuts one member or element together with its separating comma,
and `append` adds one after the last, in the style of its neighbours. An append
followed by a remove of the same item gives back the very same bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_BLANK = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|NaN|-?Infinity")


def _skip(text: str, pos: int) -> int:
    """The position after the blank space at `pos`."""
    blank = _BLANK.match(text, pos)
    return blank.end() if blank else pos


def _match(pattern: re.Pattern[str], text: str, pos: int) -> re.Match[str]:
    found = pattern.match(text, pos)
    if found is None:
        raise ValueError(f"not valid JSON at offset {pos}")
    return found


@dataclass
class Span:
    """One JSON value: where it starts and ends; its members (objects) or elements (arrays)."""

    start: int
    end: int
    kind: str  # object | array | scalar
    keys: list[str] = field(default_factory=list)  # objects: member names, in order
    key_starts: list[int] = field(default_factory=list)  # objects: where each member's name starts
    children: list[Span] = field(default_factory=list)

    def child(self, step: str | int) -> tuple[int, Span]:
        """(position, span) of a member by name (the last of duplicates, as json.loads) or an element."""
        if self.kind == "object" and isinstance(step, str):
            n = len(self.keys) - 1 - self.keys[::-1].index(step)
            return n, self.children[n]
        if self.kind == "array" and isinstance(step, int):
            return step, self.children[step]
        raise KeyError(step)

    def item_start(self, n: int) -> int:
        return self.key_starts[n] if self.kind == "object" else self.children[n].start


def _value(text: str, pos: int) -> Span:
    pos = _skip(text, pos)
    ch = text[pos]
    if ch == "{" or ch == "[":
        span = Span(pos, pos, "object" if ch == "{" else "array")
        pos = _skip(text, pos + 1)
        close = "}" if ch == "{" else "]"
        while text[pos] != close:
            if span.kind == "object":
                key = _match(_STRING, text, pos)
                span.keys.append(json.loads(key.group()))
                span.key_starts.append(pos)
                pos = _skip(text, key.end()) + 1  # past ':'
            child = _value(text, pos)
            span.children.append(child)
            pos = _skip(text, child.end)
            if text[pos] == ",":
                pos = _skip(text, pos + 1)
        span.end = pos + 1
        return span
    match = _match(_STRING if ch == '"' else _SCALAR, text, pos)
    return Span(pos, match.end(), "scalar")


def locate(text: str, path: list[str | int]) -> Span:
    """The span of the value at `path` (object keys and array indexes from the top)."""
    span = _value(text, 0)
    for step in path:
        span = span.child(step)[1]
    return span


def remove(text: str, path: list[str | int]) -> str:
    """The text without the member or element at `path` (and the comma that separated it)."""
    container = locate(text, path[:-1])
    n, item = container.child(path[-1])
    count = len(container.children)
    if count == 1:
        return text[:container.start + 1] + text[container.end - 1:]  # `{…}` -> `{}`
    if n > 0:
        return text[:container.children[n - 1].end] + text[item.end:]
    return text[:container.item_start(0)] + text[container.item_start(1):]


def _indent_unit(text: str) -> str:
    widths = [m.group(1) for m in re.finditer(r"\n([ \t]+)\S", text)]
    if not widths:
        return "  "
    return min(widths, key=len) if widths[0].startswith(" ") else "\t"


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    return text[start:_skip(text, start)].strip("\r\n")


def append(text: str, path: list[str | int], value: object, key: str | None = None) -> str:
    """The text with `value` added as the last element of the array at `path` (or, with `key`,
    as the last member of the object there), laid out like the items around it."""
    container = locate(text, path)
    if (key is None) != (container.kind == "array"):
        raise ValueError("append: a key goes with an object, none with an array")
    ascii_only = "\\u" in text and not any(ord(c) > 127 for c in text)
    if container.children:
        last = len(container.children) - 1
        if last:  # the blank between the last two items
            between = text[container.children[last - 1].end:container.item_start(last)]
            separator = between[between.index(",") + 1:]
        else:  # one item: the blank before it, or one space when it sits right after the bracket
            separator = text[container.start + 1:container.item_start(0)] or " "
        inside = separator.rsplit("\n", 1)[-1] if "\n" in separator else None
        insert_at, closing = container.children[last].end, ""
    else:
        inside = _line_indent(text, container.start) + _indent_unit(text)
        separator = "\n" + inside
        insert_at = container.start + 1
        closing = "\n" + _line_indent(text, container.start)
    if inside is None:  # the items sit on one line: so does the new one
        rendered = json.dumps(value, ensure_ascii=ascii_only)
    else:
        rendered = json.dumps(value, indent=_indent_unit(text), ensure_ascii=ascii_only).replace("\n", "\n" + inside)
    if key is not None:
        rendered = json.dumps(key, ensure_ascii=ascii_only) + ": " + rendered
    lead = "," if container.children else ""
    if not container.children:
        tail = text[insert_at:]
        tail = tail[_skip(tail, 0):]  # `[ ]`: the blank inside goes
        return text[:insert_at] + separator + rendered + closing + tail
    return text[:insert_at] + lead + separator + rendered + closing + text[insert_at:]
