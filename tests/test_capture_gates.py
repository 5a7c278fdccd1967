"""The offline classifier's gates over its heads: standing words in other languages, "not yet" one-offs,
and a category that agrees with what the sentence is about and where it is kept.

A unit with no standing word ("always", "we", "from now on", …) must clear a much higher bar
(`learned.UNMARKED_AT`): such a unit is almost always a task. People write to their agent in
their own language, so the standing words are read in the languages they use too; and an
instruction held back for now ("don't push yet", "todavía no") is a one-off in any of them.
"""

from __future__ import annotations

import pytest

from forgemem.capture.capturer import Capturer
from forgemem.capture.classify import Batch
from forgemem.capture.classify.change_words import dropped_names
from forgemem.capture.classify.learned import generalises, never_durable
from forgemem.capture.classify.offline import OfflineClassifier, answer_fact
from forgemem.capture.classify.scope import scope_for
from forgemem.capture.transcripts import Turn
from forgemem.recall.engine import RecallEngine
from forgemem.workspace import Workspace, init_forge_dir


def written(sentence: str, embedder, before: str = "Done, the tests pass.") -> list:
    turns = [Turn("g", 0, "assistant", before, None, "g", 1, 1, 0, 0),
             Turn("g", 1, "user", sentence, None, "g", 2, 2, 0, 0)]
    classifier = OfflineClassifier(True, embedder)
    return classifier.classify(Batch(turns[-1:], "cadence", "g", "g", context=turns[:-1]), lambda t: []).proposals


def _store_with(tmp_path, text: str, scope: str, category: str):
    """A repo store and a user store in `tmp_path`, and one memory written by hand."""
    init_forge_dir(tmp_path / "project" / ".forge")
    init_forge_dir(tmp_path / "home" / ".forge")
    workspace = Workspace.open(cwd=tmp_path, repo_dir=tmp_path / "project/.forge/memory",
                               user_dir=tmp_path / "home/.forge/memory")
    old, _ = workspace.add(text, scope=scope, category=category)
    return workspace, old


def assert_one_chain(capturer, said: list[str]) -> None:
    """Each statement said in a pass of its own: each after the first supersedes the one before, and only the last
    is a head."""
    ids = []
    for n, text in enumerate(said):
        turns = [Turn("g", 2 * n, "user", text, None, "g", 2 * n, 2 * n, 0, 0),
                 Turn("g", 2 * n + 1, "assistant", "Okay.", None, "g", 2 * n + 1, 2 * n + 1, 0, 0)]
        [memory] = capturer.run(Batch(turns, "cadence", "g", "g")).written
        assert n == 0 or memory.supersedes == (ids[-1],), (text, memory)
        ids.append(memory.id)
    capturer.engine.refresh()
    heads = {m.id for m in capturer.engine.snapshot.graph.heads()}
    assert ids[-1] in heads and not heads & set(ids[:-1])


def _said(workspace, real_embedder, said: str) -> list:
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    turns = [Turn("g", 0, "assistant", "Done.", None, "g", 1, 1, 0, 0),
             Turn("g", 1, "user", said, None, "g", 2, 2, 0, 0), Turn("g", 2, "assistant", "Okay.", None, "g", 3, 3, 0, 0)]
    return capturer.run(Batch(turns[1:], "cadence", "g", "g", context=turns[:1])).written


@pytest.mark.parametrize("sentence", [
    "bei uns laufen die Integrationstests immer gegen eine echte Postgres, nie gegen SQLite",
    "nunca hagas commits directamente en main, siempre una rama y un PR",
    "désormais les migrations passent par alembic, jamais à la main",
    "d'ora in poi usiamo ruff per il lint, non più flake8",
    "voortaan gebruiken we uv in plaats van pip",
    "in general keep functions under fifty lines",
    "dont mock the db in the integration tests",
    "retries use tenacity, not the hand rolled while loop",
])
def test_standing_words_in_other_languages_count(sentence):
    assert generalises(sentence)


@pytest.mark.parametrize("sentence", [
    "bei uns laufen die Integrationstests immer gegen eine echte Postgres, nie gegen SQLite",
    "nunca hagas commits directamente en main, siempre una rama y un PR",
    "désormais les migrations passent par alembic, jamais à la main",
])
def test_a_rule_in_another_language_is_written(sentence, real_embedder):
    assert written(sentence, real_embedder), sentence




def test_a_fact_that_is_not_there_yet_is_not_a_one_off():
    """"not … yet" about how things are is not an instruction held back: only "don't X yet" is."""
    assert not never_durable("the svelte plugin is not there yet, so biome cannot format .svelte files")


def test_how_the_person_wants_to_be_worked_with_is_a_preference_not_a_fact(real_embedder):
    """"ask me first" names the person as its object: a preference of theirs, not a fact about them."""
    for sentence in ("before you run any git command, ask me first", "tell me when you change a public API"):
        found = written(sentence, real_embedder)
        assert found and found[0].category == "coding-preferences" and found[0].scope == "user", found
    fact = written("I'm on Windows 11 with WSL2, Ubuntu inside", real_embedder)
    assert fact and fact[0].category == "user-facts", fact


def test_a_rule_for_all_the_persons_projects_is_not_a_project_convention(real_embedder):
    found = written("I've ditched poetry: in all my projects use uv from now on", real_embedder)
    assert found and found[0].scope == "user" and found[0].category == "coding-preferences", found


def test_a_thing_named_before_here_is_is_the_repositorys_way():
    assert generalises("branch names here are `fix/<ticket>-short-slug`, ticket first")
    assert not generalises("here are the logs")


def test_a_teams_move_to_another_tool_is_written_and_keeps_the_kind_of_what_it_replaces(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Infra uses Terraform pinned to 1.5.7 (last MPL-licensed release).", "repo",
                                 "architectural-decisions")
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    turns = [Turn("g", 0, "user", "we're moving this repo to opentofu, pinned 1.8.x.", None, "g", 1, 1, 0, 0),
             Turn("g", 1, "assistant", "Okay.", None, "g", 2, 2, 0, 0)]
    [new] = capturer.run(Batch(turns, "cadence", "g", "g")).written
    assert new.supersedes == (old.id,) and new.category == "architectural-decisions" and new.scope == "repo"


@pytest.mark.parametrize("sentence", [
    # held back for now, in any language
    "ok commit it but don't push yet, I want to look at the diff first",
    "do not merge it yet",
    "haz el commit pero no hagas push todavía",
    "mach den Commit, aber noch nicht pushen",
    "fais le commit mais ne pousse pas encore",
    "from now on until this is merged dont touch anything under tests/",
    "scripts/bootstrap.sh doesnt work for me",
    "running the tests on my side gives me this:",
    "the nightly export keeps failing since tuesday",
    "getting this in prod logs every few minutes, find where it comes from",
    "and &str vs String for the name field, which would you pick here",
    "il me faut un prototype rapide d'un endpoint de recherche",
    "ich brauche einen schnellen Prototyp für den Export",
    # a thing to find out: what it checks may hold "every time", it is what is looked for
    "anyway also check if the image layer is rebuilt every time, feels like it",
    "oh and can you explain why the lint step always runs twice",
    # a piece of the work at hand named as such
    "keep this hotfix compatible with node 16, no optional chaining",
    "no new dependencies in this PR, the audit takes weeks",
])
def test_one_offs_reports_unmarked_questions_and_requests_are_not_rules(sentence, real_embedder):
    assert never_durable(sentence)
    assert not written(sentence, real_embedder), sentence


def test_a_report_that_says_what_to_do_from_now_on_is_still_a_rule():
    assert not never_durable("pnpm doesn't work with our workspace setup, always use yarn here")
    # ... and so is a check said with when it recurs
    assert not never_durable("check whether the lockfile changed before you push")
    assert not never_durable("from now on check if the migration can be reversed")


def test_a_prefix_dropped_with_anymore_replaces_the_rule_that_names_it(tmp_path, real_embedder):
    """"jira key first, no fix/feat prefix anymore" drops the old naming by its name: a supersession."""
    workspace, old = _store_with(tmp_path, "Branch names here are `fix/<ticket>-short-slug` or `feat/<ticket>-...`.",
                                 "repo", "project-conventions")
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    said = "heads up, we changed branch naming at the retro: jira key first, no fix/feat prefix anymore."
    turns = [Turn("g", 0, "user", said, None, "g", 1, 1, 0, 0), Turn("g", 1, "assistant", "Okay.", None, "g", 2, 2, 0, 0)]
    [new] = capturer.run(Batch(turns, "cadence", "g", "g")).written
    assert new.supersedes == (old.id,)
    assert dropped_names(said) == {"fix"}
    assert dropped_names("we have no more time today") == set()


@pytest.mark.parametrize("sentence, category, scope", [
    ("in this repo always use single quotes for strings", "project-conventions", "repo"),
    ("use f-strings, not format(), in this codebase", "project-conventions", "repo"),
    ("in this repo we prefer early returns over nested ifs", "project-conventions", "repo"),
    ("personally I always want type hints on every function, in all my projects", "coding-preferences", "user"),
])
def test_category_and_scope_agree(sentence, category, scope, real_embedder):
    """A way of writing code kept with one repository is its convention; one kept by the person, their preference
    (every labelled set this project has pairs them so)."""
    [found] = written(sentence, real_embedder)
    assert (found.category, found.scope) == (category, scope)


def test_a_change_of_mind_after_a_remark_in_the_same_pass_replaces_the_old_rule(tmp_path, real_embedder):
    """The remark said first ("biome mangles our .svelte files") only refines the biome rule: the change of mind
    must replace the rule itself, or the rule stays current."""
    workspace, old = _store_with(tmp_path, "Rip out prettier, add a biome.json with 2 space / single quote style, and "
                                 "run `biome check --write` on files you touch.", "repo", "project-conventions")
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    said = ("ugh. biome mangles our .svelte files, support isnt there yet. we're going back to prettier "
            "(with prettier-plugin-svelte), but the team wants tabs now instead of 2 spaces.")
    turns = [Turn("g", 0, "user", said, None, "g", 1, 1, 0, 0), Turn("g", 1, "assistant", "Okay.", None, "g", 2, 2, 0, 0)]
    written_ = capturer.run(Batch(turns, "cadence", "g", "g")).written
    assert any(m.supersedes == (old.id,) and "prettier" in m.body for m in written_), written_
    capturer.engine.refresh()
    assert old.id not in {m.id for m in capturer.engine.snapshot.graph.heads()}


@pytest.mark.parametrize("seed, scope, category, said, replaces", [
    ("Use poetry for dependency management.", "repo", "project-conventions", "poetry is out, it's uv now", True),
    ("Run the linter with flake8.", "repo", "project-conventions", "we replaced flake8 with ruff", True),
    ("Format with black.", "repo", "project-conventions", "actually scrap black, we format with ruff format now", True),
    ("Store uploads on the local disk under /var/uploads.", "repo", "architectural-decisions",
     "uploads go to S3 now, the disk filled up twice", True),
    # tools the lexicon knows of one kind, with no word of the old memory's said
    ("Container base image: alpine.", "repo", "architectural-decisions",
     "distroless static for every service, alpine is done.", True),
    ("Assertions in Go tests: testify.", "repo", "project-conventions", "we're on go-cmp for test diffs now", True),
    ("Postgres driver: lib/pq.", "repo", "architectural-decisions", "pgx everywhere now.", True),
    # the way the memory opens on, turned down in reaction
    ("Squash fixup commits before merging.", "repo", "project-conventions", "no, don't squash.", True),
    ("Squash fixup commits before merging.", "repo", "project-conventions", "no, don't merge it yet", False),
    # a task that says "now" replaces nothing
    ("Run the tests with `make test`.", "repo", "project-conventions", "ok now run the tests", False),
    ("Use poetry for dependency management.", "repo", "project-conventions", "now add requests to the dependencies",
     False),
    ("Format with black.", "repo", "project-conventions", "black changed the whole file, revert that", False),
    ("Store uploads on the local disk under /var/uploads.", "repo", "architectural-decisions",
     "the uploads folder is full now, clean it", False),
])
def test_a_terse_change_of_mind_replaces_the_rule_the_store_holds(tmp_path, real_embedder, seed, scope, category, said,
                                                                  replaces):
    """Too terse for the heads alone ("poetry is out, it's uv now"), but it replaces a rule the store holds."""
    workspace, old = _store_with(tmp_path, seed, scope, category)
    written_ = _said(workspace, real_embedder, said)
    assert [m.supersedes for m in written_] == ([(old.id,)] if replaces else []), written_


@pytest.mark.parametrize("sentence", [
    "and the runner is `python runtests.py`, pytest isnt even installed in CI",
    "our default branch is trunk, not main",
    # what holds on beside a change
    "but the scripts in scripts/ stay bash, ci runs them on ubuntu runners.",
    "tabs still yes, but for yaml and markdown do 2 spaces. yaml breaks with tabs anyway",
])
def test_what_the_projects_tools_are_is_a_rule(sentence, real_embedder):
    assert generalises(sentence)
    assert written(sentence, real_embedder), sentence


@pytest.mark.parametrize("sentence, general", [
    ("keep functions under 30 lines", True),
    ("name test files test_*.py", True),
    ("make the button blue", False),
    ("put it in utils", False),
    ("use that one", False),
    ("naming is stg_<source>__<table> with DOUBLE underscore", True),
    ("branch names follow feat/<ticket>-<slug>", True),
    ("ich sitz in berlin, wenn du uhrzeiten nennst bitte in MEZ", True),
    ("fix the name of that variable", False),
])
def test_an_instruction_about_things_in_general_is_not_a_task(sentence, general):
    assert generalises(sentence) is general


@pytest.mark.parametrize("sentence, choice", [
    ("pnpm not npm", True),
    ("ruff not black", True),  # "black" alone is a colour; beside ruff it is the formatter
    ("tabs, not spaces please", True),
    ("no. tabs, not spaces", True),  # the reaction before it does not change what it is
    ("vitest instead of jest", True),
    ("staging not prod", False),  # a place to deploy this once, not a way of working
    ("the red one not the blue one", False),
    ("fix the test not the code", False),
])
def test_a_bare_choice_of_one_thing_over_another_of_its_kind_is_a_rule(sentence, choice):
    from forgemem.capture.classify.learned import names_a_choice

    assert names_a_choice(sentence) is choice


def test_a_terse_choice_said_against_what_the_agent_did_is_written(real_embedder):
    # "pnpm not npm" after the agent ran npm: the heads give it 0.36, under the bar of a sentence with no standing
    # word (0.85); as a choice of a way it clears the standing bar
    [found] = written("pnpm not npm", real_embedder,
                      before="Added react-day-picker with npm install. Note: npm created a web/package-lock.json.")
    assert "pnpm" in found.text and found.scope == "repo"


def test_a_short_turn_of_fragments_is_one_unit(real_embedder):
    from forgemem.capture.classify.units import units

    assert units("no. tabs.") == ["no. tabs."]  # the reaction and what it wants: one thing said
    assert units("ok cool. next. go on. do it. thanks.") == ["ok cool."]  # longer: not one thought
    [found] = written("no. tabs.", real_embedder, before="I used 4-space indentation in the migration.")
    assert "tabs" in found.text.lower()


def test_a_fragment_of_names_goes_with_the_sentence_after_it():
    from forgemem.capture.classify.units import units

    # "no. pgx, pgxpool. lib/pq is gone …": what replaces lib/pq is said in two words, and kept with the sentence
    assert units("no. pgx, pgxpool. lib/pq is gone from every service since the spring") == [
        "pgx, pgxpool. lib/pq is gone from every service since the spring"]
    # a short task is not carried ("delete suppliers.css."), nor a pasted value
    assert units("we use MudBlazor for all UI — delete suppliers.css.\nand explain the razor parts, im a backend dev") == [
        "we use MudBlazor for all UI", "and explain the razor parts, im a backend dev"]
    assert units("AccountName=dev01;AccountKey=abc;EndpointSuffix=core.windows.net\nwhy does this 403") == [
        "why does this 403"]


def test_the_persons_setup_said_plainly_is_a_fact(real_embedder):
    [found] = written("I'm on a mac", real_embedder)
    assert (found.category, found.scope) == ("user-facts", "user")


def test_a_complaint_that_says_where_to_move_is_not_only_a_report():
    assert not never_durable("hm cypress is flaky af, moving the e2e tests to playwright")


def test_scratch_that_takes_back_the_closest_rule_three_steps_end_with_one_head(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "The user prefers dark themes.", "user", "coding-preferences")
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    said = ["we run the unit tests with nose2 here", "nose2 is dead upstream, switch the test runner to pytest",
            "scratch that, we're standardising on pytest with xdist, always run it as pytest -n auto"]
    assert_one_chain(capturer, said)


@pytest.mark.parametrize("acknowledgment", ["Okay.", "Sure thing!", "Done."])
def test_a_rule_after_a_bare_acknowledgment_is_read_the_same(acknowledgment, real_embedder):
    """"Okay." and "Done." say the same: the rule after either is written (the heads were trained with "Done.")."""
    assert written("never commit straight to main", real_embedder, before=acknowledgment)


def test_two_sentences_of_one_turn_replacing_the_same_rule_are_one_memory(tmp_path, real_embedder):
    """Otherwise the second, a fragment ("Uv add / uv sync, no more poetry."), replaced the first as current."""
    workspace, old = _store_with(tmp_path, "Use poetry for dependency management (poetry add, poetry install).", "repo",
                                 "project-conventions")
    said = ("actually let's use uv instead of poetry for this project, poetry's lockfile keeps conflicting on every "
            "merge. so uv add / uv sync from now on, no more poetry")
    [new] = _said(workspace, real_embedder, said)
    assert new.supersedes == (old.id,)
    assert "lockfile" in new.body and "uv add / uv sync" in new.body, new.body


@pytest.mark.parametrize("seed, category, said, words", [
    ("Sessions are stored in memcached.", "architectural-decisions",
     "everyone got logged out again after the deploy. keeping sessions in memcached was a mistake tbh. "
     "sessions go in a postgres table from now on", "postgres"),
    ("Only run the tests for the files you changed, never the whole suite.", "corrections",
     "ignore what i said earlier about running only the tests you touched. run the full suite with tox before "
     "you tell me it's done", "tox"),
    ("Config objects are frozen dataclasses filled by hand from os.environ.", "project-conventions",
     "we settled it in the design review: settings move to pydantic-settings, validated at startup. the hand "
     "rolled dataclass config goes away", "pydantic"),
])
def test_the_sentence_next_to_a_rule_says_which_memory_it_replaces(tmp_path, real_embedder, seed, category, said,
                                                                  words):
    """"X was a mistake", "ignore what i said about X", "the X stuff goes away": said beside the new rule in the
    same turn, it names the memory the rule replaces, and is not a memory of its own."""
    workspace, old = _store_with(tmp_path, seed, "repo", category)
    [new] = _said(workspace, real_embedder, said)
    assert new.supersedes == (old.id,) and words in new.body, new
    assert new.scope == "repo" and new.category == category  # a new version keeps the kind of what it replaces


def test_a_short_question_after_a_proposal_confirms_the_proposal_itself(real_embedder):
    """"… so it's the standard for everyone. Want me to set that up?" — "yes do that" keeps the proposal, not
    "Set that up."."""
    agent = ("The failure is the formatter check. To stop this happening again I'd add a pre-commit hook running "
             "ruff format, so it's the standard for everyone on the repo. Want me to set that up?")
    [found] = written("yes do that", real_embedder, before=agent)
    assert "pre-commit" in found.text and found.scope == "repo", found
    agent = ("Fixed the three writers. Suggest making it a convention: every stored timestamp is UTC ISO-8601, "
             "converted to local time only in the UI. Make that the standard?")
    [found] = written("yep", real_embedder, before=agent)
    assert "UTC" in found.text and not found.text.startswith(("Make that", "Suggest")), found


@pytest.mark.parametrize("sentence, never", [
    ("the eslint config isnt picked up when i save, can u check package.json", True),
    ("i hate everything", True),
    ("plan in CI shows no changes on all 4 envs, nice.", True),
    ("last change i promise", True),
    ("the asking before every git status is getting old.", True),
    ("always use pnpm here, nice", False),
    ("the api always returns 500 on empty body", True),
    ("the client never throws, it returns Result; dont add try/except around it", False),
    ("my lead says we should never use ORMs for reporting queries, raw sql only", True),
    ("my lead says never use ORMs for reporting and i agree, raw sql only", False),
    ("i hate mocks in integration tests", False),
    ("we never mock the db, can you check the new tests follow that", False),
])
def test_venting_and_requests_to_look_into_something_are_not_rules(sentence, never):
    assert never_durable(sentence) is never


def test_the_persons_setup_said_with_a_task_is_still_a_fact(real_embedder):
    assert generalises("im on windows, wsl2 ubuntu, not a mac. make it work on both")
    [found] = written("im on windows, wsl2 ubuntu, not a mac. make it work on both", real_embedder)
    assert found.category == "user-facts" and found.scope == "user" and "wsl2" in found.text


def test_a_rule_for_more_than_this_repo_is_the_persons(real_embedder):
    agent = ("Should I always use lazy %s placeholders in logging calls instead of f-strings, in everything I write "
             "for you, not just this repo?")
    [found] = written("yes pls, every time", real_embedder, before=agent)
    assert found.scope == "user", found


@pytest.mark.parametrize("seed, said", [
    ("Commit messages are short free-form sentences, no type prefixes.",
     "got overruled at standup, its conventional commits now (feat:, fix:, chore:)"),
    ("Format Python with yapf.", "we're back to black, yapf kept fighting the linters"),
])
def test_overruled_and_back_to_are_changes_of_mind(tmp_path, real_embedder, seed, said):
    workspace, old = _store_with(tmp_path, seed, "repo", "project-conventions")
    written_ = _said(workspace, real_embedder, said)
    assert [m.supersedes for m in written_] == [(old.id,)], written_


def test_a_reaction_to_a_habit_said_with_a_complaint_that_it_recurs_is_a_correction(real_embedder):
    """"why do you keep doing this. stop X" corrects a habit of the agent's; "stop" alone on a task does not."""
    turns = [Turn("g", 0, "assistant", "Added the serializer; mypy passes with two ignores.", None, "g", 1, 1, 0, 0),
             Turn("g", 1, "user", "why do you keep doing this. stop slapping type: ignore on things, fix the "
                  "actual type.", None, "g", 2, 2, 0, 0)]
    found = OfflineClassifier(True, real_embedder).classify(
        Batch(turns[1:], "cadence", "g", "g", context=turns[:1]), lambda t: []).proposals
    assert [p.category for p in found] == ["corrections"] and "type: ignore" in found[0].text, found
    turns[1] = Turn("g", 1, "user", "stop, fix the actual type on line 44 instead.", None, "g", 2, 2, 0, 0)
    found = OfflineClassifier(True, real_embedder).classify(
        Batch(turns[1:], "cadence", "g", "g", context=turns[:1]), lambda t: []).proposals
    assert found == []  # said once about one line, with no word that it recurs: the fix at hand


def test_two_statements_of_one_pass_without_a_word_of_change_both_hold(tmp_path, real_embedder):
    """"This codebase is all unittest.TestCase …" then "stick with TestCase here even tho i normally prefer pytest
    style": the second agrees with the first, it does not replace it (the names swap, but nothing changed); the two
    sentences say one rule, so they are one memory."""
    workspace, _ = _store_with(tmp_path, "Prefers pytest-style tests with plain asserts over unittest.TestCase.",
                               "user", "coding-preferences")
    said = ("this codebase is all unittest.TestCase, the old harness in runtests.py depends on it. stick with "
            "TestCase here even tho i normally prefer pytest style")
    written_ = _said(workspace, real_embedder, said)
    assert len(written_) == 1 and not written_[0].supersedes, written_
    assert "runtests.py" in written_[0].body and "stick with TestCase here" in written_[0].body, written_


@pytest.mark.parametrize("question, answer, fact", [
    ("Those are CRLF line endings. Are you on Windows?", "yeah windows 11 + wsl2, ubuntu inside",
     "The user is on windows 11 + wsl2, ubuntu inside."),
    ("Which editor do you use?", "neovim, with the lsp set up", "The user uses neovim, with the lsp set up."),
    ("What timezone are you in?", "berlin", "The user is in berlin."),
    ("What's your shell, zsh or fish?", "fish", "The user's shell: fish."),
    ("Should I push?", "yes", ""),
])
def test_an_answer_about_the_person_is_said_whole(question, answer, fact):
    assert answer_fact(question, answer) == fact


def test_the_persons_answer_to_a_question_about_them_is_a_fact(real_embedder):
    """"Are you on Windows?" - "yeah windows 11 + wsl2": starts like a yes to a one-off, but it says who they are."""
    [found] = written("yeah windows 11 + wsl2, ubuntu inside.", real_embedder,
                      before="Those are CRLF line endings from a Windows checkout. Are you on Windows?")
    assert (found.category, found.scope, found.text) == ("user-facts", "user", "The user is on windows 11 + wsl2, "
                                                         "ubuntu inside.")
    assert written("yeah", real_embedder, before="The fix is in. Want me to push it?") == []


def _correction(said: str, embedder) -> list:
    turns = [Turn("g", 0, "assistant", "Fixed it; mypy passes now.", None, "g", 1, 1, 0, 0),
             Turn("g", 1, "user", said, None, "g", 2, 2, 0, 0)]
    return OfflineClassifier(True, embedder).classify(
        Batch(turns[1:], "cadence", "g", "g", context=turns[:1]), lambda t: []).proposals


def test_a_correction_said_over_several_sentences_is_one_memory(real_embedder):
    """"you did the # type: ignore thing again. fix the actual type, dont silence it": what it corrects is in the
    first sentence and what to do in the second; one memory holds both. A question that only says it recurs
    ("why do you keep doing this.") is left out of it."""
    [found] = _correction("mypy is failing on reports/export.py, fix it. you did the # type: ignore thing again. fix "
                          "the actual type or tell me you can't, dont silence it", real_embedder)
    assert found.category == "corrections" and "type: ignore" in found.text and "silence" in found.text, found
    [found] = _correction("stop doing release builds after every edit, it's 50 seconds each time. cargo check is "
                          "enough while we iterate", real_embedder)
    assert "release builds" in found.text and "cargo check" in found.text, found
    [found] = _correction("why do you keep doing this. stop slapping type: ignore on things, fix the actual type.",
                          real_embedder)
    assert not found.text.lower().startswith("why"), found


def test_an_answer_to_a_question_about_the_person_inside_a_longer_turn(real_embedder):
    agent = ("The script calls `brew install openssl@3`, which only works on macOS. Which OS are you on? The Linux "
             "and Windows branches need different packages.")
    [found] = written("win 11 + wsl2, ubuntu 22.04 inside", real_embedder, before=agent)
    assert (found.category, found.scope) == ("user-facts", "user") and "wsl2" in found.text, found


def test_a_rule_applied_to_one_file_next_is_not_part_of_the_rule(real_embedder):
    """"… in all my projects. add them to service.py": the second sentence is the task, and its file must not
    take the personal rule into the repository's store."""
    found = written("personally i want type hints on every function incl private ones, in all my projects not "
                    "just this one. add them to service.py", real_embedder)
    assert [(p.scope, "service.py" in p.text) for p in found] == [("user", False)], found


def test_thats_how_we_do_it_belongs_to_the_rule_before_it(real_embedder):
    found = written("tests go in tests/ mirroring the package layout. thats how we do it everywhere in this project",
                    real_embedder)
    assert len(found) == 1 and "tests/" in found[0].text, found


def test_a_numbered_next_step_is_a_task():
    assert never_durable("next: add logging to the refund flow, there are print()s all over refunds.py")
    assert not never_durable("next time always run the linter before you commit")


def test_a_rule_taken_back_as_it_is_said_gives_way_to_the_one_said_next(real_embedder):
    """"errors are anyhow everywhere in this crate— wait no. anyhow only in src/main.rs, …": the first is not
    written, and the second, the rule as meant, is written even if the heads alone find it unsure."""
    found = written("the config loader returns Box<dyn Error>, clean that up. errors are anyhow everywhere in this "
                    "crate— wait no. anyhow only in src/main.rs, the lib side is one thiserror enum per module",
                    real_embedder)
    assert [("thiserror" in p.text, "everywhere" in p.text) for p in found] == [(True, False)], found


def test_a_repository_cue_in_another_language_marks_a_standing_rule():
    assert generalises("Y ojo: en este repo los DTOs son records de Java")


def test_how_the_agent_explains_is_the_persons_even_said_of_this_codebase(real_embedder):
    [found] = written("when you explain changes give me the full reasoning, i'm still learning this codebase and "
                      "want to understand why", real_embedder)
    assert found.scope == "user", found


def test_sentences_of_one_turn_that_say_one_rule_are_one_memory(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "The user prefers dark themes.", "user", "coding-preferences")
    said = ("no no. the convention is: values.yaml only holds defaults that are identical in every env, anything "
            "env-specific lives in values-staging.yaml / values-prod.yaml. no env conditionals in templates. move it")
    [memory] = _said(workspace, real_embedder, said)
    assert "values-prod.yaml" in memory.body and "conditionals" in memory.body, memory.body
    # two rules on two subjects in one turn stay two
    written_ = _said(workspace, real_embedder, "we use pnpm for installs in this repo. never commit .env files")
    assert len(written_) == 2, written_


@pytest.mark.parametrize("sentence, never", [
    ("stm32 sensor node fw: I need UART RX via DMA with a ring buffer so we stop dropping bytes at 921600.", True),
    ("i need you to always run the linter before you commit", False),
    ("Hallo, ich brauch eine Migration für die neue Spalte `kuendigungsdatum`", True),
    ("No corras el pipeline entero hoy que tarda dos horas, solo el paso de limpieza", True),
    ("as of today we use uv for everything", False),
    ('ERR_PNPM_OUTDATED_LOCKFILE Cannot install with "frozen-lockfile" because pnpm-lock.yaml is not up to date', True),
    ("`just bench` fails for me with \"fish: Unsupported use of '='.", True),
    ('it fails with "unknown flag" so always use the long form of the flags', False),
    ("New screen NotificationSettings: toggles for push / email / sms, persisted per user", True),
    ("the macros blow up on scala 3.4 with our opaque types in three other services", True),
    ("New model + migration for webhook_deliveries: id, endpoint_id (fk webhook_endpoints), payload, status", True),
    ("Need to bump the gke node pool in envs/prod from e2-standard-4 to n2-standard-8", True),
    ("new services: always use tapir, no hand-written routes", False),
    ("not in general tho, they catch real stuff", True),
    ("you must have used --no-verify or something", True),
    ("this is the val mask overlay, the boundaries are off by a few pixels everywhere", True),
    ("Need a migration adding `refund_reason LowCardinality(String)` to events.payments.", True),
    ("pre-commit takes like 40s on every commit now, its driving me nuts", True),
    ("cloned the repo and ./scripts/build.sh obviously does nothing", True),
    ("disk on ch-2 is at 87%", True),
    ("keep every unit test under 2s, and use 100% branch coverage on src/billing", False),
    ("/api/events/?offset=480000&limit=50 takes 9 seconds in prod. ok, limit/offset was a mistake for tables this "
     "size. we're going cursor based: CursorPagination on created_at everywhere", False),
])
def test_reports_specs_and_todays_instructions_are_not_rules(sentence, never):
    """What the person needs built now, what failed and how, pasted tool output, and what holds only today."""
    assert never_durable(sentence) is never


def test_changing_my_mind_on_the_thing_replaces_it(tmp_path, real_embedder):
    workspace, terse = _store_with(tmp_path, "Wants terse answers: code first, no explanations.", "user", "user-facts")
    said = ("yes revert. and ok, changing my mind on the terse thing: when you touch infra (k8s, helm, terraform) give "
            "me 2-3 sentences on what you changed and why before the diff. code-only is still fine for everything else")
    written_ = _said(workspace, real_embedder, said)
    replaced = [m for m in written_ if m.supersedes]
    assert [m.supersedes for m in replaced] == [(terse.id,)], written_
    assert replaced[0].body.startswith("When you touch infra"), replaced[0].body  # no "changing my mind" preamble


def test_a_decision_said_as_final_is_an_architectural_decision(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "The user prefers dark themes.", "user", "coding-preferences")
    said = ("fyi marta made the call last week and it's final: endpoints are defined with tapir and the openapi spec "
            "is generated from them")
    [memory] = _said(workspace, real_embedder, said)
    assert (memory.category, memory.scope) == ("architectural-decisions", "repo"), memory


def test_a_rule_pointing_at_its_own_words_is_not_lost_to_the_task_before_it():
    from forgemem.capture.classify.fragments import _merge_fragments
    from forgemem.capture.classify.units import units

    turn = ("next: I need to add a default to events.source (200M rows, pg16 so it's metadata-only). every DDL on prod "
            "goes in a transaction with SET lock_timeout = '3s' first, thats the rule here, so write it like that")
    assert len(_merge_fragments(units(turn))) == 2


@pytest.mark.parametrize("sentence, scope", [
    ("every keymap gets a desc, in all my plugins", "user"),
    ("Aquí no usamos tailwind y no lo vamos a meter.", "repo"),
    ("hier nutzen wir nur Gradle Kotlin DSL", "repo"),
])
def test_scope_cues_for_the_persons_own_things_and_here_in_other_languages(sentence, scope):
    assert scope_for(sentence, "coding-preferences", 0.9, True)[0] == scope


def test_switched_to_a_tool_of_the_same_kind_replaces_it_even_named_again(tmp_path, real_embedder):
    workspace, vscode = _store_with(tmp_path, "Uses VS Code as editor", "user", "user-facts")
    said = "and pls stop giving me vscode menu steps, i switched to neovim a month ago (gopls + bufls through lspconfig)"
    written_ = _said(workspace, real_embedder, said)
    assert [m.supersedes for m in written_] == [(vscode.id,)], written_


@pytest.mark.parametrize("seed, said", [
    ("Spark jobs run on EMR, secrets via boto3 from Secrets Manager",
     "fyi the project is off EMR, everything runs on databricks since october"),
    ("Generator: Unix Makefiles.",
     "i rewrote CMakePresets.json, every preset uses Ninja Multi-Config now and the Makefiles presets are deleted"),
    ("CI runners: ubuntu-22.04, pinned.",
     "while youre at it move every workflow to ubuntu-24.04, 22.04 is whats been biting us. 24.04 pinned is the "
     "standard, not latest"),
])
def test_implicit_changes_against_terse_seeds_replace_them(tmp_path, real_embedder, seed, said):
    workspace, old = _store_with(tmp_path, seed, "repo", "project-conventions")
    written_ = _said(workspace, real_embedder, said)
    assert [m.supersedes for m in written_] == [(old.id,)], written_


@pytest.mark.parametrize("said", [
    "and keep answers short, 3-4 lines unless i ask for the deep dive",
    "honestly you can stop explaining every change in detail, I read the diff.",
])
def test_how_the_agent_talks_to_the_person_is_about_the_person(tmp_path, real_embedder, said):
    workspace, _ = _store_with(tmp_path, "Repo uses pnpm.", "repo", "project-conventions")
    [memory] = _said(workspace, real_embedder, said)
    assert (memory.category, memory.scope) == ("user-facts", "user"), memory


def test_a_change_of_mind_in_the_pass_keeps_the_kind_of_what_it_replaces(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "The user prefers dark themes.", "user", "coding-preferences")
    capturer = Capturer(workspace, RecallEngine(workspace, embedder=real_embedder))
    turns = [Turn("g", 0, "user", "log everything to wandb, project `seg-lora`", None, "g", 0, 0, 0, 0),
             Turn("g", 1, "assistant", "Done.", None, "g", 1, 1, 0, 0),
             Turn("g", 2, "user", "oh and actually we moved off wandb last month, the company won't pay for seats "
                  "anymore. log to the self-hosted MLflow at http://mlflow.internal:5000 instead", None, "g", 2, 2, 0, 0),
             Turn("g", 3, "assistant", "Okay.", None, "g", 3, 3, 0, 0)]
    [memory] = capturer.run(Batch(turns, "cadence", "g", "g")).written
    assert "MLflow" in memory.body and memory.category == "project-conventions", memory


@pytest.mark.parametrize("sentence, never", [
    # the work at hand in other shapes
    ("ok so this one is billing-invoice-paid-events then", True),
    ("setting up the repo on my new work laptop, bear with me", True),
    ("the export test fails maybe 1 in 5 runs, can you take a look", True),
    ("explain why the docker image rebuilds every time", True),
    ("hmm not sure, let me check with the team first", True),
    ("migration to add archived_at to projects, nullable", True),
    # ... and the same words beside a rule that holds from now on
    ("this one is the naming scheme from now on: <team>-<entity>-events", False),
    ("explain the reasoning behind every change, always", False),
    ("not sure we need it, but always add an index on foreign keys in this repo", False),
])
def test_one_thing_of_the_work_at_hand_is_not_a_rule(sentence, never):
    assert never_durable(sentence) is never


@pytest.mark.parametrize("turn", [
    "ah, y a partir de ahora respóndeme siempre en español",
    "e per favore rispondimi sempre in italiano, anche nelle prossime sessioni",
    "from now on english answers please, my team reads these",
    "para que lo sepas: trabajo en Windows con WSL2, así que dame rutas de linux",
])
def test_the_language_of_answers_and_the_persons_setup_are_facts_about_them_in_any_language(real_embedder, turn):
    assert [(p.category, p.scope) for p in written(turn, real_embedder)] == [("user-facts", "user")]



@pytest.mark.parametrize("sentence, standing", [
    ("ok let's go with that: soft deletes via deleted_at for users and orders", True),
    ("we decided in the review: one reconciler per controller", True),
    ("decision: postgres full text search, no elasticsearch", True),
    ("let's go with that", False),  # a yes to the proposal: decided on what the agent proposed, not on these words
])
def test_a_decision_said_as_one_clears_the_standing_bar(sentence, standing):
    from forgemem.capture.classify.learned import _STANDING_RULE

    assert bool(_STANDING_RULE.search(sentence)) is standing


@pytest.mark.parametrize("said", [
    "that fails for me, i use nushell, not bash. please give me nushell syntax in the future.",
    "I'm on Windows. Always give me PowerShell commands for Windows.",
    "i use helix now. give me helix keybindings, not vscode ones",
])
def test_the_persons_setup_and_what_it_means_for_the_work_are_one_fact(said, real_embedder):
    """Said in one turn, "i'm on fish" and "give me fish syntax" are one fact about the person, not a fact and a
    preference kept apart."""
    [fact] = written(said, real_embedder)
    assert fact.category == "user-facts" and fact.scope == "user", fact


def test_two_facts_about_the_persons_setup_stay_two(real_embedder):
    assert len(written("im on macos (m2). i use neovim, not vscode", real_embedder)) == 2


@pytest.mark.parametrize("sentence", [
    "the data team complains they can't read our parquet files",
    "support keeps complaining about the retry emails.",
])
def test_someones_complaint_is_the_reason_for_a_change_not_a_rule(sentence, real_embedder):
    assert never_durable(sentence)
    assert not written(sentence, real_embedder), sentence


def test_a_complaint_said_with_what_to_do_is_a_rule():
    assert not never_durable("support keeps complaining about the emails, so always send them from noreply@")


def test_the_setup_fact_joined_to_a_preference_keeps_the_change_it_says():
    """"give me fish syntax. i switched to fish, zsh is gone": joined into one fact, it still replaces the zsh memory
    (the join kept the first sentence's "new" beside the second's target)."""
    from forgemem.capture.classify import Proposal
    from forgemem.capture.classify.one_pass import _one_thought

    turn = Turn("g", 1, "user", "…", None, "g", 2, 2, 0, 0)
    preference = Proposal("Give the user fish syntax.", "coding-preferences", "user", turn=turn,
                          quote="give me fish syntax")
    fact = Proposal("The user switched to fish; zsh is gone.", "user-facts", "user", relation="supersedes",
                    target="mem_zsh", turn=turn, quote="i switched to fish, zsh is gone")
    [one] = _one_thought([preference, fact], lambda a, b: 0.0)
    assert (one.category, one.relation, one.target) == ("user-facts", "supersedes", "mem_zsh")
    assert "fish syntax" in one.text and "zsh is gone" in one.text
