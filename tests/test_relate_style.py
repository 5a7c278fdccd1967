"""Code is formatted one way at a time (forgemem/capture/classify/relate_style.py): tabs or spaces and how many,
single or double quotes, semicolons or none, trailing or leading commas, SQL keywords' case; pull requests are merged
one way and commit messages written one way; a project's base branch, date and id formats, pagination, table names and
the language of its comments hold one at a time. A statement of another
way replaces the memory of the same store that holds the old one, through `relate` as capture calls it; an exception
for one language or kind of file, a case added, the same way said again and another store's memory are not replaced.

Similarities are real all-MiniLM-L6-v2 cosines, as capture computes them."""

from __future__ import annotations

import pytest

from forgemem.capture.classify.relate import Candidate, relate
from forgemem.capture.classify.relate_style import style_change


@pytest.fixture(scope="module")
def ask(real_embedder):
    def ask_(old: str, said: str, *, scope: str = "repo", old_scope: str = "repo"):
        vectors = real_embedder.encode([said, old])
        candidate = Candidate(old, "project-conventions", old_scope, float(vectors[0] @ vectors[1]), id="m0")
        relation, index, _ = relate(said, said, "project-conventions", scope, [candidate])
        return relation, index

    return ask_


CHANGES = [
    # said plainly, with no word of change: the way said is the way now
    ("Indent with tabs.", "4 spaces for indentation please"),
    ("Indentation: 2 spaces.", "use tabs for indentation"),
    ("Indentation: 2 spaces.", "4 spaces please, 2 is unreadable on my screen"),
    ("Strings use single quotes.", "double quotes for strings, like the backend"),
    ("Always end statements with semicolons.", "no semicolons, standard style"),
    ("SQL: trailing commas, keywords uppercase.", "leading commas in sql, easier diffs"),
    ("SQL keywords uppercase.", "keywords lowercase, the linter wants that"),
    ("Merge PRs with squash merges only.", "rebase and merge for PRs, keeps the history bisectable"),
    ("PRs are squash merged.", "regular merge commits for PRs, we want the individual commits"),
    ("Commit messages are short sentences, no type prefixes.", "conventional commits for this repo"),
    ("Commits follow Conventional Commits (feat:, fix:).", "plain imperative sentences for commit messages, no prefix"),
    ("Feature branches merge into main.", "PRs target develop, main only gets release merges"),
    ("API datetimes are unix timestamps (int seconds).", "ISO 8601 strings in UTC for every datetime in the API"),
    ("Primary keys are uuid v4.", "new tables get ulid primary keys"),
    ("List endpoints use limit/offset pagination.", "cursor based pagination for list endpoints"),
    ("Table names are plural (users, orders).", "singular table names for new tables"),
    ("Code comments in German.", "code comments in English, we have two new devs"),
    ("Absolute imports only.", "relative imports inside a package from now on"),
    ("Components use default exports.", "named exports only, no default exports"),
    ("API response fields are snake_case.", "json keys in camelCase for the api"),
    ("Use promise chains with .then().", "async/await everywhere, no .then chains"),
    # and with one
    ("Indent with tabs.", "ok we give up on tabs, 4 spaces from now on"),
]


@pytest.mark.parametrize("old,said", CHANGES, ids=[s for _, s in CHANGES])
def test_another_way_of_formatting_replaces_the_memory(ask, old, said):
    assert ask(old, said) == ("supersedes", 0)


KEPT = [
    ("Indent with tabs.", "spaces in yaml files of course, yaml does not allow tabs"),  # an exception for yaml
    ("Makefiles: tabs.", "2 spaces for python"),  # another kind of file
    ("Indent with 2 spaces.", "also tabs in Makefiles, make needs them"),  # a case added
    ("Indent with tabs.", "tabs, not spaces, like always"),  # the same way said again
    ("Indent with 2 spaces.", "the tabs component on the settings page is broken"),  # not about indentation
    ("Squash migrations per app before merging.", "no, don't squash"),  # not how pull requests are merged
    ("Merge PRs with squash merges only.", "squash this one pls, it's a mess"),  # a task, no way said
    ("PRs go into main.", "the main thing is to keep the api stable"),  # "main" not said of a branch
    ("Primary keys are bigserial.", "uuid for the public id, the serial pk stays"),  # the old way kept beside
    ("API error messages are in English.", "code comments in English from now on"),  # another kind of text
    ("Components are PascalCase.", "file names kebab-case"),  # another kind of name
    ("Use promise chains with .then().", "await the save before redirecting"),  # a step, not a way
]


@pytest.mark.parametrize("old,said", KEPT, ids=[s for _, s in KEPT])
def test_an_exception_a_case_added_or_the_same_way_replaces_nothing(old, said):
    assert style_change(said, "repo", [Candidate(old, "project-conventions", "repo", 0.3, id="m0")]) is None


def test_a_way_of_the_other_store_is_not_replaced(ask):
    assert ask("user likes tabs for indentation", "this repo uses 2 spaces", old_scope="user")[0] != "supersedes"
