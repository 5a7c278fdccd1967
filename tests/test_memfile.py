"""One memory file in and out: the normative format, determinism, atomic writes."""

from __future__ import annotations

import os
import string
from datetime import UTC, datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forgemem.errors import ForgememError
from forgemem.store import memfile
from forgemem.store.model import CATEGORIES, RELATIONSHIPS, SCOPES, TRIGGERS, Memory, Relation, Source

from .conftest import make_memory

DESIGN_EXAMPLE = """\
---
id: mem_0f8e6c1a-4d2b-4d5e-9a77-3b1f0c2d9e41
created_at: 2026-11-21T10:30:00Z
updated_at: 2026-11-21T10:30:00Z
version: 2
scope: repo
category: project-conventions
supersedes: mem_5b2c0000-1111-4222-8333-444455556666
related:
- id: mem_91aa0000-1111-4222-8333-444455556666
  relationship: refines
session_id: 6b1d
trigger: cadence
---
Database migrations live in `db/migrations/` and are applied with `make migrate`;
never edit an applied migration, add a new one.
"""


def test_design_example_parses_and_round_trips_byte_for_byte():
    memory = memfile.parse_text(DESIGN_EXAMPLE)
    assert memory.id == "mem_0f8e6c1a-4d2b-4d5e-9a77-3b1f0c2d9e41"
    assert memory.version == 2
    assert memory.supersedes == ("mem_5b2c0000-1111-4222-8333-444455556666",)
    assert memory.related == (Relation("mem_91aa0000-1111-4222-8333-444455556666", "refines"),)
    assert memory.created_at == datetime(2026, 11, 21, 10, 30, tzinfo=UTC)
    assert memory.body.endswith("add a new one.")
    assert memfile.dumps(memory) == DESIGN_EXAMPLE


def test_unknown_keys_are_kept_in_place_after_the_known_ones():
    text = DESIGN_EXAMPLE.replace(
        "trigger: cadence\n",
        "trigger: cadence\nreviewer: ana\ntags:\n- db\nconfidence: 0.8\nnotes:\n  why: asked twice\n",
    )
    memory = memfile.parse_text(text)
    assert memory.extra == {"tags": ["db"], "confidence": 0.8, "reviewer": "ana", "notes": {"why": "asked twice"}}
    dumped = memfile.dumps(memory)
    # known optional keys move to their fixed place; unknown keys follow, in order
    assert dumped.index("tags:") < dumped.index("confidence:") < dumped.index("reviewer:") < dumped.index("notes:")
    assert memfile.dumps(memfile.parse_text(dumped)) == dumped


def test_merge_writes_supersedes_as_a_list():
    a, b = make_memory().id, make_memory().id
    memory = make_memory(supersedes=(a, b), version=3)
    text = memfile.dumps(memory)
    assert f"supersedes:\n- {a}\n- {b}\n" in text
    assert memfile.parse_text(text).supersedes == (a, b)


def test_timestamps_are_utc_with_z_and_second_precision():
    from datetime import timedelta

    local = datetime(2026, 11, 21, 12, 30, 15, 999, tzinfo=timezone(timedelta(hours=2)))
    memory = make_memory(created_at=local, updated_at=local)
    text = memfile.dumps(memory)
    assert "created_at: 2026-11-21T10:30:15Z\n" in text


def test_crlf_input_is_written_with_lf_and_one_trailing_newline():
    memory = memfile.parse_text(DESIGN_EXAMPLE.replace("\n", "\r\n") + "\r\n\r\n")
    text = memfile.dumps(memory)
    assert "\r" not in text
    assert text.endswith("one.\n") and not text.endswith("\n\n")


def test_empty_body_is_rejected_on_write():
    with pytest.raises(ForgememError, match="body is empty"):
        memfile.dumps(make_memory(body="  \n\n "))


# ------------------------------------------------------------------ property-based round trip

# Text a person could put in a memory: any printable unicode, including '---' lines,
# YAML-looking lines and very long lines. NUL and lone surrogates cannot be stored.
body_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=400,
)
body_lines = st.lists(
    st.one_of(
        body_text,
        st.just("---"),
        st.just("key: value"),
        st.text(alphabet=string.ascii_letters + " ", min_size=2000, max_size=5000),
    ),
    min_size=1,
    max_size=6,
).map("\n".join)
tag = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30
)
ids = st.uuids(version=4).map(lambda u: f"mem_{u}")
stamps = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)



def test_source_is_read_typed_and_the_file_keeps_its_own_bytes():
    # a hand-written source: keys out of the usual order, a number for `lines`, keys this version does not know
    text = DESIGN_EXAMPLE.replace(
        "trigger: cadence\n",
        "trigger: cadence\nsource:\n  quote: run make migrate\n  commit: 3f2a9c1\n  lines: 12\n"
        "  transcript: ~/.claude/projects/p/s-1.jsonl\n  span:\n    from: 1\n    to: 2\n",
    )
    memory = memfile.parse_text(text)
    assert memory.source == Source(
        transcript="~/.claude/projects/p/s-1.jsonl", lines="12", quote="run make migrate",
        other={"commit": "3f2a9c1", "span": {"from": 1, "to": 2}},
    )
    assert list(memory.source.other) == ["commit", "span"]
    assert memory.source.describe() == (
        "~/.claude/projects/p/s-1.jsonl:12 — “run make migrate” · commit: 3f2a9c1 · span: {'from': 1, 'to': 2}"
    )
    assert memfile.dumps(memory) == text  # loading and saving an untouched file changes no byte


def test_a_new_source_is_written_in_its_canonical_form_and_reads_back_the_same():
    source = Source(transcript="notes/s.jsonl", lines="3-5", quote="use ruff", other={"x-tool": "aider"})
    assert source.front_matter() == {"transcript": "notes/s.jsonl", "lines": "3-5", "quote": "use ruff",
                                     "x-tool": "aider"}
    assert list(source.front_matter()) == ["transcript", "lines", "quote", "x-tool"]
    assert Source.parse(source.front_matter()) == source
    memory = make_memory(body="Use ruff.", extra={"source": source.front_matter()})
    text = memfile.dumps(memory)
    assert "source:\n  transcript: notes/s.jsonl\n  lines: 3-5\n  quote: use ruff\n  x-tool: aider\n" in text
    assert memfile.parse_text(text).source == source
    # a plain-string source (a document, a URL) stays a string
    assert Source.parse("docs/adr/0007.md") == Source(text="docs/adr/0007.md")
    assert Source(text="docs/adr/0007.md").front_matter() == "docs/adr/0007.md"
    assert Source(text="docs/adr/0007.md").describe() == "docs/adr/0007.md"
    assert Source.parse(None) is None and Source.parse("") is None and Source.parse({}) is None
    assert make_memory(body="No source.").source is None


@st.composite
def memories(draw):
    body = draw(body_lines)
    extra = {}
    if draw(st.booleans()):
        extra["tags"] = draw(st.lists(tag, max_size=4))
    if draw(st.booleans()):
        extra["confidence"] = draw(st.floats(min_value=0, max_value=1))
    if draw(st.booleans()):
        extra["source"] = draw(body_text)
    if draw(st.booleans()):
        extra["x-" + draw(st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8))] = draw(
            st.one_of(body_text, st.integers(), st.lists(tag, max_size=3))
        )
    return Memory(
        id=draw(ids),
        body=body,
        scope=draw(st.sampled_from(SCOPES)),
        category=draw(st.sampled_from(CATEGORIES)),
        created_at=draw(stamps),
        updated_at=draw(stamps),
        version=draw(st.integers(min_value=1, max_value=10_000)),
        supersedes=tuple(draw(st.lists(ids, max_size=3))),
        related=tuple(
            Relation(i, r)
            for i, r in draw(st.lists(st.tuples(ids, st.sampled_from(RELATIONSHIPS)), max_size=3))
        ),
        session_id=draw(st.one_of(st.none(), body_text)),
        trigger=draw(st.sampled_from(TRIGGERS)),
        extra=extra,
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(memories())
def test_round_trip_is_exact_for_arbitrary_memories(memory):
    from forgemem.store.model import normalize_body

    if not normalize_body(memory.body):
        with pytest.raises(ForgememError):
            memfile.dumps(memory)
        return
    text = memfile.dumps(memory)
    data = text.encode("utf-8")
    loaded = memfile.parse_bytes(data)
    # the record survives ...
    assert loaded.id == memory.id
    assert loaded.body == normalize_body(memory.body)
    assert loaded.supersedes == memory.supersedes
    assert loaded.related == memory.related
    assert loaded.version == memory.version
    assert loaded.session_id == memory.session_id
    assert loaded.extra == {k: memory.extra[k] for k in loaded.extra} and set(loaded.extra) == set(memory.extra)
    # ... and saving the untouched file gives the same bytes
    assert memfile.dumps(loaded).encode("utf-8") == data
    assert text.endswith("\n") and not text.endswith("\n\n") and "\r\n" not in text


@given(st.text(alphabet=" \t\n\r", max_size=20))
def test_whitespace_only_body_is_rejected_when_read(blank):
    text = DESIGN_EXAMPLE.split("---\n", 2)
    with pytest.raises(memfile.MemoryFileError, match="no text after the front matter"):
        memfile.parse_text("---\n" + text[1] + "---\n" + blank)


# ------------------------------------------------------------------ writing


def test_write_new_is_atomic_and_never_replaces_an_existing_file(tmp_path):
    tmp_path = tmp_path / "store"
    memory = make_memory()
    path = tmp_path / "m.md"
    memfile.write_new(memory, path)
    assert path.read_text() == memfile.dumps(memory)
    assert [p.name for p in tmp_path.iterdir()] == ["m.md"]  # no temp file left
    before = path.read_bytes()
    with pytest.raises(ForgememError, match="already exists"):
        memfile.write_new(make_memory(body="other"), path)
    assert path.read_bytes() == before


def test_rewrite_refuses_a_file_it_cannot_parse(tmp_path):
    memory = make_memory()
    path = memfile.write_new(memory, tmp_path / "m.md")
    broken = path.read_text().replace("category: project-conventions", "category: [")
    path.write_text(broken)
    memory.body = "changed"
    with pytest.raises(memfile.MemoryFileError):
        memfile.rewrite(memory)
    assert path.read_text() == broken


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    tmp_path = tmp_path / "store"
    memory = make_memory()
    path = memfile.write_new(memory, tmp_path / "m.md")
    before = path.read_bytes()

    def boom(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    memory.body = "changed"
    with pytest.raises(OSError):
        memfile.rewrite(memory)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.md"]


def test_file_names_are_readable_slugs_with_the_id_prefix():
    memory = make_memory(body="Use `make migrate` — never édit applied migrations!\nmore text")
    name = memfile.file_name(memory)
    assert name == f"use-make-migrate-never-edit-applied-migrations-{memory.id[4:12]}.md"
    assert memfile.file_name(make_memory(body="日本語だけ")).startswith("memory-")
