"""20 concurrent writers of every kind (add, add --supersedes, link, forget, feedback) and a running observer
capturing a transcript, all real processes on one real store: no lost update, no fork, validate clean."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from forgemem.store.folder import Store
from forgemem.usage import Usage
from forgemem.workspace import Workspace

from .killing import CATEGORY, FORGEMEM, Project, _exchange

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path, model_cache, monkeypatch):
    project = Project(tmp_path / "project", tmp_path / "home", seed=20)
    monkeypatch.setenv("HOME", project.env["HOME"])
    monkeypatch.setenv("FORGEMEM_USER_DIR", project.env["FORGEMEM_USER_DIR"])
    return project


def add(project: Project, text: str) -> str:
    return project.must("add", text, "-c", CATEGORY).stdout.split("\t")[0]


def test_twenty_writers_of_every_kind_and_an_observer(project):
    base = add(project, "The staging database is reset every night.")
    hub = add(project, "Deploys go through the release train.")
    targets = [add(project, f"Release train rule {n}: tags are signed.") for n in range(4)]
    doomed = [add(project, f"Obsolete rule {n}: use the old CI runner.") for n in range(4)]
    rated = [add(project, f"Rated rule {n}: lint before pushing.") for n in range(4)]
    transcript = project.home / "session.jsonl"
    transcript.write_text(_exchange(0), encoding="utf-8")
    observer = project.start("observe", "--cadence", "1", str(transcript))
    commands = (
        [["add", f"Concurrent new memory {n} about caching wheels.", "-c", CATEGORY] for n in range(4)]
        + [["add", f"The staging database is reset at {n} am.", "--supersedes", base] for n in range(4)]
        + [["link", hub, t, "--rel", "relates-to"] for t in targets]
        + [["forget", m, "--reason", "the runner is gone"] for m in doomed]
        + [["feedback", m, "useful"] for m in rated]
    )
    assert len(commands) == 20
    try:
        procs = [project.start(*c) for c in commands]
        for n in range(1, 4):  # the transcript grows while they write
            with transcript.open("a", encoding="utf-8") as handle:
                handle.write(_exchange(n))
            time.sleep(0.3)
        results = [(c, p.communicate(timeout=300)) for c, p in zip(commands, procs, strict=True)]
        codes = [p.returncode for p in procs]
        # the observer captures the transcript's rules while the writers run (it polls for new lines)
        deadline = time.monotonic() + 120
        while not _captured(project) and time.monotonic() < deadline and observer.poll() is None:
            time.sleep(0.5)
    finally:
        observer.send_signal(signal.SIGTERM)  # a service manager's stop: the running pass finishes
        observer_out, observer_err = observer.communicate(timeout=120)
    assert "Traceback" not in observer_err, observer_err
    for (command, (_out, err)), code in zip(results, codes, strict=True):
        assert "Traceback" not in err, err
        if command[0] == "add" and "--supersedes" in command:
            assert code == 0 or "already superseded" in err, err
        else:
            assert code == 0, (command, err)
    supersedes_ok = [out for (c, (out, _)), code in zip(results, codes, strict=True)
                     if "--supersedes" in c and code == 0]
    assert len(supersedes_ok) == 1  # one new version; the others were refused (no fork)
    new_ids = [out.split("\t")[0] for (c, (out, _)), code in zip(results, codes, strict=True)
               if c[0] == "add" and code == 0]

    snap = Workspace.open(cwd=project.root).load(cache=False)
    assert snap.problems == []
    assert snap.graph.forks() == {}
    for memory_id in new_ids:
        assert memory_id in snap.graph.memories  # every printed add is there
    assert {r.id for r in snap.get(hub).related} == set(targets)  # no edge lost
    for memory_id in doomed:
        (head,) = snap.graph.head_of(memory_id)
        assert snap.get(head).retracted
    feedback = Usage(Store("repo", project.root / ".forge" / "memory")).feedback()
    assert {m: feedback.get(m) for m in rated} == {m: (1, 0) for m in rated}  # no mark lost
    assert _captured(project), f"the observer captured nothing: {observer_err[-2000:]}"
    assert project.run("validate").returncode == 0
    assert project.temp_files() == []


def _captured(project: Project) -> bool:
    """Whether some memory from the transcript ('… linter number N …') is in the store."""
    for path in (project.root / ".forge" / "memory").rglob("*.md"):
        if re.search(r"linter number \d", path.read_text(encoding="utf-8", errors="replace")):
            return True
    return False


def test_observer_state_is_consistent_after_the_writers(project):
    """A second look at the transcript after a concurrent run reads nothing twice and finishes."""
    transcript = project.home / "session.jsonl"
    transcript.write_text("".join(_exchange(n) for n in range(3)), encoding="utf-8")
    procs = [project.start("observe", "--once", "--final", "--json", str(transcript)) for _ in range(3)]
    procs += [project.start("add", f"Writer {n} beside three observers.", "-c", CATEGORY) for n in range(5)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    read = sum(json.loads(out)["turns_read"] for out, _ in outs[:3])
    again = subprocess.run([*FORGEMEM, "observe", "--once", "--json", str(transcript)], cwd=project.root,
                           env=project.env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and json.loads(again.stdout)["turns_read"] == 0
    assert read > 0
    assert project.run("validate").returncode == 0
    assert os.listdir(project.root / ".forge" / "memory")
