"""Rules out of other memory tools' exports: basic-memory notes, mem0's `get_all`, the MCP memory server's graph.

- **basic-memory**: markdown notes (a file, or a project folder of them) with front matter
  (`title`, `tags`, `type`, `permalink`), observations `- [category] text #tag (context)` and
  relations `- relation_type [[Other note]]`. An observation is a rule (its category and `#tags`
  become tags); a relation is written as `Note relation type Other note`; other prose is read as
  any markdown is.
- **mem0-json**: what `Memory.get_all()` returns, `{"results": [{"id", "memory", "hash", "metadata",
  "created_at", "updated_at", "user_id", …}]}` (or the bare list older versions and the platform
  API return); each `memory` is a rule, its mem0 `id` kept in provenance, `categories` as tags.
- **mcp-memory-json**: the reference MCP memory server's file (`memory.jsonl`, formerly
  `memory.json`): one JSON object a line, `{"type": "entity", "name", "entityType", "observations"}`
  or `{"type": "relation", "from", "to", "relationType"}`; `read_graph`'s single
  `{"entities": [...], "relations": [...]}` object is read too. Each observation is a rule about its
  entity (`Name: observation`), each relation one sentence.

These tools keep one memory for a person across every project, so what they hold goes to the
user store (`forgemem import --scope repo` says otherwise); the classifier decides the category.
mem0's memories and the MCP server's observations of the user leave the subject out ("Is
vegetarian", "Prefers tabs"): they are classified as the person would say them ("I am …").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from forgemem.interop.markdown import Rule, front_matter, rules_of
from forgemem.interop.reading import MAX_EXPORT_BYTES, InputError, file_key, markdown_files, read_text, shown

FORMATS = ("basic-memory", "mem0-json", "mcp-memory-json")
_OBSERVATION = re.compile(r"^\[([^\]\n]{1,60})\]\s+(.+)$", re.S)
_RELATION = re.compile(r"^([A-Za-z][\w -]{0,60}?)\s+\[\[([^\]\n]+)\]\](?:\s+\((.*)\))?$")
_HASHTAG = re.compile(r"(?<![\w#&])#([A-Za-z][\w/-]*)")
#: entity names the MCP server's suggested prompt uses for the person themself
_SELF = {"default_user", "user", "me", "the user"}


def read(fmt: str, path: Path, root: Path | None) -> dict[Path, list[Rule]]:
    """The rules in an export of `fmt`, by the file they were read from."""
    if fmt == "basic-memory":
        files = markdown_files(path) if path.is_dir() else [path]
        if not files:
            raise InputError(f"{shown(path)} holds no basic-memory notes (*.md); nothing was imported")
        return {f: basic_memory(read_text(f), file_key(f, root), shown(f)) for f in files}
    text = read_text(path, MAX_EXPORT_BYTES, what="an export")
    key = file_key(path, root)
    if fmt == "mem0-json":
        return {path: mem0(text, key, shown(path))}
    return {path: mcp_memory(text, key, shown(path))}


def basic_memory(text: str, key: str, name: str) -> list[Rule]:
    meta, _ = front_matter(text)
    title = str(meta.get("title") or Path(key).stem)
    note_tags = meta.get("tags") or []
    if isinstance(note_tags, str):
        note_tags = [t.strip() for t in note_tags.split(",")]
    base = tuple(str(t) for t in note_tags if str(t).strip()) if isinstance(note_tags, list) else ()
    found = []
    for rule in rules_of(text, key, name, scope="user", personal=False):
        observation = _OBSERVATION.match(rule.text)
        relation = _RELATION.match(rule.text)
        if observation:
            body = observation.group(2)
            tags = base + (observation.group(1).strip(),) + tuple(_HASHTAG.findall(body))
            body = " ".join(_HASHTAG.sub("", body).split()) if "\n" not in body else body
            rule = _with(rule, text=body, tags=tags)
        elif relation:
            sentence = f"{title} {relation.group(1).replace('_', ' ')} {relation.group(2)}"
            if relation.group(3):
                sentence += f" ({relation.group(3)})"
            rule = _with(rule, text=sentence, tags=base)
        else:
            rule = _with(rule, tags=base)
        found.append(_with(rule, extra={"note": title}))
    return found


def mem0(text: str, key: str, name: str) -> list[Rule]:
    data = _json(text, name)
    items = data.get("results") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InputError(f"{name} is not a mem0 export (expected a list of memories or "
                         "{\"results\": [...]} as Memory.get_all() returns); nothing was imported")
    found = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("memory"), str):
            raise InputError(f"{name}: memory {n + 1} has no \"memory\" text; nothing was imported")
        if not item["memory"].strip():
            continue
        categories = item.get("categories")
        tags = tuple(str(c) for c in categories) if isinstance(categories, list) else ()
        extra = {"id": str(item["id"])} if item.get("id") is not None else {}
        found.append(Rule(item["memory"].strip(), key, "", n, tags=tags, extra=extra, scope="user", personal=False,
                          about_user=True))
    return found


def mcp_memory(text: str, key: str, name: str) -> list[Rule]:
    records: list[tuple[int, Any]] = []
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped and _is_json(stripped):
        whole = json.loads(stripped)
    elif stripped.startswith("["):
        whole = _json(stripped, name)
    else:
        whole = None
    if isinstance(whole, dict) and ("entities" in whole or "relations" in whole):
        records = [(0, {"type": "entity", **e}) if isinstance(e, dict) else (0, e) for e in whole.get("entities") or []]
        records += [(0, {"type": "relation", **r}) if isinstance(r, dict) else (0, r)
                    for r in whole.get("relations") or []]
    elif isinstance(whole, list):
        records = [(0, item) for item in whole]
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    records.append((n, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{name}:{n} is not JSON ({exc.msg}); nothing was imported") from None
    found: list[Rule] = []
    for n, record in records:
        where = f"{name}:{n}" if n else name
        if not isinstance(record, dict):
            raise InputError(f"{where}: expected an entity or a relation object; nothing was imported")
        lines = str(n) if n else ""
        if record.get("type") == "entity" or "observations" in record:
            entity, kind = str(record.get("name", "")), str(record.get("entityType", "") or "")
            observations = record.get("observations") or []
            if not entity or not isinstance(observations, list):
                raise InputError(f"{where}: an entity needs a name and a list of observations; nothing was imported")
            for observation in observations:
                said = str(observation).strip()
                if said:
                    me = entity.strip().lower() in _SELF
                    found.append(Rule(said if me else f"{entity}: {said}", key, lines, len(found),
                                      tags=(kind,) if kind else (), extra={"entity": entity}, scope="user",
                                      personal=False, about_user=me))
        elif record.get("type") == "relation" or "relationType" in record:
            source, target, relation = (str(record.get(k, "")) for k in ("from", "to", "relationType"))
            if not (source and target and relation):
                raise InputError(f"{where}: a relation needs from, to and relationType; nothing was imported")
            found.append(Rule(f"{source} {relation.replace('_', ' ')} {target}", key, lines, len(found),
                              extra={"entity": source}, scope="user", personal=False))
    return found


def _with(rule: Rule, **changes: Any) -> Rule:
    from dataclasses import replace

    if "extra" in changes:
        changes["extra"] = {**rule.extra, **changes["extra"]}
    return replace(rule, **changes)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _json(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} is not valid JSON (line {exc.lineno}: {exc.msg}); nothing was imported") from None
