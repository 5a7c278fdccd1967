"""Property tests of the memory-file round trip, on real files.

- any valid Memory written to a file and read back is the same record;
- loading an untouched file and saving it again gives the same bytes;
- any text given to `add` either is refused with a clear error or gives a file that parses (with that
  text, after redaction), and the store stays valid.
"""

from __future__ import annotations

import dataclasses
import itertools
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from forgemem.errors import ForgememError
from forgemem.store import memfile
from forgemem.store.model import normalize_body
from forgemem.workspace import Workspace, init_forge_dir

from ..test_memfile import memories
from .killing import FORGEMEM

FUZZ = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
                deadline=None)
_names = itertools.count()

any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=600)
tricky_lines = st.sampled_from(["---", "...", "key: value", "<<<<<<< HEAD", "=======", ">>>>>>> other",
                                "- item", "# heading", "```", "id: mem_x", "\ufeff", "\r", "\t", "  ", "'", '"',
                                "!!python/object:os.system", "&anchor", "*alias", "|", ">", "%YAML 1.2"])
add_texts = st.one_of(any_text, st.lists(st.one_of(any_text, tricky_lines), max_size=12).map("\n".join))


def _whole_seconds(memory):  # what the format stores (and utc_now gives): timestamps to the second
    return dataclasses.replace(memory, created_at=memory.created_at.replace(microsecond=0),
                               updated_at=memory.updated_at.replace(microsecond=0))


valid_memories = memories().map(_whole_seconds)


def fields(memory) -> dict:
    return {k: v for k, v in dataclasses.asdict(memory).items() if k != "path"}


@FUZZ
@given(valid_memories)
def test_a_memory_written_then_read_is_the_same_record(tmp_path, memory):
    assume(normalize_body(memory.body))
    path = tmp_path / f"{next(_names)}.md"
    memfile.write_new(memory, path)
    loaded = memfile.read_file(path)
    assert fields(loaded) == fields(dataclasses.replace(memory, body=normalize_body(memory.body)))


@FUZZ
@given(valid_memories)
def test_an_untouched_file_saved_again_has_the_same_bytes(tmp_path, memory):
    assume(normalize_body(memory.body))
    path = tmp_path / f"{next(_names)}.md"
    memfile.write_new(memory, path)
    before = path.read_bytes()
    loaded = memfile.read_file(path)
    memfile.rewrite(loaded)
    assert path.read_bytes() == before
    assert memfile.dumps(memfile.parse_bytes(before)).encode("utf-8") == before


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-store")
    init_forge_dir(root / ".forge")
    return root / ".forge" / "memory"


@FUZZ
@given(text=add_texts, tags=st.lists(st.text(max_size=20), max_size=3))
def test_any_text_through_add_gives_a_file_that_parses(store, text, tags):
    workspace = Workspace.open(repo_dir=store)
    try:
        memory, _redacted = workspace.add(text, scope="repo", category="project-conventions", tags=tags)
    except ForgememError as exc:  # refused: with a message, and nothing written
        assert str(exc).strip()
        return
    assert memory.path is not None and memory.path.is_file()
    loaded = memfile.read_file(memory.path)  # raises if the file does not parse
    assert loaded.id == memory.id and loaded.body == memory.body
    assert memory.body.strip() and memory.body == normalize_body(memory.body)


def test_tricky_texts_through_the_real_cli_parse_and_validate(git_repo):
    assert subprocess.run([*FORGEMEM, "init"], cwd=git_repo, capture_output=True).returncode == 0
    texts = ["---\nid: mem_fake\n---\nnot front matter", "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> b",
             "!!python/object/apply:os.system ['echo pwned']", "\ufeffBOM first", "a\r\nb\rc", "x" * 5000,
             "tab\tand \x0b vertical", "emoji 🧪 and RTL \u202e text", "...\n---\n..."]
    for text in texts:
        done = subprocess.run([*FORGEMEM, "add", "-", "-c", "project-conventions"], cwd=git_repo, input=text,
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr
        if done.returncode == 0:
            path = done.stdout.strip().split("\t")[1]
            memfile.read_file(Path(path))
        else:
            assert done.stderr.strip()
    validate = subprocess.run([*FORGEMEM, "validate"], cwd=git_repo, capture_output=True, text=True, timeout=120)
    assert validate.returncode == 0, validate.stdout + validate.stderr
