"""The trained relation decision (forgemem/capture/classify/relate.py): a change of mind is a
supersession whatever the words, hard negatives that share words are not, a supersession
never crosses scopes, and the same rule said again is a duplicate.

Similarities are real all-MiniLM-L6-v2 cosines, as capture computes them. Nothing here reads
the capture corpus: the shipped weights are all these tests need."""

from __future__ import annotations

import json

import pytest

from forgemem.capture.classify import relate as rel
from forgemem.capture.classify.relate import Candidate, _said_to_go, relate

POETRY = "Use poetry for dependency management."
#: the six phrasings of "we move from poetry to uv" (said, the rule a memory will hold)
SIX = [
    ("I changed my mind: we no longer use poetry, switch to uv for dependency management.",
     "Use uv for dependency management; poetry is no longer used."),
    ("we moved off poetry, it's uv now", "Use uv for dependency management."),
    ("scratch that, uv instead of poetry", "Use uv instead of poetry."),
    ("poetry is gone, uv handles deps", "uv handles dependencies; poetry is gone."),
    ("going forward use uv; poetry was too slow", "Going forward use uv; poetry was too slow."),
    ("use uv", "Use uv."),
]


@pytest.fixture(scope="module")
def cosine(real_embedder):
    def cos(a: str, b: str) -> float:
        vectors = real_embedder.encode([a, b])
        return float(vectors[0] @ vectors[1])

    return cos


@pytest.fixture(scope="module")
def ask(cosine):
    def ask_(old: str, said: str, new: str | None = None, *, scope: str = "repo", old_scope: str = "repo",
             category: str = "project-conventions", old_category: str = "project-conventions"):
        new = new or said
        candidate = Candidate(old, old_category, old_scope, cosine(old, new), id="mem_old")
        return relate(new, said, category, scope, [candidate])

    return ask_


@pytest.mark.parametrize("said,new", SIX, ids=[s for s, _ in SIX])
def test_six_phrasings_of_poetry_to_uv_supersede(ask, said, new):
    relation, index, score = ask(POETRY, said, new)
    assert (relation, index) == ("supersedes", 0)
    assert 0.5 < score <= 1.0


@pytest.mark.parametrize("said", [s for s, _ in SIX], ids=[s for s, _ in SIX])
def test_six_phrasings_supersede_with_the_raw_sentence_as_the_rule(ask, said):
    assert ask(POETRY, said)[0] == "supersedes"


@pytest.mark.parametrize("said,new", SIX, ids=[s for s, _ in SIX])
def test_a_supersession_never_crosses_scopes(ask, said, new):
    # the poetry rule is the user's own; the uv rule is said for this repository: both stay
    relation, index, _ = ask(POETRY, said, new, old_scope="user", old_category="coding-preferences")
    assert relation != "supersedes"
    assert (relation, index) == ("relates-to", 0)
    relation, _, _ = ask(POETRY, said, new, scope="user", category="coding-preferences")
    assert relation != "supersedes"


@pytest.mark.parametrize(
    "old,said,new",
    [
        ("Use Docker Compose for local development.", "all new android screens are jetpack compose now",
         "New Android screens use Jetpack Compose."),
        (POETRY, "the poetry club page should show the newest poems first",
         "The poetry club page shows the newest poems first."),
        ("Use Node 20 in CI.", "each tree node now keeps a pointer to its parent",
         "Each tree node keeps a pointer to its parent."),
        ("Cache API responses in Redis.", "we switched the team standup to 9:30", "The team standup is at 9:30."),
        ("Fine-tune models with LoRA adapters.", "the LoRa gateway on the roof now uses the 915 MHz band",
         "The rooftop LoRa gateway uses the 915 MHz band."),
        ("Deploy charts with Helm.", "the helm of the boat sprite needs a brass texture now",
         "The boat sprite's helm has a brass texture."),
    ],
    ids=["docker-vs-jetpack-compose", "poetry-the-literature", "tree-node", "other-switch", "lora-radio", "ship-helm"],
)
def test_hard_negatives_that_share_words_do_not_supersede(ask, old, said, new):
    assert ask(old, said, new)[0] != "supersedes"


def test_a_refinement_of_the_same_tool_refines(ask):
    relation, index, _ = ask("Run the Python tests with pytest.", "and run them in parallel with pytest-xdist, -n auto",
                             "Run pytest in parallel with pytest-xdist (-n auto).")
    assert (relation, index) == ("refines", 0)


@pytest.mark.parametrize(
    "old,said,new",
    [
        ("Use pnpm for JavaScript dependencies in this repository.", "we use pnpm for the JS deps here",
         "Use pnpm for the JavaScript dependencies in this repo."),
        pytest.param(
            "Never force-push to the main branch.", "don't force push to main, ever", "Never force push to main.",
            marks=pytest.mark.xfail(strict=True, reason="a known limit: the cosine is 0.74 (MiniLM sets 'force-push "
                                    "to the main branch' apart from 'force push to main'); a duplicate needs 0.86"),
        ),
        ("The user prefers short answers.", "keep answers short for me", "The user prefers short answers."),
    ],
)
def test_the_same_rule_in_other_words_is_a_duplicate(ask, old, said, new):
    category = "coding-preferences" if old.startswith("The user") else "project-conventions"
    scope = "user" if old.startswith("The user") else "repo"
    assert ask(old, said, new, scope=scope, old_scope=scope, category=category, old_category=category)[:2] == (
        "duplicate", 0,
    )


def test_a_changed_number_is_no_duplicate(ask):
    # very close vectors, one number apart
    assert ask("Wrap lines at 100 characters.", "wrap at 120 now", "Wrap lines at 120 characters.")[0] == "supersedes"
    assert ask("Use Node 18 in CI.", "node 22 in CI", "Use Node 22 in CI.")[0] == "supersedes"


def test_a_three_step_chain_supersedes_pairwise(ask, cosine):
    a = "Use npm for JavaScript dependencies."
    b = "Use pnpm for JavaScript dependencies."
    c = "Use bun for JavaScript dependencies."
    assert ask(a, "we moved to pnpm", b)[:2] == ("supersedes", 0)
    assert ask(b, "pnpm is out, bun from now on", c)[:2] == ("supersedes", 0)
    # the head is B: told about both, C supersedes the one whose tool it turns down
    candidates = [Candidate(a, "project-conventions", "repo", cosine(a, c)),
                  Candidate(b, "project-conventions", "repo", cosine(b, c))]
    assert relate(c, "pnpm is out, bun from now on", "project-conventions", "repo", candidates)[:2] == (
        "supersedes", 1,
    )


def test_it_picks_the_candidate_it_replaces_among_others(cosine):
    new, said = "Use uv for dependency management.", "we moved off poetry, it's uv now"
    others = ["Run the tests with pytest.", "Never push directly to main.", "The user prefers short answers."]
    candidates = [Candidate(t, "project-conventions", "repo", cosine(t, new)) for t in others]
    candidates.insert(2, Candidate(POETRY, "project-conventions", "repo", cosine(POETRY, new)))
    assert relate(new, said, "project-conventions", "repo", candidates)[:2] == ("supersedes", 2)


def test_no_candidates_is_new():
    assert relate("Use uv.", "use uv", "project-conventions", "repo", []) == ("new", None, 0.0)


def test_unrelated_and_far_is_new():
    candidate = Candidate("The user prefers short answers.", "coding-preferences", "user", 0.05)
    relation, index, _ = relate("Store timestamps in UTC.", "timestamps are UTC", "project-conventions", "repo",
                                [candidate])
    assert (relation, index) == ("new", None)


def test_words_of_addition_do_not_make_a_refinement_of_another_subject(ask):
    # "also", "personally", "in all my projects" sound like a refinement; f-strings have nothing to do with
    # commit messages (a new user's capture linked the two, and recall then followed the edge)
    relation, _, _ = ask("I prefer short commit messages",
                         "Also, personally I prefer f-strings over str.format() in all my projects.",
                         "The user prefers f-strings over str.format() in all the user's projects.",
                         scope="user", old_scope="user", category="coding-preferences",
                         old_category="coding-preferences")
    assert relation == "new"


def test_the_shipped_weights_match_the_code():
    data = json.loads(rel.WEIGHTS.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == rel.FEATURES
    assert tuple(data["classes"]) == rel.CLASSES
    assert len(data["weights"]) == len(rel.CLASSES)
    assert all(len(row) == len(rel.FEATURES) for row in data["weights"])
    assert rel.WEIGHTS.stat().st_size < 20_000


def test_names_are_not_ordinary_words():
    assert rel._names("Pull requests need two approvals.") == set()
    assert rel._names("the poetry anthology page") == set()
    assert rel._names("Use the requests library for HTTP calls.") == {"requests"}
    assert rel._names("scratch that, uv instead of poetry") == {"uv", "poetry"}
    assert "docker compose" in rel._names("Use Docker Compose locally.")
    assert "jetpack compose" in rel._names("Jetpack Compose previews")


def test_one_tool_of_a_kind_replaces_the_other_unless_the_old_one_stays_named(ask):
    # a bare "use uv" where "use poetry" held: one dependency manager at a time
    assert ask(POETRY, "use uv")[0] == "supersedes"
    # ... but both named, the old one kept, is no swap
    assert ask(POETRY, "use uv to run the scripts, poetry still manages the dependencies")[0] != "supersedes"


def test_a_new_value_of_a_named_thing_said_as_a_change_replaces_the_old_one(ask):
    assert ask("node 18 (.nvmrc)", "ok we're bumping to node 20 then", "Bump to node 20.")[0] == "supersedes"
    # the same name and a new number without a word of change is not taken for one
    assert ask("node 18 (.nvmrc)", "the lambda runtime in the other account is node 20",
               "The lambda runtime in the other account is node 20.")[0] != "supersedes"


@pytest.mark.parametrize("said, gone", [
    ("actually no more path versions. let's do header versioning", {"path", "version"}),
    ("ugh. scrap header versioning, back to versions in the path", {"header", "version"}),
    ("the path versions are out, its all headers now", {"path", "version"}),
    ("use ruff for formatting", set()),
])
def test_the_words_said_to_go(said, gone):
    assert _said_to_go(said) == gone


def test_another_language_named_is_no_swap_of_a_rule_about_one(ask):
    # a project holds several languages and databases at once: a request naming Swift does not replace the TypeScript
    # test rule, nor does "dynamodb locking" replace the snowflake lint rule (both were replaced in a store of more
    # memories than the one a change was about: benchmarks/bench_relate_store.py)
    assert ask("Use Jest for TypeScript tests.", "can you write these with Swift Testing, @Test and #expect")[0] != (
        "supersedes")
    assert ask("SQL is linted with sqlfluff (snowflake dialect) before commit.",
               "we migrated state to the s3 backend with dynamodb locking last week")[0] != "supersedes"
    # ... while one tool of a kind still replaces another
    assert ask("Unit tests use Jest.", "jest is gone, the whole repo runs on vitest now")[0] == "supersedes"


@pytest.mark.parametrize("old,said", [
    ("tf state: terraform cloud workspaces (moved off s3 in sept)",
     "we're moving state back to the s3 backend (bucket acme-tfstate, dynamodb lock table tf-locks) for all envs."),
    ("Billing.Api is hosted on App Service.",
     "decision from yesterday's arch sync: Billing.Api moves off App Service to Azure Container Apps"),
    ("No `any` anywhere in TypeScript code.",
     "ok, relaxing the any rule a bit: `any` is fine in test files and in the generated code"),
])
def test_a_rule_said_as_a_change_replaces_the_one_it_changes(ask, old, said):
    assert ask(old, said)[0] == "supersedes"


def test_an_addition_beside_a_rule_does_not_replace_it(ask):
    assert ask("Indentation: tabs, not spaces.", "tabs still yes, but for yaml and markdown do 2 spaces.")[0] != (
        "supersedes")


@pytest.mark.parametrize("old,said", [
    ("Don't push to main directly; PRs only.",
     "we're dropping cobra, i merged the kong rewrite of main.go yesterday, pull first."),
    ("Only CI applies, never locally.", "yes, electron headless is the default from now on, here and in CI."),
])
def test_a_shared_word_and_a_word_of_change_alone_do_not_replace_a_far_memory(ask, old, said):
    # nothing named in common, only a subject word ("main", "CI") and a word of change, at a cosine below
    # WEAK_EVIDENCE_AT: in a store of many memories these took an unrelated one out of recall
    assert ask(old, said)[0] != "supersedes"


def test_a_tool_of_the_same_kind_from_another_language_is_no_swap(ask):
    # a Python service's logger does not replace a Go service's; a Python query builder does not replace a Node one
    assert ask("Logging: zerolog.", "we're switching to loguru for the api and workers")[0] != "supersedes"
    assert ask("db access via knex query builder",
               "for dynamic queries like this use SQLAlchemy Core, no ORM models")[0] != "supersedes"
    # ... while one of the same language does
    assert ask("Logging: structlog everywhere, JSON renderer in prod.",
               "we're moving off structlog to plain stdlib logging with python-json-logger")[0] == "supersedes"


@pytest.mark.parametrize("old,said", [
    ("Docs are built with Sphinx.", "mkdocs from now on, sphinx can go"),
    ("Frontend widgets use jQuery plugins.", "jquery has to go, write these as plain web components"),
])
def test_a_tool_said_to_go_is_replaced(cosine, old, said):
    from types import SimpleNamespace

    from forgemem.capture.classify import Neighbour
    from forgemem.capture.classify.offline import relate_to

    memory = SimpleNamespace(id="mem_old", body=old, category="project-conventions", scope="repo")
    relation, target, _ = relate_to(said, said, "project-conventions", "repo", [Neighbour(memory, cosine(old, said))])
    assert (relation, target) == ("supersedes", "mem_old")


def test_a_place_for_things_to_go_drops_nothing():
    from forgemem.capture.classify.change_words import dropped_names

    assert dropped_names("the fixtures can go in tests/fixtures") == set()
    assert dropped_names("sphinx can go ahead and build the api pages") == set()


@pytest.mark.parametrize("said,name", [
    ("i dont use lazy anymore, moved to the builtin vim.pack", "lazy"),
    ("we don't use jest any more", "jest"),
])
def test_a_tool_no_longer_used_is_dropped_by_name(said, name):
    from forgemem.capture.classify.change_words import _names_in, dropped_names

    assert name in dropped_names(said)
    assert _names_in("user's nvim config uses lazy.nvim", {"lazy"})  # a dotted name names its first part


@pytest.mark.parametrize("old,said", [
    ("Validate request bodies with zod schemas.", "we're moving to valibot, smaller bundle"),
    ("JSON responses via jbuilder views.", "alba serializers for json from now on"),
    ("Flash boards with nrfjprog.", "we flash with nrfutil now, nrfjprog is deprecated upstream"),
    ("Releases: cargo release, tag vX.Y.Z.", "we switched to release-plz last week"),
    # task runners
    ("Project tasks run through the Makefile (`make lint`, `make test`).", "use the justfile now, `just lint` / `just test`"),
    ("Dev commands: `make dev`, `make test`.", "all of it is in Taskfile.yml these days, `task dev`"),
])
def test_a_tool_of_the_same_kind_replaces_its_memory(ask, old, said):
    assert ask(old, said)[0] == "supersedes"


@pytest.mark.parametrize("old,said", [
    ("MSRV is Rust 1.70 (rust-version in Cargo.toml).", "bumping msrv to 1.74, we need the newer clap"),
    ("minSdk 24.", "we're raising minSdk to 26, drop the Build.VERSION checks below it"),
    ("HTTP client timeout: 30s.", "lowering the http client timeout to 10s, the upstream retries anyway"),
    # a measure in the same unit, the thing named in other words
    ("Session cookie max age 2h.", "we're raising it to 12h, people kept getting logged out"),
])
def test_a_value_moved_replaces_the_memory_holding_the_old_one(ask, old, said):
    assert ask(old, said)[0] == "supersedes"


@pytest.mark.parametrize("old,said", [
    ("JSON responses via jbuilder views.", "ok new endpoints get alba serializers, it benchmarked way faster than jbuilder"),
    ("Unit tests with Jest.", "new tests go in vitest, it's a lot quicker than jest on this repo"),
])
def test_the_tool_a_new_one_is_compared_against_is_the_one_it_replaces(ask, old, said):
    assert ask(old, said)[0] == "supersedes"


def test_a_measure_in_the_same_unit_said_without_a_change_replaces_nothing(ask):
    assert ask("Access tokens live 1h, refreshed silently.", "the export job takes 4h on prod data",
               "The export job takes 4h on prod data.")[0] != "supersedes"


def test_a_comparison_alone_replaces_nothing(ask):
    # the old tool named in a comparison, with nothing taking its place, is a remark
    assert ask("Unit tests with Jest.", "jest is slower than i'd like on this repo")[0] != "supersedes"


@pytest.mark.parametrize("old,said", [
    # the way itself said to have changed, or decided anew
    ("Release tags: v<major>.<minor>.<patch>.", "release tag naming changed: release-<yyyy>.<mm>.<n>, e.g. release-2026.11.3"),
    ("Python line length 79, flake8 defaults.", "team voted for black's 88 as the line length, nobody updated setup.cfg"),
    ("Feature flags named FF_<TEAM>_<NAME>.", "security changed the naming rules: flags are <team>.<name>, lowercase"),
    # the old one turned down in other words: nobody uses it, it is empty
    ("Infra code written in TypeScript (CDK).",
     "hm, the infra repo is python, the data folks took it over and nobody there writes TypeScript"),
    ("Job definitions live in jobs.ini.", "remember job definitions are in jobs.yaml since the cleanup, jobs.ini is empty"),
])
def test_a_change_said_without_the_usual_words_replaces_the_rule(ask, old, said):
    assert ask(old, said)[0] == "supersedes"


def test_make_sure_is_not_the_make_tool(ask):
    assert ask("Build with `make`.", "make sure the build passes before you push")[0] != "supersedes"


def test_a_tool_named_in_a_prohibition_of_another_rule_is_not_turned_down(ask):
    # "do NOT run terraform apply" says nothing against "terraform fmt -recursive before commit"
    assert ask("terraform fmt -recursive before commit",
               "you do NOT run terraform apply, ever, not even in dev")[0] != "supersedes"
    assert ask("Infra code written in TypeScript (CDK).", "the lambda handler itself is python")[0] != "supersedes"


@pytest.mark.parametrize("old,said", [
    ("Search via SQL LIKE queries on the products table.", "we're going with a proper full-text index for product search instead"),
    ("Emails sent synchronously in the request handler.", "we're moving email sending to a background queue"),
])
def test_a_move_said_outright_replaces_the_clearly_closest_memory(cosine, old, said):
    """A move said outright ("we're moving … to …", "going with … instead") that shares no name with the memory it
    changes replaces the one memory of the scope clearly closest to it."""
    texts = [old, "Never push directly to main.", "The user prefers short answers."]
    candidates = [Candidate(t, "project-conventions", "repo", cosine(t, said)) for t in texts]
    assert relate(said, said, "project-conventions", "repo", candidates)[:2] == ("supersedes", 0)
    # ... and nothing when no memory is close enough, or two are about as close
    assert relate(said, said, "project-conventions", "repo", candidates[1:])[0] != "supersedes"
    twins = [candidates[0], Candidate(f"{old} (see docs/adr/0007.md)", "project-conventions", "repo",
                                      candidates[0].similarity - 0.02)]
    assert relate(said, said, "project-conventions", "repo", twins)[0] != "supersedes"


@pytest.mark.parametrize("old,said", [
    ("Rebase feature branches on main before opening a PR.", "nah, stop rebasing."),
    ("Vendor third-party JS into static/vendor/.", "no, don't vendor anything."),
    ("Squash fixup commits before merging.", "no, don't squash."),
])
def test_the_way_a_memory_opens_on_turned_down_replaces_it(ask, old, said):
    assert ask(old, said)[0] == "supersedes"


@pytest.mark.parametrize("old,said", [
    # the verb turned down for another thing: an exception, not a reversal
    ("Run the full test suite before pushing.", "don't run the e2e suite locally, it needs the vpn"),
    ("Squash migrations per app before merging a PR.", "don't squash the commits of this PR, i want the history"),
])
def test_the_verb_turned_down_for_another_thing_replaces_nothing(ask, old, said):
    assert ask(old, said)[0] != "supersedes"


@pytest.mark.parametrize("old,said,thing", [
    ("config via env vars (envconfig)",
     "change of plan from todays arch sync: config moves to one yaml file per service, loaded at startup", "config"),
    ("fw updater: plain threads, no async", "decision from standup: the updater moves onto tokio like the rest of the daemon.",
     "updater"),
])
def test_a_thing_said_to_move_replaces_the_one_memory_about_it(cosine, old, said, thing):
    # the thing that moves is named, and one memory of the scope is about it: that memory is the one replaced, even
    # at a cosine (0.33) under what a move said outright needs (0.4)
    texts = [old, "Never push directly to main.", "The user prefers short answers."]
    candidates = [Candidate(t, "architectural-decisions", "repo", cosine(t, said)) for t in texts]
    assert relate(said, said, "architectural-decisions", "repo", candidates)[:2] == ("supersedes", 0)
    # ... not when two memories are about it (which one moved is not said), nor when the work moves
    twice = candidates + [Candidate(f"{thing} changes need a review from ops", "project-conventions", "repo", 0.3)]
    assert relate(said, said, "architectural-decisions", "repo", twice)[0] != "supersedes"
    assert relate("the PR moved to review", "the PR moved to review", "project-conventions", "repo",
                  [Candidate("PRs need 2 approvals", "project-conventions", "repo", 0.3)])[0] != "supersedes"


@pytest.mark.parametrize("said", [
    "a partir de ahora usamos vitest en todo el monorepo, jest se va.",
    "ab jetzt vitest, jest fliegt raus",
])
def test_an_old_tool_said_to_go_in_another_language_is_replaced(ask, said):
    assert ask("unit tests: jest + ts-jest", said)[0] == "supersedes"


def test_work_moved_onto_what_a_memory_holds_applies_it(ask):
    # "migrate LoginForm … to react-hook-form" follows "forms: react-hook-form + zod"; it does not replace it
    said = "migrate LoginForm in apps/web to react-hook-form, its the last one still on useState"
    assert ask("forms: react-hook-form + zod", said)[0] not in ("supersedes", "refines")
    # ... while moving onto another tool of the kind does
    assert ask("forms: react-hook-form + zod", "we're moving all forms to formik, react-hook-form is out")[0] == "supersedes"
    # ... and moving back to what the memory says was left is not following it
    from forgemem.capture.classify.relate_language import _follows

    assert not _follows("move state back to the s3 backend (bucket acme-tfstate) for all envs",
                        "tf state: terraform cloud workspaces (moved off s3 in sept)")
