"""Random `kill -9` of real forgemem processes: add, link, observe --once, index --rebuild, serve.

After the kills (each loop has a fixed seed; kills land after random delays, so at different points of
each command): every memory whose id was printed exists and parses, every printed edge is there, no
temporary file is left after the next command, a following command finishes (no stuck lock or claim),
each chain has one head, and `forgemem validate` is clean. 200+ kills across the suite; the last test
prints the one-line summary. `benchmarks/reliability_report.py` runs the same loops at larger counts.
"""

from __future__ import annotations

import pytest

from .killing import Project, Tally

pytestmark = pytest.mark.slow

KILLS = {"add": 80, "link": 70, "observe": 18, "index": 16, "serve": 17}  # 201 in all
TOTAL = Tally()
DONE: set[str] = set()


@pytest.fixture
def project(tmp_path, model_cache):
    return Project(tmp_path / "project", tmp_path / "home", seed=14)


def run_loop(project: Project, name: str) -> Tally:
    getattr(project, f"{name}_loop")(KILLS[name])
    tally = project.check()
    assert tally.kills >= KILLS[name]
    assert tally.failures == [], "\n".join(tally.failures)
    assert (tally.lost, tally.forks, tally.stuck, tally.leftovers) == (0, 0, 0, [])
    assert project.run("validate").returncode == 0
    TOTAL.add(tally)
    DONE.add(name)
    return tally


def test_adds_and_supersedes_killed_at_random(project):
    run_loop(project, "add")
    assert len(project.added) > 0  # some adds finished and printed, and were checked


def test_links_killed_at_random(project):
    run_loop(project, "link")
    assert project.linked  # some links finished and their edges were checked


def test_observe_once_killed_at_random(project):
    run_loop(project, "observe")


def test_index_rebuilds_killed_at_random(project):
    run_loop(project, "index")
    recall = project.run("recall", "--json", "build cache")
    assert recall.returncode == 0 and "Traceback" not in recall.stderr


def test_servers_killed_at_random(project):
    run_loop(project, "serve")


def test_summary(capsys):
    if DONE != set(KILLS):
        pytest.skip("the summary needs every loop of this module")
    assert TOTAL.kills >= 200
    with capsys.disabled():
        print(f"\n{TOTAL.line()}")
