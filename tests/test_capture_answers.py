"""How the person wants answers, the team they are on, and a rule's scope said after it: the shapes of stop 31.

- An answer-style rule is the person's, wherever it is said ("drop the explanation section after the code"), and a
  new one replaces the old even said without "i" ("from now on: the command, one line of context max").
- "you don't need to ask before … anymore" turns down the rule that says to ask.
- "i'm on the search team now" replaces the team the store held.
- "same in every repo" and "that's a personal thing" said after a rule give that rule its scope.
- A sentence reporting what is broken, followed by "fix it", is the task at hand.

Each change of mind runs through the real capturer (offline classifier, MiniLM vectors, FAISS neighbours) against a
store holding the memory it is about.
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.learned import never_durable
from forgemem.capture.classify.scope import scope_for
from forgemem.capture.classify.units import units

from .test_capture_changes import _conversation, _current
from .test_capture_gates import _store_with


def test_an_answer_style_said_without_i_replaces_the_old_one_in_the_user_store(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Wants detailed explanations with each answer", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "how do i see which process holds port 5432 on macos"),
                            ("assistant", "There are a few ways to do this. First, some background on sockets: … "
                                          "`lsof -nP -iTCP:5432 -sTCP:LISTEN` lists the listener."),
                            ("user", "too long. i dont need the essay anymore. from now on: the command, one line of "
                                     "context max"),
                            ("assistant", "Got it."))
    replacing = [m for m in written if m.supersedes == (old.id,)]
    assert len(replacing) == 1 and replacing[0].scope == "user", written
    assert "one line" in replacing[0].body
    assert old.id not in _current(workspace, real_embedder)


def test_dropping_the_explanation_after_the_code_is_the_persons_and_replaces_explain_each_change(
        tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "After code, explain each change in a bullet list", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "add a retry with backoff to fetchInvoices in api/client.ts"),
                            ("assistant", "```ts\n// retry loop\n```\n**What changed:**\n- retries 3 times\n- backoff"),
                            ("user", "drop the explanation section after the code from now on, i can read the code "
                                     "myself. code plus one line at most"),
                            ("assistant", "Noted."))
    replacing = [m for m in written if m.supersedes == (old.id,)]
    assert len(replacing) == 1 and (replacing[0].scope, replacing[0].category) == ("user", "user-facts"), written
    assert old.id not in _current(workspace, real_embedder)


def test_no_need_to_ask_anymore_turns_down_the_rule_to_ask(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Ask before multi-file changes", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "split utils.py into dates.py and money.py"),
                            ("assistant", "This touches 9 files. Plan: … OK to proceed?"),
                            ("user", "yes. and you don't need to ask before multi-file edits anymore, just do it and "
                                     "summarise after"),
                            ("assistant", "Done: 9 files changed."))
    assert [m.supersedes for m in written] == [(old.id,)], written
    assert old.id not in _current(workspace, real_embedder)


def test_the_team_the_person_moved_to_replaces_the_one_held(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Backend developer on the checkout team", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "fyi i'm on the search team now since monday (moved from checkout), so expect "
                                     "more elasticsearch questions from me"),
                            ("assistant", "Thanks for the context."))
    replacing = [m for m in written if m.supersedes == (old.id,)]
    assert len(replacing) == 1 and "search" in replacing[0].body, written


def test_same_in_every_repo_said_after_a_rule_makes_it_the_persons(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run make check before pushing.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "rename Order to PurchaseOrder everywhere"),
                            ("assistant", "Renamed in 23 files and deleted models/legacy_order.py."),
                            ("user", "hm ok it's fine this time, but next time: anything that deletes files, ask me "
                                     "first and show me the list. same in every repo, i like to know what goes"),
                            ("assistant", "Understood."))
    assert len(written) == 1 and written[0].scope == "user" and "ask" in written[0].body.lower(), written


def test_a_report_of_what_is_broken_followed_by_fix_it_is_the_task():
    said = units("src/cart.ts: the total never updates when you remove an item. fix it. and from now on keep prices "
                 "in integer cents")
    assert said == ["and from now on keep prices in integer cents"]
    # ... unless the sentence says a rule as well
    assert units("we always round in the view layer, the api sends floats. fix it")[0].startswith("we always")


@pytest.mark.parametrize("sentence, durable", [
    ("and add a test that checks every route has an auth guard", False),
    ("add a check that fails the build whenever someone imports moment", False),
    ("add a test for every new endpoint", True),
])
def test_what_a_test_asked_for_checks_is_not_when_the_work_recurs(sentence, durable):
    assert never_durable(sentence) is not durable


@pytest.mark.parametrize("sentence, scope", [
    ("keep your answers to three lines, code first", "user"),
    ("the command, one line of context max", "user"),
    ("the api answers every error with a problem+json body", "repo"),
    ("PR summaries list every migration", "repo"),
])
def test_how_the_agent_answers_is_the_persons_and_how_a_program_answers_is_the_repos(sentence, scope):
    assert scope_for(sentence, "project-conventions", 0.2, True)[0] == scope


@pytest.mark.parametrize("sentence", [
    "never use git push --force, always --force-with-lease. same in every repo",
    "also always ask me before you make multi-file changes",
])
def test_found_by_a_new_user_trial_personal_rules_are_the_persons(sentence):
    """"same in every repo" is a personal cue; "make multi-file changes" is not a make target."""
    from forgemem.capture.classify.scope import scope_for

    assert scope_for(sentence, "project-conventions", 0.2, True)[0] == "user"


def test_found_by_a_new_user_trial_german_im_is_not_im():
    from forgemem.capture.classify.offline import rule_form

    assert rule_form("ich bin übrigens jetzt im Payments-Team", category="user-facts",
                     scope="user") == "Ich bin übrigens jetzt im Payments-Team."


def test_found_by_a_new_user_trial_the_team_said_in_german_replaces_the_team_held(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "The user is on the search team.", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "ich bin übrigens jetzt im Payments-Team, also eher Stripe-Fragen von mir"),
                            ("assistant", "Verstanden."))
    assert [m.supersedes for m in written] == [(old.id,)], written


def test_found_by_a_new_user_trial_the_persons_team_said_once_is_a_fact(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run make check before pushing.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "fyi i'm on the checkout team, so most of what i touch is the checkout service"),
                            ("assistant", "Good to know."))
    assert [(m.scope, m.category) for m in written] == [("user", "user-facts")], written


def test_found_by_a_new_user_trial_same_in_every_repo_said_in_the_next_turn_moves_the_rule(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run make check before pushing.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "always rebase onto main before opening a PR"),
                            ("assistant", "Ok, I'll rebase before opening PRs."),
                            ("user", "same in every repo, i like a linear history"),
                            ("assistant", "Noted."))
    (memory,) = written
    assert memory.scope == "user" and "rebase" in memory.body and "linear history" in memory.body, written


def test_three_answer_languages_in_one_pass_leave_the_last_one_current(tmp_path, real_embedder):
    """French, then Spanish, then English, in one pass: only English is written, and it replaces the German the store
    held (the Spanish one said no word of change in English, so it was taken for a second rule, and English replaced
    only it: French stayed current beside English)."""
    workspace, old = _store_with(tmp_path, "answers in german", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "réponds-moi en français à partir de maintenant"), ("assistant", "D'accord."),
                            ("user", "no, mejor respóndeme siempre en español, es más fácil"), ("assistant", "Vale."),
                            ("user", "actually just answer in english from now on, the team is international"),
                            ("assistant", "OK."))
    (memory,) = written
    assert "english" in memory.body.lower() and memory.supersedes == (old.id,), written
    assert _current(workspace, real_embedder) == {memory.id}
