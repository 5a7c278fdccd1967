"""Capture in the words of research computing and data engineering (read off development set 36; each case failed
on baf3130):

- the person's role is one value at a time: "i'm now a research software engineer" replaces "PhD student"; a role
  said of this one piece of work ("i'm the lead on this one") or denied is none;
- "account is geo233 now, geo207 is closed": a name said to be closed goes, and the rule naming it is replaced;
- "ok scrap yaml — jsonnet instead. … that's the format from now on": what goes, what comes and the sentence saying it
  is the format are one change, and it replaces the rule written earlier in the pass.
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.relate_person import _roles

from .test_capture_changes import _conversation, _current
from .test_capture_gates import _store_with


@pytest.mark.parametrize("text, said, roles", [
    ("PhD student, climate modelling; explain software engineering basics", False, {"phd student"}),
    ("i defended, i'm now a research software engineer in the HPC group", True, {"research software engineer"}),
    ("as a data scientist i prefer polars", True, {"data scientist"}),
    ("i'm the lead on this one", True, set()),
    ("i'm not a designer", True, set()),
    ("the new intern wrote this", True, set()),
])
def test_the_persons_role(text, said, roles):
    assert _roles(text, said_as_theirs=said) == roles


def test_a_new_role_replaces_the_old(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "PhD student, climate modelling; explain software engineering basics", "user",
                                 "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "can you set up CI for the ICON-lite fork? build with cmake + nvfortran"),
                            ("assistant", "Added .gitlab-ci.yml with a build and three smoke cases."),
                            ("user", "update your picture of me: i defended, i'm now a research software engineer in "
                                     "the institute's HPC group, so you can skip the basics"),
                            ("assistant", "Congratulations! Noted."))
    assert any(old.id in m.supersedes for m in written), written
    assert old.id not in _current(workspace, real_embedder)


def test_a_name_said_to_be_closed_goes(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Charge every job to the account geo207.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "new allocation period started jan 1. account is geo233 now, geo207 is closed. "
                                     "update the sbatch files"),
                            ("assistant", "Updated the four sbatch files to --account=geo233."))
    assert any(old.id in m.supersedes and "geo233" in m.body for m in written), written
    assert old.id not in _current(workspace, real_embedder)


def test_scrap_one_format_for_another_in_one_pass(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "kafka connect connector configs = JSON files in connectors/", "repo",
                                 "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "the json files are unreadable. new plan: connector configs stay in connectors/ but "
                                     "as YAML, and scripts/render_connectors.py turns them into json at deploy time"),
                            ("assistant", "Converted pg-orders-sink to YAML and added the render script."),
                            ("user", "hm, that's exactly what I don't want. ok scrap yaml — jsonnet instead. "
                                     "connectors/lib/sink.libsonnet with the shared transforms chain, one .jsonnet per "
                                     "connector, rendered with jsonnet at deploy. that's the format from now on"),
                            ("assistant", "Switched to jsonnet."))
    (memory,) = written
    assert "jsonnet" in memory.body and memory.supersedes == (old.id,), written
