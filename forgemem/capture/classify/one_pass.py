"""Statements of one capture pass that change one another.

A change of mind inside one pass ("use structlog … actually no, stdlib logging") is
written once, as its final statement: it replaces what the earlier statement replaced,
and its provenance quotes both, so nothing said and taken back minutes later is left in
the store; two sentences of one turn that replace the same memory are one memory; the
same statement said twice is written once; a change said again in a later turn of the
pass (the same memory replaced, nothing of the earlier taken back) is one memory too.
"""

from __future__ import annotations

import re

from forgemem.capture.classify import Proposal
from forgemem.capture.classify.change_words import (
    _DECIDED,
    _GOES,
    _SAYS_A_CHANGE,
    _SAYS_THE_NEW,
    _names_in,
    dropped_names,
)
from forgemem.capture.classify.scope import _HOW_TO_TALK, _REPO_CUE, _USER_CUE
from forgemem.capture.transcripts import Turn

QUOTE_CHARS = 160


def _quote(sentence: str, limit: int = QUOTE_CHARS) -> str:
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _similarity(embedder):
    """cosine(a, b) of the embedding vectors; word overlap without a model."""
    if embedder is None:
        return _overlap

    def cosine(a: str, b: str) -> float:
        vectors = embedder.encode([a, b])
        return float(vectors[0] @ vectors[1])

    return cosine


def _one_change(earlier: Proposal, later: Proposal, turns: bool = True) -> bool:
    """Whether two proposals are one change said in two sentences: the same memory replaced (and, with `turns`,
    in the same turn)."""
    return ((not turns or (earlier.turn is not None and earlier.turn is later.turn))
            and earlier.relation == later.relation == "supersedes"
            and earlier.target is not None and earlier.target == later.target and earlier.scope == later.scope
            and len(earlier.text) + len(later.text) <= JOINED_CHARS)


#: the longest text two sentences of one change are joined into
JOINED_CHARS = 600


def _joined(first: str, second: str, said: str) -> str:
    """"A." + "B." -> "A; b." (the second's first word kept as it was said: "uv add", not "Uv add")."""
    from forgemem.capture.classify.rules.clauses import _decap

    word = second.split(" ", 1)[0]
    if word.lower() != word and re.search(rf"\b{re.escape(word.lower())}\b", said):
        second = word.lower() + second[len(word):]
    return f"{first.rstrip().rstrip('.')}; {_decap(second.strip())}"


#: words that take back what was just said, anywhere in a sentence that says nothing new ("hmm. 4 more plus the
#: saga... ok no, forget it, too much churn")
_TAKES_BACK = re.compile(r"\b(?:forget (?:it|that|about it|what i said|everything i said)|never ?mind|scratch that|"
                         r"on second thought|i take (?:it|that) back|(?:ok|okay),? no\b|wait,? no\b|no,? wait\b)", re.I)


def _not_taken_back(proposals: list[Proposal], said: list[tuple[str, Turn]], turns: list[Turn]) -> list[Proposal]:
    """The proposals but the last rule of the person's turn before a sentence of `said` (every sentence of the
    pass, with its turn) that takes it back: "lets move global state to zustand going forward" … "ok no, forget it,
    too much churn": taken back within the pass."""
    kept = list(proposals)
    asked = [t for t in turns if t.role == "user"]
    taking_back = [turn for sentence, turn in said if _TAKES_BACK.search(sentence)]
    for turn in (turn for i, turn in enumerate(taking_back) if all(turn is not t for t in taking_back[:i])):
        n = asked.index(turn)
        dropped = next((p for p in reversed(kept) if p.turn is asked[n - 1]), None) if n > 0 else None
        if dropped is not None:
            kept.remove(dropped)
            # ... and what the turn that takes it back would replace for the words of taking back ("hmm wait, no.
            # release-please builds the changelog from those prefixes. keep conventional commits, forget what i
            # said"): they take back what was said in this pass, not a memory of the store
            kept = [p for p in kept if not (p.turn is turn and p.relation == "supersedes"
                                            and _TAKES_BACK.search(p.quote) and not _SAYS_THE_NEW.search(p.quote))]
    return kept


def _kept_by_the_pass(said: str, turn: Turn, relation: str, target: str | None, proposals: list[Proposal]) -> bool:
    """A weak change of mind is kept when it drops a rule said earlier in the pass ("actually no, scrap the double
    quotes thing"), or when its turn already replaced the memory it replaces ("… and bump line-length to 100")."""
    dropped = dropped_names(said)
    return any(_names_in(p.text, dropped) or (relation == "supersedes" and p.turn is turn and p.target == target)
               for p in proposals)


#: a word of where a rule holds ("in all my projects", "in this repo")
_SCOPE_SAID = re.compile(f"{_USER_CUE.pattern}|{_REPO_CUE.pattern}", re.I)


#: a sentence that says what the one before it means: "that also means …", "which means …"
_SAYS_WHAT_IT_MEANS = re.compile(r"^\W*(?:(?:and|so)\s+)?(?:that|this|which|it) (?:also |then )?means\b", re.I)


def _latest_only(proposals: list[Proposal], similarity) -> list[Proposal]:
    """A change of mind inside one pass: only the later statement is written.

    It supersedes what the earlier one would have (the memory from before the pass
    both replace) and its provenance quotes the earlier one. The same statement said
    twice is written once.
    """
    from forgemem.capture.classify.relate import Candidate, _said_to_go
    from forgemem.capture.classify.relate import relate as decide_relation
    from forgemem.capture.classify.relate_person import person_change

    kept: list[Proposal] = []
    for proposal in proposals:
        if kept and kept[-1].turn is not None and kept[-1].turn is proposal.turn and _SAYS_WHAT_IT_MEANS.match(
                proposal.text):
            # "moving to cloudflare pages … that also means server code has to run on workers from here on": what the
            # change means, said after it, is part of it (not a change of the change)
            _join(kept[-1], proposal, "the next sentence of the same turn, which says what it means")
            continue
        same = next((e for e in kept if _one_change(e, proposal)), None)
        if same is not None:
            # two sentences of one turn replacing the same memory state one change ("use uv instead of poetry,
            # … so uv add / uv sync from now on, no more poetry"): one memory, or the second, a fragment,
            # would replace the first
            _join(same, proposal, "the next sentence of the same turn, which replaces the same memory")
            continue
        instead = next((e for e in kept if _what_comes_instead(e, proposal)), None)
        if instead is not None:
            _join(instead, proposal, "the next sentence of the same turn, which says what comes instead")
            continue
        joined = False
        # the statements said earlier, the nearest first, but one whose names this one drops before all
        # ("use structlog …" … "every other service uses python-json-logger …" … "scrap structlog, use stdlib")
        dropped = dropped_names(proposal.quote)
        earlier_ones = sorted(reversed(kept), key=lambda e: not _names_in(e.text, dropped))
        for earlier in earlier_ones:
            candidate = Candidate(earlier.text, earlier.category, earlier.scope,
                                  similarity(earlier.text, proposal.text))
            relation, index, _ = decide_relation(proposal.text, proposal.quote, proposal.category, proposal.scope,
                                                 [candidate])
            if relation != "supersedes" and _names_in(earlier.text, dropped_names(proposal.quote)) and (
                    earlier.scope == proposal.scope or not _SCOPE_SAID.search(f"{earlier.quote} {proposal.quote}")):
                # what it says goes is what was said earlier in the pass ("use double quotes for all strings" …
                # "scrap the double quotes thing. single quotes …"): replaced, even when the two were guessed into
                # different stores; said with a word of where, the two may both hold (a repo's exception to a
                # personal rule)
                relation, index = "supersedes", 0
            elif (relation == "supersedes" and not _SAYS_A_CHANGE.search(proposal.quote)
                  and person_change(proposal.quote, proposal.scope, [candidate]) != 0):
                # two statements of one pass with no word of a change between them ("this codebase is all
                # TestCase" … "stick with TestCase here"): both hold, the later does not replace the earlier (a
                # value of the person changed says so: "réponds-moi en français" … "mejor respóndeme en español")
                relation = "relates-to"
            elif relation == "supersedes" and _agrees(earlier, proposal, candidate):
                # what goes was already turned down by the earlier rule ("dags don't go in the root dags/ folder …"
                # … "the root one is legacy and the deploy only syncs the team folders"): its reason, not a change
                relation = "relates-to"
            if (relation != "duplicate" and _one_change(earlier, proposal, turns=False)
                    and not _swaps(proposal, candidate)):
                # a later turn of the pass replacing the same memory and taking nothing of the earlier back: the
                # same change said again in other words ("maria changed her mind, merge commits again" … "just
                # don't squash anything from now on"): one memory, or both would be current
                _join(earlier, proposal, "a later turn of this pass, which replaces the same memory")
                joined = True
                break
            if index is None:
                continue
            if relation == "duplicate":
                kept.remove(earlier)
                break
            if relation == "supersedes" and proposal.relation == "supersedes" and proposal.target and not (
                    earlier.relation == "supersedes" and earlier.target == proposal.target):
                # it replaces a memory written before this pass ("we're going back to prettier" replaces the
                # biome rule): linked to a remark said just before instead ("biome mangles our .svelte files",
                # which only refines that rule), the replaced rule would stay current
                continue
            if relation == "supersedes":
                # only the final statement is written: it takes over what the earlier replaced, and its
                # provenance quotes both
                kept.remove(earlier)
                if (earlier.relation != "supersedes" and proposal.relation != "supersedes"
                        and (_GOES.search(proposal.quote) or _said_to_go(proposal.quote))
                        and not _SAYS_THE_NEW.search(proposal.quote) and not _SAYS_MORE.search(proposal.quote.strip())):
                    # ... unless it only takes the earlier back, in one sentence ("oh and prefix everything with acme-
                    # ... no actually forget the prefix, the account already scopes it"): neither is a rule ("scrap the
                    # double quotes thing. single quotes unless …" says the new one after it)
                    joined = True
                    break
                if earlier.relation == "supersedes" and earlier.target and proposal.relation != "supersedes":
                    proposal.relation, proposal.target = "supersedes", earlier.target
                if earlier.scope == proposal.scope and not _DECIDED.search(proposal.quote):
                    # ... and keeps its kind, as a new version of a stored memory does ("log everything to wandb" …
                    # "we moved off wandb …, log to MLflow instead": the project's convention still)
                    proposal.category = earlier.category
                proposal.quote = _quote(f"{earlier.quote} … {proposal.quote}", 2 * QUOTE_CHARS)
                proposal.reason += f"; replaces “{earlier.quote}”, said earlier in this pass (not written)"
                break
        if not joined:
            kept.append(proposal)
    return kept


#: a sentence after the first: what comes instead may be said there
_SAYS_MORE = re.compile(r"[.!?;]\s+\S")


#: "use X …", said right after what goes: what comes instead ("and use msw for mocking" adds a rule of its own)
_USE_INSTEAD = re.compile(r"^\W*(?:(?:so|just|now|then|pls|please)\W+)*use\b|\binstead\b(?! of\b)|"
                          r"\b(?:we're|we are|i'm|i am|let's|lets) (?:going|gonna go) with\b", re.I)


def _what_comes_instead(earlier: Proposal, later: Proposal) -> bool:
    """Whether a new rule says what replaces the memory the sentence before it in the same turn dropped: "we
    cancelled LaunchDarkly, flags live in our own feature_flags table now" … "use `isEnabled(…)` from src/flags"."""
    return (later.relation == "new" and earlier.relation == "supersedes" and earlier.turn is not None
            and earlier.turn is later.turn and earlier.scope == later.scope and bool(_USE_INSTEAD.match(later.quote))
            and len(earlier.text) + len(later.text) <= JOINED_CHARS)


def _agrees(earlier: Proposal, later: Proposal, candidate) -> bool:
    """Whether the later statement of a pass says, in a word of change, what a negative rule said just before it
    already holds: no name, kind or number swapped, nothing said to go that the earlier one keeps, and no flip
    from the negative to the positive."""
    from forgemem.capture.classify.relate import _FLIP, features
    from forgemem.capture.classify.relate_language import _negative

    return (earlier.turn is not None and earlier.turn is later.turn and _negative(earlier.text)
            and not features(later.text, later.quote, later.category, later.scope, candidate)[_FLIP]
            and not _swaps(later, candidate) and not dropped_names(later.quote))


def _swaps(later: Proposal, earlier) -> bool:
    """Whether the later statement takes something of the earlier back: a name, a kind of tool or a number
    swapped, or its words said to go ("use X instead of W" … "actually Y")."""
    from forgemem.capture.classify.relate import _FAMILY_SWAP, _NAME_SWAP, _NEGATED, _NUMBER_CHANGE, features
    from forgemem.capture.classify.relate_language import _negated
    from forgemem.capture.classify.relate_person import person_change
    from forgemem.names import _side

    x = features(later.text, later.quote, later.category, later.scope, earlier)
    if x[_NUMBER_CHANGE] or x[_NEGATED]:
        return True
    if person_change(later.quote, later.scope, [earlier]) == 0:
        return True  # a value of the person changed: "réponds-moi en français" … "answer in english"
    # a name the earlier statement held (not one it turned down itself: "not fixing heroku stuff anymore, use
    # Fly.io") and the later one no longer names ("fly deploy" names fly.io)
    now = _side(f"{later.quote}\n{later.text}").names
    held = [n for n in _side(earlier.text).names if not _negated(earlier.text, n)]
    gone = [n for n in held if n not in now and not any(m.split(".")[0] == n.split(".")[0] for m in now)]
    return bool(gone) and bool(x[_NAME_SWAP] or x[_FAMILY_SWAP])


#: two sentences of one turn this close (cosine of their rules) say one rule (`_one_thought`). Chosen on the development
#: sets: at 0.3 they wrote 384 -> 372 memories and lost 2 of 294 correct ones (two rules of one turn on one subject:
#: "nada de print para depurar … y en las llamadas al logger nada de f-strings"); at 0.2, 363 and 3 more lost
ONE_THOUGHT_AT = 0.3


#: ... or this close when both name the same thing ("`make check` is our single entry point for lint + tests" … "CI and
#: humans both only ever call make check, so wire everything into it": 0.26)
ONE_NAMED_THOUGHT_AT = 0.2


#: the person's setup: one of each at a time
_SETUP_KINDS = frozenset({"shell", "editor", "os"})


def _setup_named_again(a: str, b: str) -> bool:
    """Whether both name the same shell, editor or OS ("i'm on fish" … "give me fish syntax": the name read as one in
    either, said in both)."""
    from forgemem.names import _families, _names

    return any(_families({name}) & _SETUP_KINDS and all(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.I)
                                                       for text in (a, b))
               for name in _names(a) | _names(b))


def _name_shared(a: str, b: str) -> bool:
    """Whether a tool, path or code span one names is in the other's words too."""
    from forgemem.names import _names

    return any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", other, re.I)
               for text, other in ((a, b), (b, a)) for name in _names(text) if len(name) > 2)


#: a sentence that opens by adding one more thing: another rule ("… build.gradle.kts. Und Versionen gehören nie …")
_ADDS_ONE = re.compile(r"^\W*(?:and|also|plus|oh and|btw|one more thing|another thing|und|auch|außerdem|y|también|"
                       r"además|et|aussi|e|inoltre|en|ook)\b", re.I)


#: a sentence that opens by saying the rule before it holds in every repository of the person's
_SAME_EVERYWHERE = re.compile(r"^\W*(?:(?:and|oh|btw|also)\W+)*(?:(?:that'?s|thats|it'?s|this is) )?(?:the )?same (?:in|for|"
                              r"across) (?:every|all|any) (?:of my )?(?:repos?|repositories|projects?)\b", re.I)


#: a bare "no …" fragment of at most NO_FRAGMENT_WORDS words: "no console, no cli.", "Also bitte kein
#: terraform.workspace im Code." ("never commit .env files" after "we use pnpm for installs" is a rule of its own:
#: "never" says a way of working)
_NO_MORE_THAN_A_NO = re.compile(r"^\W*(?:(?:and|also|so|oh|also bitte|bitte|y|et|e)\W+)*(?:no|nothing|kein\w*|nichts|"
                                r"nada de|ningún|ninguna|sin|pas de|aucun\w*|niente|nessun\w*)\b", re.I)
NO_FRAGMENT_WORDS = 7


def _one_thought(proposals: list[Proposal], similarity) -> list[Proposal]:
    """Sentences of one turn that say one rule are one memory: "values.yaml only holds defaults … no env
    conditionals in templates", "my shell is fish, always … no `export FOO=bar &&`, no `source …`".

    Only next to each other, on the same subject, changing the same memory (or none): a change of mind and the new
    rule said beside it stay two ("jest is gone … use msw for mocking"), and so do facts about the person, each a
    fact of its own ("im on macos (m2), i use neovim").
    """
    kept: list[Proposal] = []
    for proposal in proposals:
        last = kept[-1] if kept else None
        if (last is not None and last.turn is not None and last.turn is proposal.turn
                and last.target in (proposal.target, None) and last.scope == proposal.scope == "user"
                and "user-facts" in (last.category, proposal.category) and _setup_named_again(last.text, proposal.text)):
            # the person's shell, editor or OS and what it means for the work: "i'm on fish, not bash. give me fish
            # syntax whenever you hand me shell stuff" is one fact about them (each of the
            # 15 memories naming fish in the development sets is one user-facts memory)
            _join(last, proposal, "what the person's setup means for the work")
            last.category = "user-facts"
            if last.target is None:  # the later sentence replaces a memory: the one memory does
                last.target, last.relation = proposal.target, proposal.relation
            continue
        if (last is not None and last.turn is not None and proposal.turn is not None
                and last.turn.path == proposal.turn.path and 0 <= proposal.turn.index - last.turn.index <= 2
                and proposal.target is None and last.target is None
                and last.category != "user-facts" and _SAME_EVERYWHERE.match(proposal.quote)):
            # "always rebase onto main before opening a PR" … (its turn or the next) "same in every repo, i like a
            # linear history": the scope of the rule before it, with its reason; the rule is the person's
            _join(last, proposal, "the next turn, which says it holds in every repository")
            if last.scope == "repo":
                last.scope = "user"
                last.category = "coding-preferences" if last.category in ("project-conventions",
                                                                          "architectural-decisions") else last.category
            continue
        if (last is not None and last.turn is not None and last.turn is proposal.turn and proposal.target is None
                and last.category != "user-facts" and _NO_MORE_THAN_A_NO.match(proposal.quote)
                and len(proposal.quote.split()) <= NO_FRAGMENT_WORDS):
            # "every route53 change goes through the dns stack in tofu. no console, no cli.": what the rule before it
            # rules out, said bare, is more of that rule, in its store (written as rules of their own, such fragments
            # were expected as none: 3 of 3 in development sets 2-25, 2 of 2 in dev 31)
            _join(last, proposal, "the bare 'no …' after it, which says what the rule rules out")
            continue
        if (last is not None and last.turn is not None and last.turn is proposal.turn
                and last.target in (proposal.target, None) and last.scope == proposal.scope
                and ("user-facts" not in (last.category, proposal.category)
                     or (last.category == proposal.category == "user-facts"
                         and (_HOW_TO_TALK.search(last.quote) or _HOW_TO_TALK.search(proposal.quote))))
                and not _ADDS_ONE.match(proposal.quote)
                and similarity(last.text, proposal.text) >= (ONE_NAMED_THOUGHT_AT if _name_shared(last.text, proposal.text)
                                                             else ONE_THOUGHT_AT)):
            # (how the person wants answers, and why, is one fact: "your short answers keep skipping the why … give me
            # the full reasoning from now on"; and the first of the two, which only relates to the answer-style memory,
            # is more of the change the second makes: the joined memory replaces that memory)
            _join(last, proposal, "the next sentence of the same turn, on the same rule")
            if proposal.relation == "supersedes" != last.relation:  # (the earlier one only related to it, or nothing)
                last.target, last.relation, last.category = proposal.target, proposal.relation, proposal.category
            continue
        kept.append(proposal)
    return kept


def _join(earlier: Proposal, later: Proposal, why: str) -> None:
    earlier.text = _joined(earlier.text, later.text, later.quote)
    earlier.quote = _quote(f"{earlier.quote} … {later.quote}", 2 * QUOTE_CHARS)
    earlier.reason += f"; with {why}"


def _overlap(a: str, b: str) -> float:
    wa, wb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0
