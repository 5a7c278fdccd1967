"""The bad-file corpus: one folder per validation rule, each with its exact reason.

Every folder in tests/bad_files/ is loaded as a repo store. The test asserts the
exact problems (path, line where YAML gives one, reason), that the good files
beside the broken one still load, and that validating changes no byte.
"""

from __future__ import annotations

import pytest

from forgemem.workspace import Workspace

from .conftest import BAD_FILES, snapshot_bytes

A = "mem_00000000-0000-4000-8000-00000000000a"
B = "mem_00000000-0000-4000-8000-00000000000b"
C = "mem_00000000-0000-4000-8000-00000000000c"
CATS = "coding-preferences, project-conventions, architectural-decisions, user-facts, corrections"
MERGE = ("unfinished git merge (conflict marker '<<<<<<< HEAD'): keep one side of each conflict, or combine them, "
         "and delete the marker lines; or install the merge driver, which merges memory files itself: "
         "`forgemem install git`")

# folder -> ({(file, line, reason)}, number of memories that still load)
EXPECTED: dict[str, tuple[set[tuple[str, int | None, str]], int]] = {
    "bad-yaml": ({("broken.md", 8, "invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence that starts at line 7)")}, 0),
    "no-front-matter": ({("broken.md", 1, "no YAML front matter (the file must start with a '---' line)")}, 0),
    "unclosed-front-matter": ({("broken.md", 1, "the front matter is not closed by a '---' line")}, 0),
    "missing-key": ({("broken.md", None, "missing required key 'category'")}, 0),
    "mistyped-key": ({("broken.md", 5, "'version' must be a whole number from 1 up, not 'two'")}, 0),
    "unknown-category": ({("broken.md", 7, f"unknown category 'misc' (expected one of: {CATS})")}, 0),
    "unknown-relationship": ({("broken.md", 9, "unknown relationship 'blocks' (expected one of: refines, contradicts, relates-to)")}, 1),
    "unknown-scope": ({("broken.md", 6, "unknown scope 'team' (expected one of: repo, user)")}, 0),
    "unknown-trigger": ({("broken.md", 11, "unknown trigger 'cron' (expected one of: cadence, compaction, manual, import)")}, 0),
    "bad-id": ({("broken.md", 2, "id 'mem_1234' is not 'mem_' followed by a UUID")}, 0),
    "bad-timestamp": ({("broken.md", 3, "'created_at' is not an ISO-8601 timestamp: 'last tuesday'")}, 0),
    "empty-body": ({("broken.md", None, "the memory has no text after the front matter")}, 0),
    "not-utf8": ({("broken.md", 13, "not UTF-8 (byte 0xe9 at offset 237)")}, 0),
    "binary": ({("broken.md", None, "binary file (it contains NUL bytes)")}, 0),
    "scope-mismatch": ({("broken.md", None, "scope is 'user' but the file is in the repo store")}, 1),
    "duplicate-id": ({("b-second.md", None, f"duplicate id {A} (also in {{dir}}/a-first.md)")}, 1),
    "dangling-supersedes": ({("broken.md", None, f"supersedes {A}, which does not exist")}, 1),
    "dangling-related": ({("broken.md", None, f"is related (refines) to {B}, which does not exist")}, 1),
    "cycle": (
        {
            ("a.md", None, f"supersession cycle: {A} -> {B} -> {A}"),
            ("b.md", None, f"supersession cycle: {A} -> {B} -> {A}"),
        },
        2,
    ),
    "fork": ({("new-1.md", None, f"fork: {B} and {C} are all newest versions of {A}; write one memory that supersedes them to merge them")}, 3),
    "version-gap": ({("broken.md", None, "version is 3, expected 2 (its predecessor's version + 1)")}, 2),
    "merge-version": ({("merged.md", None, "version is 2, expected 3 (the highest predecessor version + 1)")}, 4),
    "conflict-front-matter": ({("broken.md", 4, MERGE)}, 0),
    "conflict-body": ({("broken.md", 14, MERGE)}, 0),  # never accepted (and recalled) as text
    "conflict-whole-file": ({("broken.md", 1, MERGE)}, 0),  # not "no YAML front matter"
    "first-version": ({("broken.md", None, "version is 2, expected 1 (a memory that supersedes nothing starts at 1)")}, 1),
}


def test_every_corpus_folder_has_an_expectation():
    assert sorted(p.name for p in BAD_FILES.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("rule", sorted(EXPECTED))
def test_each_broken_file_gives_one_exact_reason(rule, tmp_path):
    folder = BAD_FILES / rule
    expected, loaded = EXPECTED[rule]
    before = snapshot_bytes(folder)
    ws = Workspace.open(repo_dir=folder, user_dir=tmp_path / "no-user")
    snap = ws.load(cache=False)
    got = {(p.path.name, p.line, p.reason) for p in snap.problems}
    want = {(f, line, reason.replace("{dir}", str(folder.absolute()))) for f, line, reason in expected}
    assert got == want
    assert len(snap.memories) == loaded
    assert snapshot_bytes(folder) == before


def test_validate_command_exits_1_and_prints_path_line_and_reason(cli, tmp_path):
    folder = BAD_FILES / "unknown-category"
    result = cli("--repo-dir", str(folder), "--user-dir", str(tmp_path / "u"), "validate")
    assert result.code == 1
    assert "broken.md:7: unknown category 'misc'" in result.out
    assert "1 problem(s) found" in result.err


def test_oversized_file_is_reported_and_left_alone(tmp_path, cli):
    store = tmp_path / "store"
    store.mkdir()
    big = store / "big.md"
    big.write_bytes(b"---\nid: x\n---\n" + b"a" * (1024 * 1024))
    size = big.stat().st_size
    result = cli("--repo-dir", str(store), "--user-dir", str(tmp_path / "u"), "validate", "--json")
    assert result.code == 1
    data = result.json()
    assert [p["reason"] for p in data["problems"]] == [f"file is larger than 1 MiB ({size} bytes)"]
    assert big.stat().st_size == size


def test_one_bad_file_never_stops_the_others(tmp_path):
    """Many broken files in one store: each is reported once, the good ones all load."""
    import shutil

    from .conftest import make_memory, write_memory

    store = tmp_path / "store"
    single_file_rules = [r for r, (exp, loaded) in EXPECTED.items() if loaded == 0]
    for rule in single_file_rules:
        store.mkdir(exist_ok=True)
        shutil.copy(BAD_FILES / rule / "broken.md", store / f"{rule}.md")
    good = [write_memory(store, make_memory(body=f"good memory {i}")) for i in range(3)]
    snap = Workspace.open(repo_dir=store, user_dir=tmp_path / "u").load(cache=False)
    assert sorted(p.path.stem for p in snap.problems) == sorted(single_file_rules)
    assert sorted(m.path for m in snap.memories) == sorted(good)


def test_validate_paths_reports_only_the_named_files(cli, tmp_path):
    result = cli(
        "--repo-dir", str(tmp_path / "none"), "--user-dir", str(tmp_path / "u"),
        "validate", str(BAD_FILES / "bad-id" / "broken.md"), str(BAD_FILES / "empty-body"),
    )
    assert result.code == 1
    lines = [line for line in result.out.splitlines() if line.strip()]
    assert len(lines) == 2
    assert "bad-id/broken.md:2: id 'mem_1234'" in lines[0] + lines[1]


def test_sample_store_is_valid(cli):
    from .conftest import SAMPLES

    result = cli(
        "--repo-dir", str(SAMPLES / "repo/.forge/memory"),
        "--user-dir", str(SAMPLES / "user/.forge/memory"),
        "validate",
    )
    assert result.code == 0, result.out
    assert "ok: 52 memory files, no problems" in result.out


def test_a_personal_rule_linked_to_a_repository_memory_validates_outside_that_repository(cli, tmp_path):
    """Found by a new-user trial: capture links a personal rule to the repository's on the same subject
    (relates-to); from outside the repository its target is not loaded, and `validate` failed."""
    from forgemem.store.model import new_id

    from .conftest import make_memory, write_memory

    user_dir = tmp_path / "home" / "memory"
    user_dir.mkdir(parents=True)
    write_memory(user_dir, make_memory("The user prefers pnpm.", scope="user", category="coding-preferences",
                                       related=[(new_id(), "relates-to")]))
    result = cli("--user-dir", str(user_dir), "-C", str(tmp_path), "validate")
    assert result.code == 0, result.out + result.err
