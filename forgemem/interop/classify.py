"""Category and scope of imported rules, by capture's offline heads (`capture.classify.learned`).

A rule someone wrote into an instruction file is durable by definition, so only two questions
are asked of it: which category, and which store. Two answers differ from capture's: a rule
read from a file is never a correction (nobody is reacting to an agent's work), and it is a
fact about the user only when it says so ("I …", "my …", "the user …"; exports written in the
third person are exempt). Scope comes from `scope.scope_for` (explicit cues, the repository's
own paths and commands; the repo when unsure) without the content model's guess: a rule written into
a repository's file belongs to the repository unless it says it is personal ("I prefer …", "in all
my projects") or is a fact about the user. Where the file decides, it decides: a personal
instruction file (`~/.claude/CLAUDE.md`) and other tools' memories are the user's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from forgemem.interop.markdown import Rule
from forgemem.store.model import CATEGORIES

_PERSONAL = re.compile(r"\b(?:i|i'm|i've|i'd|my|me|mine|the user(?:'s)?|user's)\b", re.I)
#: the text the heads read: a very long rule is judged on its beginning (the model reads 256 tokens)
_READ = 2000


_THIRD = re.compile(r"^(?:the user |user )?([A-Za-z]+)\b", re.I)
_IRREGULAR = {"is": "am", "has": "have", "was": "was", "does": "do", "doesn't": "don't", "isn't": "am not"}
_OWNED = re.compile(r"^(?:name|favou?rite \w+|\w+ name|email|role|job|time ?zone|location)\b", re.I)


def first_person(text: str) -> str:
    """How the person would say a statement about them that leaves the subject out, for the heads
    (trained on what people say): "Prefers tabs" -> "I prefer tabs", "Name is Alex" -> "My name is Alex".
    Only what is classified changes; the memory keeps the words as they were written."""
    if _OWNED.match(text):
        return "My " + text[0].lower() + text[1:]
    match = _THIRD.match(text)
    if not match:
        return text
    verb = match.group(1).lower()
    if verb in _IRREGULAR:
        said = _IRREGULAR[verb]
    elif verb.endswith("ies") and len(verb) > 4:
        said = verb[:-3] + "y"
    elif verb.endswith(("ches", "shes", "sses", "xes", "zes")):
        said = verb[:-2]
    elif verb.endswith("s") and not verb.endswith("ss") and len(verb) > 2:
        said = verb[:-1]
    else:
        return text
    return f"I {said}{text[match.end():]}"


@dataclass(frozen=True)
class Verdict:
    category: str
    scope: str
    why: str  # for --dry-run and --json: what decided the scope, and how sure the category was


def classify(rules: Sequence[Rule], embedder=None, has_repo: bool = True) -> list[Verdict]:
    """A category and a scope for each rule, in one batch (`embedder`: sentence vectors; None: patterns)."""
    from forgemem.capture.classify.learned import decide, feature_matrix
    from forgemem.capture.classify.scope import scope_for

    if not rules:
        return []
    texts = [first_person(rule.text[:_READ]) if rule.about_user else rule.text[:_READ] for rule in rules]
    kind = "dense" if embedder is not None else "patterns"
    decisions = decide(feature_matrix(texts, embedder), kind, texts)
    verdicts = []
    for rule, text, decision in zip(rules, texts, decisions, strict=True):
        allowed = [c for c in CATEGORIES if c != "corrections"]
        if rule.personal and not _PERSONAL.search(text):
            allowed.remove("user-facts")
        category = decision.best_category(allowed)
        sure = dict(decision.categories).get(category, decision.category_p)
        if rule.scope is not None:
            scope, why = rule.scope, "decided by where it came from (a personal file, another tool's memories)"
        elif not has_repo:
            scope, why = "user", "no repo store"
        else:  # a rule in a repository's file is the repository's unless it says otherwise: cues, not the model
            scope, why = scope_for(text, category, 0.0, has_repo, 0.0)
        verdicts.append(Verdict(category, scope, f"{category} {sure:.2f}; {scope}: {why}"))
    return verdicts
