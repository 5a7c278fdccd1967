"""Capture of what a tool is doing right now, and of rules said in German (read off development sets 32-37 at
stop 33; each case failed on 066c6c1):

- a tool at it right now ("pre-commit is rejecting my commit", "guard is not picking up file changes", "every TileMap
  node now screams deprecation warnings"), a thing that happened AGAIN, shouted, a decision put off ("let me ask the
  team first"), an idea for the thing being made ("idea: …") and a failure said in German or Spanish are no rules;
  said with what to do about it, they are;
- "bitte antworte mir immer auf deutsch" is the language the person wants answers in, and "ich will überall
  f-strings …, das ist bei mir grundsätzlich so" their own style: both the person's, in the person's store;
- "our projects" in a rule is the team's projects, not "the project's projects".
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.learned import never_durable
from forgemem.capture.classify.offline import rule_form

from .test_capture_changes import _conversation
from .test_capture_gates import _store_with


@pytest.mark.parametrize("sentence, never", [
    ("Pre-commit is rejecting my commit and I don't see why.", True),
    ("Guard is not picking up file changes; have to restart it every time.", True),
    ("Every TileMap node now screams deprecation warnings at me.", True),
    ("Miras PR has 400 lines of pure whitespace diff AGAIN because her editor does spaces.", True),
    ("hmm let me ask the team first", True),
    ("idea: you have only one bullet and you have to go pick it up after every shot", True),
    ("Hi, im kanzlei-portal schlägt `python manage.py migrate` fehl:", True),
    ("el build falla en CI desde ayer", True),
    ("The linter is rejecting any line over 100 chars, so keep lines under 100 from now on.", False),
    ("you added semicolons AGAIN, we don't use them.", False),
    ("let me think about it, but never use tabs here", False),
    ("dotnet build is spamming NETSDK1138 warnings, net6.0 is out of support; we're standardizing on .NET 8 LTS for "
     "the whole solution", False),
    ("das build geht nicht mit npm, nutze immer pnpm", False),
    ("ich will überall f-strings, kein %-formatting und kein .format(), das ist bei mir grundsätzlich so", False),
])
def test_what_a_tool_is_doing_now_is_no_rule_unless_said_with_what_to_do(sentence, never):
    assert never_durable(sentence) is never


def test_german_answer_language_and_own_style_are_the_persons(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the Django tests with pytest.", "repo", "project-conventions")
    written = _conversation(
        workspace, real_embedder,
        ("user", "Hi, im kanzlei-portal schlägt `python manage.py migrate` fehl"),
        ("assistant", "The migration tries to add a column that already exists; fake just this one: "
                      "`python manage.py migrate mandate 0017 --fake`."),
        ("user", "bitte antworte mir immer auf deutsch, auch wenn ich mal englisch schreibe.\n"
                 "ich will überall f-strings, kein %-formatting und kein .format(), das ist bei mir grundsätzlich so"),
        ("assistant", "Alles klar, ab jetzt auf Deutsch."))
    found = {(m.category, m.scope): m.body for m in written}
    assert len(written) == 2, written
    assert "deutsch" in found[("user-facts", "user")].lower(), written
    assert "f-strings" in found[("coding-preferences", "user")], written


def test_our_projects_is_the_teams_projects():
    text = rule_form("No business logic in signals in our projects.", category="project-conventions", scope="repo")
    assert "the project's projects" not in text and "projects" in text, text
