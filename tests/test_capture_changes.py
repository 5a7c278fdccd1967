"""Changes of mind in the words people type: "ok poetry is dead to me", "forget the 80 col thing, 120 is
fine", "can we just use node:test" … "yes convert, drop vitest"; and the one-off talk around them that is
no memory ("give me the commands …", "migrate is dying", "hi, new repo for me").

Each is run through the real capturer (offline classifier, MiniLM vectors, FAISS neighbours) against a
store holding the memory the person changes their mind about.
"""

from __future__ import annotations

import pytest

from forgemem.capture.capturer import Capturer
from forgemem.capture.classify import Batch
from forgemem.capture.classify.change_words import asked_to_use
from forgemem.capture.classify.learned import never_durable
from forgemem.capture.classify.scope import scope_for
from forgemem.capture.classify.units import units
from forgemem.capture.transcripts import Turn
from forgemem.recall.engine import RecallEngine

from .test_capture_gates import _store_with, assert_one_chain


def _conversation(workspace, embedder, *said: tuple[str, str]) -> list:
    """Run one pass over (role, text) turns; the memories it wrote."""
    turns = [Turn("g", n, role, text, None, "g", n + 1, n + 1, 0, 0) for n, (role, text) in enumerate(said)]
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=embedder))
    return capturer.run(Batch(turns, "cadence", "g", "g")).written


def _relation(old: str, said: str, embedder, category: str = "project-conventions") -> tuple:
    """(relation, index) of what the person said to one repo memory, at the two texts' real cosine."""
    from forgemem.capture.classify.relate import Candidate, relate

    vectors = embedder.encode([old, said])
    candidate = Candidate(old, category, "repo", float(vectors[0] @ vectors[1]))
    return relate(said, said, category, "repo", [candidate])[:2]


def _current(workspace, embedder) -> set[str]:
    engine = RecallEngine(workspace, embedder=embedder)
    return {m.id for m in engine.snapshot.graph.heads()}


def test_ok_then_a_change_is_not_a_bare_yes_and_the_task_after_it_stays_out(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "The user prefers poetry for Python dependency management.", "user",
                                 "coding-preferences")
    written = _conversation(workspace, real_embedder,
                            ("user", "poetry lock is taking 6 minutes again"),
                            ("assistant", "`poetry lock` is stuck in resolution on the boto3/botocore triangle."),
                            ("user", "ok poetry is dead to me. uv for everything from now on, convert this pyproject "
                                     "and delete poetry.lock"),
                            ("assistant", "Converted to uv; `uv lock` resolved 84 packages."))
    (memory,) = written
    assert memory.supersedes == (old.id,) and memory.scope == "user" and "uv" in memory.body
    assert "pyproject" not in memory.body and "poetry.lock" not in memory.body
    assert old.id not in _current(workspace, real_embedder)


def test_a_new_number_said_as_a_change_replaces_the_old_one_across_two_passes(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "The user wants lines kept to 80 columns (rustfmt max_width = 80).", "user",
                                 "coding-preferences")
    first = _conversation(workspace, real_embedder,
                          ("user", "rustfmt is mangling the match arms into this unreadable staircase"),
                          ("assistant", "That's `max_width = 80` in rustfmt.toml."),
                          ("user", "forget the 80 col thing, 120 is fine. set max_width 120 and reformat"),
                          ("assistant", "rustfmt.toml: `max_width = 120`, reformatted 14 files."))
    assert [m.supersedes for m in first] == [(old.id,)] and "120" in first[0].body
    second = _conversation(workspace, real_embedder,
                           ("user", "also 120 was too wide, i cant fit two panes on the laptop. lets do 100 as the max "
                                    "width, thats the final answer"),
                           ("assistant", "rustfmt.toml: `max_width = 100`."))
    assert [m.supersedes for m in second] == [(first[0].id,)] and "100" in second[0].body
    assert _current(workspace, real_embedder) & {old.id, first[0].id} == set()


def test_their_own_question_said_yes_to_after_the_agent_weighed_it_is_their_change(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Use vitest for the TypeScript tests.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "so we're publishing this as a zero dependency lib now. can we just use node:test"),
                            ("assistant", "Node 20 ships `node:test` with describe/it and mock.fn(); 4 files use "
                                          "snapshots and would become assert.deepStrictEqual. Convert?"),
                            ("user", "yes convert, drop vitest"),
                            ("assistant", "Converted; 388 tests pass under `node --test`."))
    replacing = [m for m in written if m.supersedes == (old.id,)]
    assert len(replacing) == 1 and "node:test" in replacing[0].body, written
    assert old.id not in _current(workspace, real_embedder)


@pytest.mark.parametrize("seed, turns", [
    # a yes to a one-off step after a question replaces nothing
    ("Use vitest for the TypeScript tests.", [("user", "can we rerun the flaky job?"),
                                              ("assistant", "The e2e job failed on a timeout; rerun it?"),
                                              ("user", "yes"), ("assistant", "Rerun started.")]),
    # a rule said "like always", close to one the store holds, is not written again
    ("pnpm only", [("user", "add zod to the web package"),
                   ("assistant", "Which package manager should I use here, npm or pnpm?"),
                   ("user", "pnpm, like always"), ("assistant", "`pnpm add zod --filter web` done.")]),
    # ... or "I've told you this before", and the task said with it is no part of it
    ("no emojis in commit msgs or PR titles", [
        ("user", "fix the token refresh race in auth/session.ts"),
        ("assistant", "Fixed with a BroadcastChannel lock; committed as \"🐛 Fix token refresh race\"."),
        ("user", "code's good. but again, no emojis in commits or PR titles, I've told you this before. amend it and "
                 "the PR title is just \"Fix token refresh race between tabs\""),
        ("assistant", "Amended.")]),
], ids=["yes-to-a-one-off", "like-always", "told-you-before"])
def test_nothing_is_written_and_the_rule_stays_current(tmp_path, real_embedder, seed, turns):
    workspace, old = _store_with(tmp_path, seed, "repo", "project-conventions")
    assert _conversation(workspace, real_embedder, *turns) == []
    assert old.id in _current(workspace, real_embedder)


@pytest.mark.parametrize("sentence, statement", [
    ("can we just use node:test", "use node:test"),
    ("should we switch to ruff?", "switch to ruff"),
    ("why not just use zod", "use zod"),
    ("can we rerun the job?", ""),
    ("can you use node:test", ""),
])
def test_what_their_question_proposes(sentence, statement):
    assert asked_to_use(sentence) == statement


@pytest.mark.parametrize("sentence", [
    "give me the commands to set the env vars for running the integration suite locally",
    "python manage.py migrate is dying",
    "the staging deploy is stuck again",
    "hi, new repo for me.",
    # a step of the work at hand, pointing at its thing
    "run prettier over src/ so we don't get a giant diff later",
    "delete src/queue entirely while you're at it, and the bullmq dep",
    "yes, and drop pytest-xdist from the dev deps",
    "add me as codeowner for cmd/, github handle is mkowalski",
    # asked, reported, vented, bounded to this PR or to a week away
    "also do we always need to bump the crate version for a docs-only change?",
    "ok. lena said in standup we should ban default exports across the whole codebase.",
    "marco keeps saying we should always use constructor injection instead of @Autowired fields.",
    "jest watch mode is garbage, it reran everything twice.",
    "no toques el archivo de traducciones es.json en este PR, lo está regenerando el equipo de contenido",
    "faut que ça soit mergé avant vendredi, je suis en congé toute la semaine prochaine",
    "yep. go ahead with orders, the rest i'll do in follow-ups",
    "those pass for me locally.",
    "no need to do anything, just asking",
])
def test_one_off_talk_is_never_a_memory(sentence):
    assert never_durable(sentence)


@pytest.mark.parametrize("sentence", [
    "always give me the full diff",
    "when you explain, give me the reasoning first",
    "we're migrating to postgres, the sqlite file is dying under load",
    # a step said with when it recurs
    "run `make check` before you push",
    "update the CHANGELOG.md for every user-facing change",
    "and run go test ./... -race before you tell me something is done",
    "move us to vitest. whole repo",
    "lena said we should use pnpm and i agree, so from now on pnpm",
    "jest is garbage, use vitest from now on",
    "%w not %v, otherwise errors.Is is useless upstream.",
    "but again, no emojis in commits or PR titles, I've told you this before.",
])
def test_standing_requests_and_changes_still_can_be(sentence):
    assert not never_durable(sentence)


def test_a_rule_that_ends_on_its_standing_words_is_cut_from_the_task_after_it():
    assert units("uv for everything from now on, convert this pyproject and delete poetry.lock") == [
        "uv for everything from now on", "convert this pyproject and delete poetry.lock"]
    assert units("from now on, use uv") == ["from now on, use uv"]


def test_make_me_is_not_a_make_target_and_everything_i_write_is_personal():
    scope, why = scope_for("in everything i write i want full type hints, dont make me ask every time",
                           "coding-preferences", 0.5, True)
    assert scope == "user", why
    assert scope_for("run make lint before you push", "project-conventions", 0.9, True)[0] == "repo"


def test_facts_listed_in_one_sentence_are_one_each_and_one_said_twice_is_one():
    assert units("quick context so you stop guessing: im on macos (m2), i use neovim not vscode, and im in berlin "
                 "time.") == ["im on macos (m2)", "i use neovim not vscode", "im in berlin time."]
    assert units("i use fish, my shell is fish everywhere") == ["i use fish, my shell is fish everywhere"]


@pytest.mark.parametrize("sentence", [
    "keep doing the java comparisons when something rust specific comes up",
    "im in berlin time",
])
def test_plain_standing_statements_clear_the_lower_bar(sentence):
    from forgemem.capture.classify.learned import _SETUP_SAID, _STANDING_RULE

    assert _STANDING_RULE.search(sentence) or _SETUP_SAID.search(sentence)


def test_a_complaint_about_what_the_agent_did_and_the_rule_after_it_are_one_memory(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Use cargo nextest to run the tests.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("assistant", "Added `#[allow(clippy::too_many_arguments)]` on 5 functions; clippy is clean."),
                            ("user", "you added #[allow(clippy::too_many_arguments)] on like 5 functions, i really dont "
                                     "like that. i always want clippy warnings actually fixed, not allowed away, in any "
                                     "codebase i work on"),
                            ("assistant", "Removed the allows and grouped the parameters into structs."))
    assert len(written) == 1 and "clippy warnings" in written[0].body, written


def test_thats_a_rule_here_joins_the_rule_before_it(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Use dbt build to run the models.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "add a unique + not_null test on the pk for every model in marts/. thats a rule "
                                     "here, every mart model needs those two on its primary key"),
                            ("assistant", "Added the two tests to the 9 models in models/marts/."))
    assert len(written) == 1 and "marts/" in written[0].body, written


@pytest.mark.parametrize("sentence", [
    "black and isort keep fighting over the import blocks in src/api/, every commit flips them back and forth",
    "we need a v2 of the orders endpoint, line_items is changing shape",
])
def test_a_problem_or_a_need_of_the_moment_is_no_memory(sentence):
    assert never_durable(sentence)


def test_a_description_of_the_code_right_now_replaces_no_rule(tmp_path, real_embedder):
    """Found by a new-user trial: "Right now computeTotal does three things …" superseded the rounding rule."""
    workspace, old = _store_with(tmp_path, "Always round money with Math.round(x*100)/100 in this repository, never "
                                 "toFixed.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "Right now computeTotal does three things at once: it sums the line items, applies "
                                     "coupon codes and then rounds. Pull the coupon part out into applyDiscounts."),
                            ("assistant", "Done."))
    assert all(m.supersedes != (old.id,) for m in written), written
    assert old.id in _current(workspace, real_embedder)


@pytest.mark.parametrize("seed, said", [
    ("Run the tests with make test.", "From now on always run the linter number 1 before committing, never skip it."),
    ("Make `bun run test:unit` the standard command for running tests before pushing.",
     "from now on always run bun run lint before committing"),
])
def test_a_new_standing_rule_beside_an_old_one_replaces_nothing(tmp_path, real_embedder, seed, said):
    """Found by CI and a new-user trial: a new rule on another subject ("run" shared, or the same tool named)
    superseded the test command."""
    workspace, old = _store_with(tmp_path, seed, "repo", "project-conventions")
    written = _conversation(workspace, real_embedder, ("user", said), ("assistant", "Understood."))
    assert written and all(m.supersedes != (old.id,) for m in written), written
    assert old.id in _current(workspace, real_embedder)


def test_a_new_version_keeps_the_kind_of_a_hand_filed_memory_in_its_scope(tmp_path, real_embedder):
    """A person filed a style rule with the repository as a coding preference: its new version stays one (the
    repository's ways of writing code are otherwise filed as its conventions)."""
    workspace, old = _store_with(tmp_path, "Timestamps: store naive UTC, use datetime.utcnow().", "repo",
                                 "coding-preferences")
    written = _conversation(workspace, real_embedder,
                            ("user", "the report shows times an hour off"),
                            ("assistant", "`created_at` is naive UTC from datetime.utcnow(), rendered as local."),
                            ("user", "from now on everything timezone aware: datetime.now(timezone.utc), no more "
                                     "utcnow"),
                            ("assistant", "Replaced 14 utcnow() calls."))
    replacing = [m for m in written if m.supersedes == (old.id,)]
    assert len(replacing) == 1 and "timezone.utc" in replacing[0].body, written
    assert (replacing[0].category, replacing[0].scope) == ("coding-preferences", "repo")


def test_a_chain_said_by_what_goes_ends_on_its_last_word(tmp_path, real_embedder):
    """"no more path versions … header versioning", then "scrap header versioning, back to … the path": each
    replaces the rule whose words it says go, not the rule beside it that shares its subject ("never ship
    breaking changes to a published API version"), and only the last is current."""
    workspace, path = _store_with(tmp_path, "API versioning in the URL path: /v1/..., /v2/...", "repo",
                                  "architectural-decisions")
    beside, _ = workspace.add("never ship breaking changes to a published API version", scope="repo",
                              category="architectural-decisions")
    (header,) = _conversation(workspace, real_embedder,
                              ("user", "we need a v2 of the orders endpoint, line_items is changing shape"),
                              ("assistant", "I'd add `/v2/orders` next to `/v1/orders` with a separate serializer."),
                              ("user", "actually no more path versions. let's do header versioning: clients send "
                                       "`Accept-Version: 2`, default to 1 when it's missing. one route, dispatch on "
                                       "the header"),
                              ("assistant", "Added the api_version middleware; tests for both versions pass."))
    assert header.supersedes == (path.id,) and "Accept-Version" in header.body
    (back,) = _conversation(workspace, real_embedder,
                            ("user", "the CDN is caching /orders regardless of Accept-Version"),
                            ("assistant", "CloudFront's cache key doesn't include Accept-Version."),
                            ("user", "ugh. scrap header versioning, back to versions in the path (/v2/orders). "
                                     "remove the Accept-Version middleware"),
                            ("assistant", "Removed the middleware; routes are /v1/orders and /v2/orders."))
    assert back.supersedes == (header.id,)
    assert _current(workspace, real_embedder) & {path.id, header.id, beside.id, back.id} == {beside.id, back.id}


def test_one_change_said_again_in_a_later_turn_is_one_memory(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Maria wants squash merges", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "open a PR for the rate limiter branch"),
                            ("assistant", "Opened #388; merge method set to squash per the repo convention."),
                            ("user", "ah, maria changed her mind, merge commits again. she wants the individual "
                                     "commits in main's history"),
                            ("assistant", "Switched #388 to a merge commit. Change the repo default too?"),
                            ("user", "no i don't have admin, she'll flip it. just don't squash anything from now on"),
                            ("assistant", "Understood."))
    (memory,) = written
    assert memory.supersedes == (old.id,) and "merge commits" in memory.body and "squash" in memory.body


def test_a_later_turn_taking_the_earlier_change_back_replaces_it(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Use npm to install JavaScript dependencies.", "repo",
                                 "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "we're moving off npm, use yarn for installs from now on"),
                            ("assistant", "Switched the scripts to yarn."),
                            ("user", "actually no, not yarn. pnpm instead of npm, it's what the other repos use"),
                            ("assistant", "Switched to pnpm."))
    assert old.id not in _current(workspace, real_embedder)
    current = [m for m in written if m.id in _current(workspace, real_embedder)]
    assert len(current) == 1 and "pnpm" in current[0].body, written


@pytest.mark.parametrize("turn, want", [
    ("amend it pls - team voted yesterday, we go with conventional commits now.",
     ["amend it pls", "team voted yesterday, we go with conventional commits now."]),
    # "z.B." is "e.g." in German: the example stays with its rule
    ('Stattdessen die Ticketnummer vorne, z.B. "PAY-123 Fix rounding". Sprache bleibt Englisch.',
     ['Stattdessen die Ticketnummer vorne, z.B. "PAY-123 Fix rounding".', "Sprache bleibt Englisch."]),
    # a dash inside a code span is the code's
    ("Deviations need a `/* MISRA deviation: rule x.y - reason */` comment right there.",
     ["Deviations need a `/* MISRA deviation: rule x.y - reason */` comment right there."]),
])
def test_a_typed_dash_between_a_task_and_a_rule_parts_them(turn, want):
    assert units(turn) == want


def test_a_change_of_mind_inside_one_pass_writes_only_its_final_statement(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Use print() for debug output in the notifier service.", "repo",
                                 "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "the `notifier` service has print() everywhere. use structlog for logging in "
                                     "this service going forward"),
                            ("assistant", "Switched notifier to structlog."),
                            ("user", "hm wait. scrap structlog, use stdlib logging with python-json-logger here too, "
                                     "consistency wins"),
                            ("assistant", "Switched to logging + python-json-logger."))
    (memory,) = [m for m in written if "python-json-logger" in m.body]
    assert not any("structlog" in m.body and "python-json-logger" not in m.body for m in written), written
    assert "use structlog" in memory.source.quote and "scrap structlog" in memory.source.quote


def test_a_rule_taken_back_in_the_next_turn_is_not_written(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Global client state uses Redux Toolkit (store in src/store/).", "repo",
                                 "architectural-decisions")
    written = _conversation(workspace, real_embedder,
                            ("user", "redux boilerplate is killing me. lets move global state to zustand going "
                                     "forward, start with the cart slice"),
                            ("assistant", "Created src/store/cart.ts with a zustand store; 4 more slices use redux."),
                            ("user", "hmm. 4 more plus the saga... ok no, forget it, too much churn two weeks before "
                                     "release. revert that"),
                            ("assistant", "Reverted."))
    assert written == []
    assert old.id in _current(workspace, real_embedder)


def test_changed_my_mind_about_a_rule_replaces_it_with_the_rule_said_next_and_no_words_of_the_agent(
        tmp_path, real_embedder):
    workspace, short = _store_with(tmp_path, "Keep your answers short, no essays; the user reads them on a tiny "
                                             "laptop screen.", "user", "coding-preferences")
    race, _ = workspace.add("Run go test ./... -race before saying something is done.", scope="repo",
                            category="project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "actually we're dropping the -race thing, CI runs it anyway and locally it's way "
                                     "too slow. just go test ./..."),
                            ("assistant", "Got it: plain `go test ./...` locally from now on."),
                            ("user", "ok changed my mind about the short answers. i'm new to go, so after each edit "
                                     "explain what you changed and why in a few bullet points"),
                            ("assistant", "Sure — after each edit I'll add a few bullets on what changed and why."))
    by_old = {m.supersedes[0]: m for m in written if m.supersedes}
    assert set(by_old) == {short.id, race.id}, written
    assert "bullet points" in by_old[short.id].body and "./..." in by_old[race.id].body
    assert not any("Got it" in m.body or "locally from now on" in m.body for m in written)


@pytest.mark.parametrize("turn, joined", [
    # a reaction that only points at the work goes with the rule said after it
    ("no, annotate them. type hints on every public function and helper, mypy --strict is enforced in ci here",
     "no, annotate them. type hints on every public function and helper, mypy --strict is enforced in ci here"),
    # a sentence that ends pointing back goes with the rule before it
    ("black with line length 100 and isort with the black profile. everyone on the team formats with that, no "
     "exceptions", "black with line length 100 and isort with the black profile. everyone on the team formats with "
     "that, no exceptions"),
    # an example in code, and "that's for all my code" after the rule
    ('personally i hate f-strings in log calls, use lazy %-style args — logger.info("done in %.1fs", elapsed). '
     "that's for all my code everywhere, not just this repo.",
     'personally i hate f-strings in log calls, use lazy %-style args logger.info("done in %.1fs", elapsed). '
     "that's for all my code everywhere, not just this repo."),
    # whose way it is, said after it
    ("and format it with stylua, 2 spaces, column_width 100. thats my setup for all my lua code, not just this plugin",
     "and format it with stylua, 2 spaces, column_width 100. thats my setup for all my lua code, not just this plugin"),
    ("pin every third-party action to a full commit sha. applies to every workflow in this repo",
     "pin every third-party action to a full commit sha. applies to every workflow in this repo"),
    ("one-liners in fish syntax pls. keep that in mind for every one-liner",
     "one-liners in fish syntax pls. keep that in mind for every one-liner"),
    # the reason, pointing back at the rule it explains
    ("never hardcode a relation name in a model — we once had a prod run reading from a dev schema because of "
     "exactly that", "never hardcode a relation name in a model; we once had a prod run reading from a dev schema "
     "because of exactly that"),
])
def test_a_sentence_leaning_on_its_neighbour_is_one_unit_with_it(turn, joined):
    from forgemem.capture.classify.fragments import _merge_fragments

    assert _merge_fragments(units(turn)) == [joined]


def test_a_repository_memory_never_links_to_a_personal_one(tmp_path, real_embedder):
    """The same subject in the other scope: a personal memory may point at the project's, but a file committed with
    the project never names a memory in the person's own store (teammates have no such id)."""
    workspace, personal = _store_with(tmp_path, "The user prefers pytest-style tests with plain asserts.", "user",
                                      "coding-preferences")
    written = _conversation(workspace, real_embedder,
                            ("user", "add a test for the refund cancel path"),
                            ("assistant", "Added test_cancel_refund as a pytest function."),
                            ("user", "in this repo tests are unittest TestCase classes, stick with TestCase here"),
                            ("assistant", "Rewrote it as a TestCase."))
    repo = [m for m in written if m.scope == "repo"]
    assert repo, written
    assert all(personal.id not in {r.id for r in m.related} | set(m.supersedes) for m in repo)


def test_a_refinement_is_on_the_subject_of_what_it_refines(tmp_path, real_embedder):
    """"and I prefer small commits …" opens with a word of addition, but adds nothing to a rule about old code."""
    workspace, other = _store_with(tmp_path, "The user does not care about old code, anything new you write.", "user",
                                   "coding-preferences")
    written = _conversation(workspace, real_embedder,
                            ("user", "not now. and I prefer small commits, one logical change each, thats how i "
                                     "work in every project"),
                            ("assistant", "Understood."))
    (memory,) = written
    assert "small commits" in memory.body and other.id not in {r.id for r in memory.related}


@pytest.mark.parametrize("said, word", [
    ("and tbh im an analyst, i mostly do sql, not really a python person, so when you suggest python macros explain "
     "them like i'm new", "analyst"),
    ("also fyi i moved to lisbon, so im on WET now, standup replies will come later", "lisbon"),
])
def test_a_sentence_opening_on_the_person_is_a_fact_about_them(tmp_path, real_embedder, said, word):
    workspace, _ = _store_with(tmp_path, "Use pnpm for installs.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder, ("user", "add the weekly revenue model"),
                            ("assistant", "Added models/marts/weekly_revenue.sql."), ("user", said),
                            ("assistant", "Noted."))
    (memory,) = [m for m in written if word in m.body.lower()]
    assert (memory.category, memory.scope) == ("user-facts", "user")


def test_a_decision_said_as_one_replaces_a_preference_as_a_decision(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Prefers plain frozen dataclasses for config objects, loaded by hand from "
                                           "os.environ", "repo", "coding-preferences")
    written = _conversation(workspace, real_embedder,
                            ("user", "add a REDIS_URL setting"),
                            ("assistant", "Added `redis_url` to the frozen Config dataclass, read from os.environ."),
                            ("user", "we decided in the arch review: config moves to pydantic-settings, one "
                                     "BaseSettings class. the hand rolled dataclass stuff goes away"),
                            ("assistant", "Converted Config to a BaseSettings class."))
    replacing = [m for m in written if m.supersedes == (old.id,)]
    assert len(replacing) == 1 and replacing[0].category == "architectural-decisions", written


def test_a_turn_replacing_a_rule_with_two_sentences_and_the_next_pass_replacing_one_part(tmp_path, real_embedder):
    workspace, black = _store_with(tmp_path, "Format Python with black (line length 88). Don't hand-wrap.", "repo",
                                   "coding-preferences")
    (first,) = _conversation(workspace, real_embedder,
                             ("user", "black and isort keep fighting over the import blocks in src/api/"),
                             ("assistant", "isort is not on the black profile. Alternative: ruff does both."),
                             ("user", "replace black and isort with ruff format + ruff's isort rules. and bump "
                                      "line-length to 100 while we're at it, 88 wraps too much of the pydantic models"),
                             ("assistant", "Swapped in ruff with line-length = 100."))
    assert first.supersedes == (black.id,) and "ruff" in first.body and "100" in first.body
    (second,) = _conversation(workspace, real_embedder,
                              ("user", "hm, the 100 char lines are unreadable in side-by-side diffs on my laptop. go "
                                       "back to 88, keep ruff though"),
                              ("assistant", "line-length = 88 in [tool.ruff]."))
    assert second.supersedes == (first.id,) and "88" in second.body
    assert _current(workspace, real_embedder) & {black.id, first.id, second.id} == {second.id}


@pytest.mark.parametrize("said, scope", [
    ("the conventional commits style is what i use in all my own repos and i'd like it by default", "user"),
    ("ahora estoy en America/Mexico_City (UTC-6), tenlo en cuenta para horarios", "user"),
])
def test_cues_of_the_persons_own_work_in_their_words(said, scope):
    from forgemem.capture.classify.scope import _ABOUT_ME_FIRST

    category = "user-facts" if _ABOUT_ME_FIRST.match(said) else "coding-preferences"
    assert scope_for(said, category, 0.5, True, 0.5)[0] == scope


def test_back_on_the_old_tool_and_an_editor_chain_end_on_the_last_word(tmp_path, real_embedder):
    workspace, vitest = _store_with(tmp_path, "tests: vitest (not jest)", "repo", "project-conventions")
    editor, _ = workspace.add("Editor: VS Code. Give editor config as settings.json snippets.", scope="user",
                              category="user-facts")
    (jest,) = [m for m in _conversation(
        workspace, real_embedder,
        ("user", "write tests for the useDebouncedSearch hook in packages/ui/src/hooks"),
        ("assistant", "Added useDebouncedSearch.test.ts with vitest and vi.useFakeTimers()."),
        ("user", "ugh no. we reverted the vitest migration last week, we're back on jest."),
        ("assistant", "Rewrote it with jest.useFakeTimers().")) if "jest" in m.body]
    assert jest.supersedes == (vitest.id,)
    (neovim,) = _conversation(workspace, real_embedder,
                              ("user", "set up golangci-lint with editor integration — oh wait, I switched to neovim "
                                       "last week, so skip the vscode settings.json part and give me the "
                                       "nvim-lspconfig bit for gopls instead"),
                              ("assistant", "Added .golangci.yml and the nvim-lspconfig snippet."))
    assert neovim.supersedes == (editor.id,)
    (zed,) = _conversation(workspace, real_embedder,
                           ("user", "gave up on neovim lol. I'm on zed now, so no more lua config snippets."),
                           ("assistant", "Noted."))
    assert zed.supersedes == (neovim.id,)
    assert _current(workspace, real_embedder) & {vitest.id, jest.id, editor.id, neovim.id, zed.id} == {jest.id, zed.id}


def test_a_yes_that_says_more_to_a_one_off_offer_never_takes_the_agents_words_or_code():
    from forgemem.capture.classify.offline import rule_form

    agent = ("I'll add a helper in `internal/httpx/problem.go`:\n```go\ntype Problem struct {\n    Type string\n}\n```\n"
             "and convert the 9 error paths in `handlers/orders.go`.")
    text = rule_form("yep. go ahead with orders, the rest i'll do in follow-ups", category="project-conventions",
                     scope="repo", context=agent)
    assert "```" not in text and "Problem struct" not in text and "orders" in text


def test_what_the_team_voted_is_the_projects_even_said_with_for_me(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Branch names follow feature/<TICKET>-<short-slug>, e.g. "
                                           "feature/PAY-1234-refund-webhook.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "make a branch for PAY-2210 and start on the currency rounding fix"),
                            ("assistant", "Created feature/PAY-2210-jpy-rounding."),
                            ("user", "hold on, the team voted in thursday's retro, branch names are now "
                                     "<initials>/<ticket>, so for me that's mk/PAY-2210. no slug. rename it"),
                            ("assistant", "Renamed to mk/PAY-2210."))
    (memory,) = written
    assert memory.supersedes == (old.id,) and memory.scope == "repo" and "initials" in memory.body


def test_the_use_said_after_what_goes_is_what_comes_instead_and_one_memory(tmp_path, real_embedder):
    workspace, ld = _store_with(tmp_path, "Feature flags: LaunchDarkly. Wrap every new user-facing feature in a flag "
                                          "(`ldClient.variation(...)`).", "repo", "architectural-decisions")
    written = _conversation(workspace, real_embedder,
                            ("user", "put the new pricing page behind a flag"),
                            ("assistant", "Wrapped PricingPage in ldClient.variation('growth-pricing-v2')."),
                            ("user", "we cancelled LaunchDarkly at renewal, flags live in our own feature_flags table "
                                     "now. use `isEnabled('growth-pricing-v2', user)` from src/flags."),
                            ("assistant", "Switched to isEnabled from src/flags."))
    (memory,) = written
    assert memory.supersedes == (ld.id,) and "isEnabled" in memory.body and "feature_flags" in memory.body


def test_and_use_after_a_change_is_a_rule_of_its_own(tmp_path, real_embedder):
    workspace, jest = _store_with(tmp_path, "tests: jest", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "the cart tests fail with jest is not defined"),
                            ("assistant", "cart.test.ts calls jest.fn(), but jest is not installed."),
                            ("user", "right, jest is gone, we ripped it out last sprint. its vitest now, `pnpm vitest "
                                     "run`. and use msw for mocking http, dont hand roll fetch mocks"),
                            ("assistant", "Switched to vi.fn and an msw handler."))
    assert any(m.supersedes == (jest.id,) and "vitest" in m.body for m in written), written
    assert any("msw" in m.body and not m.supersedes for m in written), written


def test_found_by_the_second_trial_in_pass_take_back_and_tool_families(tmp_path, real_embedder):
    workspace, anyhow = _store_with(tmp_path, "For errors: anyhow in the binary (src/main.rs), thiserror for the lib "
                                              "crate errors; thats the rule here, dont mix them.", "repo",
                                    "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "use double quotes for all strings in the ruby code"),
                            ("assistant", "Set Style/StringLiterals to double_quotes."),
                            ("user", "run it on app/models"), ("assistant", "14 offenses autocorrected."),
                            ("user", "actually no, scrap the double quotes thing. single quotes unless theres "
                                     "interpolation, thats what standardrb wants"),
                            ("assistant", "Switched to single_quotes."),
                            ("user", "we switched the binary from anyhow to color-eyre, nicer reports. update main.rs "
                                     "accordingly. lib stays on thiserror"),
                            ("assistant", "main returns color_eyre::Result<()>."))
    assert not any("double quotes" in m.body and "scrap" not in m.body.lower() for m in written), written
    assert any("single quotes" in m.body.lower() for m in written), written
    assert any(m.supersedes == (anyhow.id,) and "color-eyre" in m.body for m in written), written


@pytest.mark.parametrize("turn, joined", [
    ("never touch config/credentials.yml.enc, only maria rotates those. that applies to every task in this repo",
     "never touch config/credentials.yml.enc, only maria rotates those. that applies to every task in this repo"),
])
def test_that_applies_to_joins_the_rule_before_it(turn, joined):
    from forgemem.capture.classify.fragments import _merge_fragments

    assert _merge_fragments(units(turn)) == [joined]


@pytest.mark.parametrize("sentence", [
    "do not run pod install with the system cocoapods, it's always `cd ios && bundle exec pod install`",
    "migrations run with `bundle exec rails db:migrate`, never with the schema loader",
])
def test_a_rule_naming_the_repositorys_commands_is_the_repositorys(sentence):
    assert scope_for(sentence, "corrections", 0.9, True)[0] == "repo"


def test_off_the_table_names_what_goes_and_a_json_library_chain_ends_with_one_head(tmp_path, real_embedder):
    """circe -> jsoniter-scala -> "jsoniter is off the table. … zio-json for all services": three passes, one head."""
    workspace, _ = _store_with(tmp_path, "The user prefers dark themes.", "user", "coding-preferences")
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    said = ["we use circe for json across all our scala services, semi-auto derivation only",
            "circe derivation is killing compile times. we talked it over: switching to jsoniter-scala for all the "
            "scala services, circe goes away",
            "jsoniter is off the table. the macros blow up on scala 3.4 with our opaque types. final answer: zio-json "
            "for all services"]
    assert_one_chain(capturer, said)


def test_two_sentences_naming_one_thing_share_it():
    from forgemem.capture.classify.one_pass import _name_shared

    assert _name_shared("`make check` is the project's single entry point for lint + tests.",
                        "CI and humans both only ever call make check, so wire everything into it.")
    assert not _name_shared("Use pnpm for installs.", "Never commit .env files.")


def test_what_a_change_means_said_after_it_is_part_of_it(tmp_path, real_embedder):
    workspace, fly = _store_with(tmp_path, "sveltekit app deployed on fly.io with adapter-node", "repo",
                                 "architectural-decisions")
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    said = ("so the fly bill came in and we're done with it. moving to cloudflare pages: swap adapter-node for "
            "adapter-cloudflare in svelte.config.js and fix whatever breaks. that also means server code has to run "
            "on workers from here on")
    turns = [Turn("g", 0, "user", said, None, "g", 0, 0, 0, 0), Turn("g", 1, "assistant", "Okay.", None, "g", 1, 1, 0, 0)]
    written = capturer.run(Batch(turns, "cadence", "g", "g")).written
    change = [m for m in written if m.supersedes == (fly.id,)]
    assert len(change) == 1 and "cloudflare" in change[0].body and "workers" in change[0].body, written


def test_a_rule_said_as_usual_then_a_new_one_are_two():
    from forgemem.capture.classify.fragments import _apart_from_the_usual

    assert _apart_from_the_usual(["keep keywords uppercase like always, and trailing commas pls not leading ones"]) == [
        "keep keywords uppercase like always", "trailing commas pls not leading ones"]
    assert _apart_from_the_usual(["pnpm, like always"]) == ["pnpm, like always"]
