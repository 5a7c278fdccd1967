"""Capture in the words of mobile and game developers (read off development sets 32 and 33; each case failed on
50a99c7):

- "no, tuist. Project.swift, then tuist generate": a reaction and a tool name go with the sentence after them, and
  replace the old project generator;
- "swift testing please, @Test and #expect. i'm done with XCTest for anything new. parameterize the cases": what
  goes is read with the sentence beside it likelier a rule, and the person's own preference is replaced;
- "im on an M1 air with 8gb", "im in CET" are the person's setup; "keep it to one destination locally" after the
  first is about the task, not more of the setup;
- "ugh, stop using force unwraps" is a standing correction; "keep that split, thats how this workspace is set up
  on purpose" says the sentence before it is the way here; "house style here is …" is the repository's;
- "exported from aseprite like always", "its gotta be the filter thing" and "write tests for PriceFormatter" are no
  rules;
- "(btw lol)" leaves no empty brackets in the rule; a sentence wrapped onto the next line is one sentence;
- "decision for the project: physics runs in FixedUpdate …" is a decision; "you keep giving me godot 3 code" a
  correction.
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.learned import decide, feature_matrix, generalises, never_durable
from forgemem.capture.classify.rules import rule_text
from forgemem.capture.classify.scope import scope_for
from forgemem.capture.classify.units import units

from .test_capture_changes import _conversation, _current
from .test_capture_gates import _store_with


def test_a_bare_no_and_the_new_tool_go_with_the_sentence_after_them():
    assert units("no, tuist. Project.swift, then tuist generate") == ["no, tuist. Project.swift, then tuist generate"]


def test_the_new_project_generator_named_bare_replaces_the_old(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Xcode project generated with XcodeGen (project.yml); never edit .xcodeproj "
                                           "by hand", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "we need a widget extension target, \"WayfarerWidgets\". ios 17 widgets"),
                            ("assistant", "Plan:\n1. Add a `WayfarerWidgets` app-extension target to `project.yml` and "
                                          "regenerate with `xcodegen generate`."),
                            ("user", "no, tuist. Project.swift, then tuist generate"),
                            ("assistant", "Ah, sorry — I see `Project.swift` now. Added the target there."))
    assert any(old.id in m.supersedes and "tuist" in m.body.lower() for m in written), written
    assert old.id not in _current(workspace, real_embedder)


def test_what_goes_is_read_with_the_sentence_beside_it_likelier_a_rule(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "prefers XCTest", "user", "coding-preferences")
    written = _conversation(workspace, real_embedder,
                            ("user", "write tests for PriceFormatter, especially the JPY (no decimals) and CHF rounding "
                                     "cases"),
                            ("assistant", "```swift\nimport XCTest\nfinal class PriceFormatterTests: XCTestCase { }\n```"),
                            ("user", "swift testing please, @Test and #expect. i'm done with XCTest for anything new, "
                                     "the old suites can stay. parameterize the currency cases with arguments:"),
                            ("assistant", "Rewritten with Swift Testing."))
    (memory,) = written
    assert memory.supersedes == (old.id,) and "swift testing" in memory.body.lower(), written
    assert memory.scope == "user"


def test_the_persons_machine_is_not_joined_with_the_task_after_it(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the tests with fastlane test.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "can you set up the ui tests to run on iphone SE and an ipad in parallel"),
                            ("assistant", "Added both destinations to the test plan."),
                            ("user", "hmm yeah that wont fly locally, im on an M1 air with 8gb, it'll swap itself to "
                                     "death. keep it to one destination locally and do the 3 in CI only."),
                            ("assistant", "Done: one destination locally, three in CI."))
    facts = [m for m in written if "m1" in m.body.lower()]
    assert len(facts) == 1 and facts[0].category == "user-facts" and facts[0].scope == "user", written
    assert "destination" not in facts[0].body


@pytest.mark.parametrize("sentence, durable", [
    ("ugh, stop using force unwraps.", True),
    ("im in CET and i only work on this evenings after my day job", True),
    ("stop using the staging db", False),
])
def test_standing_words_of_the_person(sentence, durable, real_embedder):
    (decision,) = decide(feature_matrix([sentence], real_embedder, [""]), "dense", [sentence])
    assert decision.is_durable is durable, decision


def test_thats_how_it_is_set_up_on_purpose_is_the_way_here():
    assert generalises("packer-core is a library → typed errors with thiserror, the packer binary uses anyhow. keep "
                       "that split, thats how this workspace is set up on purpose.")


def test_house_style_here_is_the_repositorys():
    scope, _ = scope_for("house style here is `_camelCase` for private fields, and no `m_` prefix anywhere",
                         "coding-preferences", 0.6, True, 0.5)
    assert scope == "repo"


@pytest.mark.parametrize("sentence, never", [
    ("exported from aseprite like always.", True),
    ("so its gotta be the filter thing, the new sprite is the first one on a node i made myself.", True),
    ("write tests for PriceFormatter, especially the JPY (no decimals) and CHF rounding cases", True),
    ("we use pnpm like always", False),
    ("we need the migration check on every PR as usual", False),
    ("every service must be a separate module", False),
    ("always write tests for new ViewModels", False),
])
def test_what_was_done_as_usual_a_guess_and_a_task_are_no_rules(sentence, never):
    assert never_durable(sentence) is never


def test_filler_in_brackets_leaves_no_empty_brackets():
    text = rule_text("my setup: ryzen 5600, rx 6700 xt, arch linux (btw lol), so its vulkan on mesa",
                     category="user-facts", scope="user")
    assert "()" not in text and "arch linux" in text
    assert rule_text("log with print() behind #if DEBUG", category="project-conventions", scope="repo").startswith(
        "Log with print() behind")


def test_a_decision_said_as_one_is_a_decision(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the game with cargo run --release.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "physics is jittery on my 144hz monitor. movement is in src/player.rs"),
                            ("assistant", "Option A: move physics to FixedUpdate and interpolate. Option B: clamp dt."),
                            ("user", "ok yeah lets do it properly, A. decision for the project: physics runs in "
                                     "FixedUpdate at 60hz, everything visual interpolates, and no gameplay logic in "
                                     "Update except reading input."),
                            ("assistant", "Done, and noted in ARCHITECTURE.md."))
    (memory,) = written
    assert memory.category == "architectural-decisions" and "FixedUpdate" in memory.body, written


def test_you_keep_giving_me_the_wrong_thing_is_a_correction(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the game with godot --headless.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "write me a simple dialog box for the npcs"),
                            ("assistant", "```gdscript\nfunc _type_line():\n    yield(get_tree().create_timer(0.03), "
                                          "\"timeout\")\n```"),
                            ("user", "bro. you keep giving me godot 3 code, this project is godot 4 — please remember "
                                     "that."),
                            ("assistant", "Sorry — rewritten for Godot 4 with await."))
    assert [m.category for m in written if "godot 4" in m.body.lower()] == ["corrections"], written


@pytest.mark.parametrize("text, expected", [
    # wrapped after a comma, going on in lower case: one sentence
    ("in our playwright tests we use getByRole / getByLabel, data-testid only as last resort,\nnever css classes",
     ["in our playwright tests we use getByRole / getByLabel, data-testid only as last resort, never css classes"]),
    ("use the package root `@acme/ui` for imports and\nnever deep paths into its src",
     ["use the package root `@acme/ui` for imports and never deep paths into its src"]),
    # a line that ends on a word of its own, or a next line that starts a sentence, stays a line
    ("I like my tests fast\nand the suite takes 40 minutes", ["I like my tests fast", "and the suite takes 40 minutes"]),
    ("we deploy on fridays now,\nNever on mondays though", ["we deploy on fridays now,", "Never on mondays though"]),
])
def test_a_sentence_wrapped_onto_the_next_line_is_one_sentence(text, expected):
    assert units(text) == expected


def test_a_wrapped_rule_is_one_memory(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the e2e tests with pnpm exec playwright test.", "repo",
                               "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "writing the e2e for signup, heres what codegen spat out:\n\n```ts\nawait page."
                                     "locator('.btn-primary.mt-4').click();\n```\nthats garbage. in our playwright tests "
                                     "we use getByRole / getByLabel, data-testid only as last resort,\nnever css "
                                     "classes — the tailwind classes change every other week. rewrite it."),
                            ("assistant", "Rewritten with getByRole and getByLabel."))
    (memory,) = written
    assert "getByRole" in memory.body and "css classes" in memory.body, written
