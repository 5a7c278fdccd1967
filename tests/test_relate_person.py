"""What a person has one of at a time (forgemem/capture/classify/relate_person.py): where they are, the language
and the kind of answers they want, their editor, OS and shell. A new statement of theirs with another value
replaces the memory of the user store holding the old one, through `relate` as capture calls it; a trip, a second
value, an exception for some answers, another person's place and a project's rule replace nothing.

Similarities are real all-MiniLM-L6-v2 cosines, as capture computes them."""

from __future__ import annotations

import pytest

from forgemem.capture.classify.relate import Candidate, relate
from forgemem.capture.classify.relate_person import person_change


@pytest.fixture(scope="module")
def ask(real_embedder):
    def ask_(olds: list[tuple[str, str]], said: str, *, scope: str = "user", category: str = "user-facts"):
        vectors = real_embedder.encode([said] + [text for text, _ in olds])
        candidates = [Candidate(text, "user-facts", old_scope, float(vectors[0] @ vectors[i + 1]), id=f"m{i}")
                      for i, (text, old_scope) in enumerate(olds)]
        relation, index, _ = relate(said, said, category, scope, candidates)
        return relation, (candidates[index].id if index is not None else None)

    return ask_


CHANGES = [
    # where they are: a city, a country or a time zone for another
    ("Lives in Seattle (Pacific time).", "heads up, i relocated to Amsterdam last month"),
    ("User is in CET (Berlin).", "im in new york now so schedule things on eastern time"),
    ("Based in Sydney.", "i'm based in auckland these days"),
    # ... by a zone's IANA name or offset, and in the language the person writes in
    ("User is in Lisbon (Europe/Lisbon).", "ahora estoy en America/Bogota, ojo con los horarios"),
    ("User is in Munich (CET).", "ich wohne jetzt in Hamburg, gleiche Zeitzone aber"),
    ("Timezone: CET.", "i'm on UTC+2 now"),
    # the language of answers, said in either language
    ("Answer in English.", "antworte mir ab jetzt bitte auf deutsch"),
    ("responde siempre en español", "switch to english answers please, my team reads these"),
    # how long, and in what form
    ("Wants long, detailed explanations.", "i just want the short version now, code first"),
    ("Prefers answers as bullet points.", "please write your answers in plain paragraphs for me"),
    # the tools they work with, said as theirs now
    ("Editor: Sublime Text.", "i'm on helix these days, so skip the sublime keybindings"),
    ("Uses zsh.", "my shell is nushell now"),
]


@pytest.mark.parametrize("old,said", CHANGES, ids=[s for _, s in CHANGES])
def test_another_value_of_the_same_slot_replaces_the_memory(ask, old, said):
    assert ask([(old, "user")], said) == ("supersedes", "m0")


def test_the_memory_of_the_same_slot_is_replaced_among_others(ask):
    store = [("Editor: VS Code.", "user"), ("Lives in Lisbon (WET).", "user"), ("Answer in English.", "user")]
    assert ask(store, "fyi i moved to madrid in september")[1] == "m1"
    assert ask(store, "i'm on neovim now, forget the vscode stuff")[1] == "m0"


KEPT = [
    # a trip, not a move
    ("Lives in Lisbon.", "i'm in berlin this week for a conference, answers might be slow"),
    # a second value, not another one
    ("Editor: VS Code.", "i also use vim for quick edits on servers"),
    # an exception for some answers, not a new default
    ("Wants terse answers, no explanations.", "when you touch the rust lifetimes stuff, explain it to me in detail"),
    # another person's place
    ("User is in Berlin (CET).", "my colleague in toronto owns the billing service"),
]


@pytest.mark.parametrize("old,said", KEPT, ids=[s for _, s in KEPT])
def test_a_trip_a_second_value_an_exception_or_someone_else_replaces_nothing(ask, old, said):
    assert person_change(said, "user", [Candidate(old, "user-facts", "user", 0.3, id="m0")]) is None
    assert ask([(old, "user")], said)[0] != "supersedes"


def test_a_project_rule_never_replaces_how_the_person_wants_answers():
    old = [Candidate("antworte auf Deutsch", "user-facts", "user", 0.3, id="m0")]
    assert person_change("write commit messages in english", "repo", old) is None
    assert person_change("write commit messages in english", "user", old) is None  # not the language of answers


def test_only_a_memory_of_the_user_store_is_replaced():
    old = [Candidate("The team is based in Berlin.", "project-conventions", "repo", 0.4, id="m0")]
    assert person_change("i moved to lisbon", "user", old) is None
