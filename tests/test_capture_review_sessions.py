"""Capture in the words of Rails and Django teams (read off development set 35; each case failed on cfa9ed3):

- "way too much text man. from now on just the diff + 1 line why" is how the person wants answers (their store), and
  replaces "wants thorough explanation with each change";
- "ruff format only from now on" replaces "python: black, line-length 100" ("black" beside "line-length" is the
  formatter);
- "all new tables are uuid now" replaces "PKs: bigint (rails default)": key types are one kind of thing.
"""

from __future__ import annotations

import pytest

from .test_capture_changes import _conversation, _current, _relation
from .test_capture_gates import _store_with


def test_just_the_diff_and_a_line_of_why_replaces_thorough_explanations(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "wants thorough explanation with each change", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "why does `Account.with_active_trials.count` return a hash"),
                            ("assistant", "Great question! This is one of the more surprising corners of ActiveRecord. "
                                          "When you call `count` on a relation with a `group` …"),
                            ("user", "way too much text man. from now on just the diff + 1 line why. ill ask if i want "
                                     "more. do 3"),
                            ("assistant", "```diff\n- .count\n+ .distinct.count(:id)\n```\nGrouped scopes count per group."))
    (memory,) = written
    assert memory.scope == "user" and memory.supersedes == (old.id,), written
    assert old.id not in _current(workspace, real_embedder)


@pytest.mark.parametrize("old, said", [
    ("python: black, line-length 100", "ruff format only from now on, and same on the other agency repos when we touch "
                                       "them"),
    ("PKs: bigint (rails default)", "id: :uuid on the table and type: :uuid on the customer ref. all new tables are "
                                    "uuid now, the mobile offline sync generates ids client side"),
])
def test_a_new_tool_or_key_type_replaces_the_old(old, said, real_embedder):
    assert _relation(old, said, real_embedder) == ("supersedes", 0)
