"""Capture in the words of client work and JVM, mobile and game teams (read off development set 34 and its
neighbours; each case failed on ce628cd):

- "and thats for every repo I work in" makes the one-off before it ("drop the co-authored-by line") a rule of the
  person's, in every repository; "every repo I work in" says where a rule holds, it is no fact about the person;
- "also since I moved to berlin" and "(yes french, even if I type english sometimes)" replace the old place and the
  old answer language: neither "also" nor "sometimes" adds a second value there;
- "RestTemplate is in maintenance mode … use WebClient" turns the old HTTP client down; "use RestClient for outbound
  calls, not WebClient" is a choice of one tool over another, and a rule;
- "that does nothing … you did the exact same thing last week … stop putting @Transactional on private methods" is
  one correction;
- "yes please, always a changelog entry" answers "Should I add an entry … with every change I make?";
- "no no, delete that package-lock" is a step of the task at hand.

Changes of mind run through the real capturer (offline classifier, MiniLM vectors, FAISS neighbours).
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.learned import decide, feature_matrix, names_a_choice, never_durable
from forgemem.capture.classify.scope import about_the_person

from .test_capture_changes import _conversation, _current, _relation
from .test_capture_gates import _store_with


def test_a_one_off_said_to_hold_in_every_repo_is_the_persons_rule(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the tests with make test.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "commit the retry fix with a decent message and push to feature/webhook-retry"),
                            ("assistant", "Committed and pushed:\n\n```\nfix(webhooks): retry on 502/503\n\n"
                                          "Co-Authored-By: Claude <noreply@anthropic.com>\n```"),
                            ("user", "amend that and drop the co-authored-by line. and thats for every repo I work in, "
                                     "not just this client — clients see the history and some of them have clauses "
                                     "about AI tooling in the contract. for this PR squash everything into one commit too"),
                            ("assistant", "Amended without the trailer and squashed."))
    (memory,) = written
    assert "co-authored-by" in memory.body.lower() and memory.scope == "user", written
    assert memory.category in ("corrections", "coding-preferences"), memory.category


@pytest.mark.parametrize("sentence, personal", [
    ("thats for every repo I work in, not just this client", False),
    ("same rule in all my projects", False),
    ("i work in vim", True),
    ("my team owns the billing repo", True),
])
def test_where_a_rule_holds_is_no_fact_about_the_person(sentence, personal):
    assert about_the_person(sentence) is personal


def test_a_move_said_with_also_since_replaces_the_old_place(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "user lives in lisbon (WET)", "user", "user-facts")
    _conversation(workspace, real_embedder,
                  ("user", "the scheduled job in ReportScheduler fires at the wrong hour. ugh, also since I moved to "
                           "berlin last month all my timestamps in the local logs look off by one hour"),
                  ("assistant", "The cron runs in UTC; set zone = \"Europe/Berlin\" on the @Scheduled annotation."))
    assert old.id not in _current(workspace, real_embedder)


def test_a_new_answer_language_said_with_even_if_sometimes_replaces_the_old(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "answers in english", "user", "user-facts")
    written = _conversation(workspace, real_embedder,
                            ("user", "salut. le build maven plante sur surefire. et dorénavant réponds-moi en français "
                                     "stp (yes french, even if I type english sometimes)"),
                            ("assistant", "D'accord. Le fork de surefire manque de mémoire."))
    assert any(old.id in m.supersedes for m in written), written
    assert old.id not in _current(workspace, real_embedder)


def test_a_client_in_maintenance_mode_is_turned_down(real_embedder):
    old = "outbound http: RestTemplate"
    said = "also RestTemplate is in maintenance mode, for new code in this service use WebClient from now on"
    assert _relation(old, said, real_embedder) == ("supersedes", 0)


@pytest.mark.parametrize("sentence", [
    "use RestClient for outbound calls, not WebClient.",
    "use Hilt for DI, not Koin",
    "for outbound calls use RestClient, not WebClient",
])
def test_a_tool_chosen_over_another_for_a_purpose_is_a_rule(sentence, real_embedder):
    assert names_a_choice(sentence)
    (decision,) = decide(feature_matrix([sentence], real_embedder, [""]), "dense", [sentence])
    assert decision.is_durable, decision


@pytest.mark.parametrize("sentence", ["use the staging db for this, not prod", "use RestClient for this one, not WebClient"])
def test_not_a_choice_of_a_way(sentence):
    assert not names_a_choice(sentence)


def test_a_correction_said_over_three_sentences_with_a_complaint_is_one_correction(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the tests with ./gradlew test.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "the refund flow leaves half-written rows when the PSP call throws. make it "
                                     "transactional"),
                            ("assistant", "Wrapped the DB part in a transactional helper:\n\n```kotlin\nfun refund(id: "
                                          "UUID) {\n    val result = psp.refund(id)\n    persistRefund(id, result)\n}\n\n"
                                          "@Transactional\nprivate fun persistRefund(id: UUID, result: PspResult) { ... }"
                                          "\n```\n"),
                            ("user", "that does nothing. @Transactional on a private method (or any self-invocation) "
                                     "bypasses the spring proxy, you did the exact same thing last week in the ledger "
                                     "code. stop putting @Transactional on private methods — put it on a public method "
                                     "of a bean that's called from outside, or use TransactionTemplate"),
                            ("assistant", "You're right. Moved it into a separate RefundPersister bean."))
    (memory,) = written
    assert memory.category == "corrections" and "private method" in memory.body, written


def test_yes_to_an_entry_with_every_change_is_a_rule(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the tests with ./gradlew test.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "nordwind: add a `--dry-run` flag to the ingest CLI"),
                            ("assistant", "Added `--dry-run` to `IngestCommand` (picocli):\n\n```\n$ java -jar "
                                          "nordwind-ingest.jar --dry-run data/2026-11.csv\n12,408 records, 3 invalid\n"
                                          "```\n\nI see this repo has a `CHANGELOG.md` with an `## Unreleased` section "
                                          "that's been kept up to date. Should I add an entry there with every change I "
                                          "make in this repo?\n"),
                            ("user", "yes please, always a changelog entry for nordwind, their PM reads it to check what "
                                     "they're billed for. only them tho, my other clients dont care\n"),
                            ("assistant", "Added an entry under ## Unreleased."))
    (memory,) = written
    assert "changelog" in memory.body.lower() and memory.scope == "repo", written


@pytest.mark.parametrize("sentence", ["no no, delete that package-lock.", "no, revert that file",
                                      "no, rename that variable to userId"])
def test_a_step_of_the_task_after_a_no_is_no_rule(sentence):
    assert never_durable(sentence)


@pytest.mark.parametrize("old, said", [
    ("Xcode project generated with XcodeGen (project.yml); never edit .xcodeproj by hand",
     "no, tuist. Project.swift, then tuist generate"),
    ("web dashboard uses pnpm", "we switched over, lockfile's bun.lockb now"),
    ("iOS deployment target 15", "you can just delete the NavigationView branch, we're iOS 16+ now."),
    ("render pipeline: built-in RP, no SRP", "yeah we talked about it yesterday, we're moving to URP with the 2D renderer."),
    ("Beta builds: TestFlight internal testers only",
     "from now on every beta also goes to the external group in testflight, not just internal"),
])
def test_a_change_said_by_naming_the_new_one_replaces_the_old(old, said, real_embedder):
    assert _relation(old, said, real_embedder) == ("supersedes", 0)
