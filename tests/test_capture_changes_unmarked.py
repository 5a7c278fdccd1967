"""Changes of mind said the way development set 47's people say them (each case failed on 3f142bb):

- an old choice called legacy in passing, the new one said as where new things go ("airflow is legacy btw, new DAGs
  go to dagster");
- a threshold that "goes down to" a new value ("the coverage gate … goes down to 70%");
- a rule for every place said in German ("… python:3.12-slim bitte überall"): "überall", "partout", "ovunque" say a
  rule holds everywhere as "everywhere" does.

Each writes one memory that supersedes the seed, which is no longer current.
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.learned import generalises

from .test_capture_changes import _conversation, _current
from .test_capture_gates import _store_with

CHANGES = [
    ("Data pipelines are written as Airflow DAGs under dags/ and deployed to the shared Airflow cluster.",
     "architectural-decisions",
     "need a pipeline that pulls the stripe payouts export daily and lands it in raw.stripe.payouts. airflow is "
     "legacy btw, new DAGs go to dagster. project is in orchestration/, copy the pattern from the hubspot assets",
     "dagster"),
    ("Android CI fails if line coverage (Kover) drops below 80%.", "project-conventions",
     "Hi! Relaying from the eng leads sync this morning: the coverage gate for the android app goes down to 70%. The "
     "80 was blocking releases twice this month over basically nothing. Can you update the kover config?", "70%"),
    ("Service Docker images are based on python:3.10-slim.", "project-conventions",
     "Hallo, kurze Sache. Wir sind jetzt auf Python 3.12, also base image python:3.12-slim bitte überall. Der "
     "ingest-service und der exporter sind noch auf 3.10.", "3.12"),
]


@pytest.mark.parametrize("seed, category, said, new", CHANGES, ids=["legacy", "goes-down-to", "ueberall"])
def test_a_change_said_without_the_textbook_words_supersedes(seed, category, said, new, tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, seed, "repo", category)
    written = _conversation(workspace, real_embedder, ("assistant", "ok."), ("user", said))
    changes = [m for m in written if old.id in m.supersedes]
    assert len(changes) == 1 and new in changes[0].body, written
    assert old.id not in _current(workspace, real_embedder)


@pytest.mark.parametrize("sentence", ["base image python:3.12-slim bitte überall", "utilise des f-strings partout",
                                      "usa sempre i type hint ovunque"])
def test_everywhere_in_other_languages_makes_a_rule_general(sentence):
    assert generalises(sentence)
