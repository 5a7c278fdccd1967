"""The rewrite: a user's turn to one standalone rule (`rule_text`), composed, finished and kept short."""

from __future__ import annotations

import re

from forgemem.capture.classify.rules.clauses import (
    _CONCLUSION,
    _DROPS_CHOICE,
    _cap,
    _colon_reason,
    _decap,
    _expand,
    _gerund_start,
    _is_reason,
    _is_rule,
    _is_strong_rule,
    _repo_words,
    _sentences,
    _strip_filler,
    _subject,
)
from forgemem.capture.classify.rules.cleanup import _EMOJI, _FOREIGN_FILLER, _flatten, _language
from forgemem.capture.classify.rules.confirm import _is_offer, _proposal_rule, _reply_addition, _resolve_pointing
from forgemem.capture.classify.rules.filler import _CHATTER, _LEAD_FILLER, _REQUEST_LEAD, _TASK_LEAD
from forgemem.capture.classify.rules.patterns import _ACCEPT, _IMPERATIVE_START
from forgemem.capture.classify.rules.protect import _PH_CLOSE, _PLACEHOLDER, _PROTECT, _protect, _restore

#: a task joined to a standing rule in one sentence
_TASK_THEN_RULE = re.compile(
    r"^(?:add|fix|refactor|make|create|implement|update|write|remove|rename|move|clean up|set up|bump|build|"
    r"regenerate|migrate|port|split|merge|deploy|finish|ship)\b(?:(?!\b(?:always|never|from now on|going forward)\b)"
    r"[^.;])*?,? and (?:also |then )?((?:from now on|going forward|in (?:the )?future|always|never)\b.+)$", re.I)


def _rewrite_sentence(sentence: str, scope: str, context: str) -> str:
    clause = _strip_filler(sentence)
    if not clause:
        return ""
    # "Since we never use X, can you fix …?": the rule is the reason given for the request
    m = re.match(r"^(?:since|as|because|given that) (.+?),\s*(?:can|could|would|will) you\b.*\?$", clause, re.I)
    if m:
        clause = m.group(1)
    m = re.match(r"^(?:would you mind|do you mind)\s+(.+?)\??$", clause, re.I)
    if m:
        clause = _gerund_start(m.group(1))
    clause = _REQUEST_LEAD.sub("", clause).strip().rstrip("?")
    clause = _TASK_LEAD.sub("", clause).strip()
    # "refactor the auth module and from now on type-hint public functions": the task is not the rule
    m = _TASK_THEN_RULE.match(clause)
    if m:
        clause = m.group(1)
    clause = _expand(clause)
    clause = _strip_filler(clause)
    if not clause:
        return ""
    clause = _resolve_pointing(clause, context)
    clause = _subject(clause, scope)
    clause = _repo_words(clause, scope)
    clause = re.sub(r"\b(?:when|if|whenever) you write ([\w\- ]+?) for the user\b", r"when writing \1", clause,
                    flags=re.I)
    clause = _colon_reason(clause)
    clause = re.sub(r"\s+([,;:.!?)])(?=\s|$)", r"\1", clause)
    clause = re.sub(r"\s{2,}", " ", clause).strip(" ,;:-")
    clause = re.sub(r"[!]+$", "", clause)
    clause = re.sub(r"\.+$", "", clause)
    return clause


def _compose(clauses: list[str]) -> str:
    """The first clause leads; later rules join with "; ", later reasons go in parentheses."""
    rules: list[str] = []
    reasons: list[str] = []
    for clause in clauses:
        if not clause:
            continue
        if rules and _is_reason(clause) and not _is_rule(clause):
            reasons.append(_decap(clause))
        else:
            rules.append(clause if not rules else _decap(clause) if not clause.startswith("The user") else
                         "the user" + clause[len("The user"):])
    if not rules:
        return ""
    text = _cap(rules[0])
    for clause in rules[1:]:
        text = text.rstrip(":") + (" " if text.endswith(":") else "; ") + clause
    if reasons:
        text += " (" + "; ".join(r.strip("() ") for r in reasons) + ")"
    return text


def _finish(text: str) -> str:
    """Tidy spaces and punctuation, capitalise, end with a full stop; code spans are left alone."""
    text, kept = _protect(text)
    text = re.sub(r"\s+\(\s*\)(?=[\s,.;:]|$)", "", text)  # what filler left of "(btw lol)", not a call ("print()")
    text = re.sub(r"\s{2,}", " ", text).strip(" ,;:-")
    text = re.sub(r"\s+([,;:.!?)])(?=\s|$)", r"\1", text)
    text = re.sub(r"\.\s*\)", ")", text)
    text = re.sub(r"([.;,:])\1+", r"\1", text)
    text = re.sub(r"[!?]+$", "", text).rstrip(" ,;:")
    if not text:
        return text
    text = _cap(text)
    last = _PLACEHOLDER.search(text[-24:]) if text.endswith(_PH_CLOSE) else None
    held = kept[int(last.group(2))] if last and int(last.group(1)) == kept.ns else ""
    if not re.search(r"[.!?…]$", text) and not held.startswith("```") and not held.endswith((".", "!", "?")):
        text += "."
    return _restore(text, kept)


def _limit(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    # drop the parenthesised reasons first, then cut at a word boundary
    short = re.sub(r"\s*\([^()]*\)\.$", ".", text)
    if len(short) <= budget:
        return short
    end = max(1, budget - 1)
    for span in _PROTECT.finditer(short):  # never cut into a code span, a path or a token
        if span.start() < end < span.end():
            end = span.start()
    cut = short[:end]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


def _foreign(text: str) -> str:
    """German, Spanish, French: kept in their language (no translation offline); filler and emoji removed."""
    held, kept = _protect(text)
    held = _EMOJI.sub("", held)
    previous = None
    while previous != held:
        previous = held
        held = _FOREIGN_FILLER.sub(lambda m: " " if m.start() else "", held).strip(" ,;:")
    held = re.sub(r"\s+([,;:.!?)])(?=\s|$)", r"\1", held)
    return _finish(_restore(re.sub(r"\s{2,}", " ", held), kept))


#: a conclusion that points back at what was said before it ("from now on any new script gets it too") is not the story's
#: end: what it points at is the rule
_POINTS_BACK_AT_END = re.compile(r"\b(?:gets?|needs?|uses?|has|have|does|do|follows?|with|like) (?:it|that|this|them|those)"
                                 r"(?: too| as well)?\W*$", re.I)


_SAID_BEFORE_BUT = re.compile(r"^(?:\W*(?:ok|okay|so|yeah|hmm+|look)\W+)*i know (?:i|we) said (?P<old>[^,.;]{1,40}?),? "
                              r"but (?:now )?(?P<new>.{3,})$", re.I)


def rule_text(sentence: str, *, category: str, scope: str, context: str = "", proposal: str = "") -> str:
    """The memory a later session can act on: one standalone statement.

    `sentence` is the user's words judged durable (one sentence or a short turn);
    `category` one of coding-preferences, project-conventions, architectural-decisions,
    user-facts, corrections; `scope` repo or user. `context` is the preceding assistant
    turn: a correction that points back ("don't do that") says what "that" was when the
    turn says it briefly, and a bare "yes" to a question or offer there is read as a
    confirmation of it. `proposal`, for a confirmation, is the agent's proposal the
    user accepted: the rule then comes from the proposal, plus what the reply adds.

    English comes out imperative ("Use uv, not poetry (poetry was too slow in CI).") or
    in the third person ("The user prefers …", "The user's shell is fish."); code spans,
    names, paths and flags verbatim; a reason the user gave kept; filler removed. German,
    Spanish and French stay in their language (nothing is translated offline), with
    their filler removed. Deterministic, no network, no model. Never empty; at most
    1.3 × the input (sentence, plus proposal when one is used) + 40 characters.
    Raises ValueError for a blank sentence.
    """
    if not sentence or not sentence.strip():
        raise ValueError("rule_text needs a non-empty sentence")
    del category  # the wording follows the words, not the label; kept for the classifier's call
    scope = "repo" if scope == "repo" else "user"
    budget = int(1.3 * len(sentence)) + 40
    fallback = _finish(re.sub(r"\s+", " ", _EMOJI.sub("", sentence)).strip()) or sentence.strip()

    flat = _flatten(sentence.strip())
    if _language(flat) != "en":
        out = _foreign(flat)
        return _limit(out, budget) if out else _limit(fallback, budget)

    # "i know i said tabs but the team wants spaces" -> "the team wants spaces, not tabs"
    flat = _SAID_BEFORE_BUT.sub(lambda m: f"{m.group('new').rstrip(' .!')}, not {m.group('old')}", flat.strip())
    if not proposal and context and _ACCEPT.match(flat.strip()) and _is_offer(context):
        # a yes to the preceding question or offer; but "ok, and from now on always …" after
        # "Should I fix the test?" states its own rule: the offer must be a standing one, or
        # the reply must add no rule of its own
        remainder = _strip_filler(_ACCEPT.sub("", flat.strip()))
        standing = re.search(r"\b(?:from now on|going forward|in (?:the )?future|always|never|every|all|each|any|"
                             r"default|standard|convention|rule|whenever|by default)\b", context, re.I)
        if standing or not remainder.split() or not (len(remainder.split()) >= 3 or _is_strong_rule(remainder)):
            proposal = context  # (a yes that says more to a one-off offer is about its own words)
        else:
            flat = remainder
    if proposal and proposal.strip():
        proposal = re.sub(r"```.*?(?:```|\Z)", " ", proposal, flags=re.S)  # the agent's code is no part of the rule
        rule = _proposal_rule(proposal, scope)
        if rule:
            budget += int(1.3 * len(proposal))
            addition = _reply_addition(flat, rule)
            if addition:
                joiner = ", " if re.match(r"^(?:with|without|but|except|using|via|in|on|for|plus|including)\b",
                                          addition, re.I) else "; "
                rule = rule.rstrip(" .") + joiner + addition
            return _limit(_finish(rule), budget)

    held, kept = _protect(flat)
    held = re.sub(f"(?:{_EMOJI.pattern})+\\s+(?=[a-z])", ". ", held)  # an emoji between two thoughts ends the first
    held = _EMOJI.sub("", held)
    pieces = _sentences(held)
    kept_pieces = []
    for p in pieces:
        light = _LEAD_FILLER.sub("", p.strip()).strip().rstrip(".!?")
        if re.fullmatch(r"(?:always|never)\W*", light, re.I) and kept_pieces:
            # "parameterized queries. always." — the modality belongs to the sentence before it
            before = kept_pieces[-1]
            if not re.search(r"\b(?:always|never)\b", before, re.I):
                verb = "" if _IMPERATIVE_START.match(_strip_filler(before)) else "use "
                kept_pieces[-1] = f"{light.lower()} {verb}{_strip_filler(before)}"
            continue
        if _CHATTER.match(light or "ok") or re.match(r"^(?:thanks|thank you|thx|ty)\b", p.strip(), re.I) \
                or _CHATTER.match(_strip_filler(p).rstrip(".!?") or "ok"):
            continue
        kept_pieces.append(p)
    questions = [p for p in kept_pieces if p.rstrip().endswith("?")]
    if questions and len(questions) < len(kept_pieces):
        # a question riding along ("can you fix them?") unless it states the rule ("since we never …, can you …?")
        kept_pieces = [p for p in kept_pieces if not p.rstrip().endswith("?")
                       or re.match(r"^(?:since|as|because|given that|would you mind|do you mind|"
                                   r"(?:can|could|would) you(?: please)? (?:always|never|make sure))\b",
                                   _LEAD_FILLER.sub("", p.strip()), re.I)]
    for i, p in enumerate(kept_pieces):
        if i and _CONCLUSION.match(p.strip()) and not _POINTS_BACK_AT_END.search(p) and not any(_is_strong_rule(_strip_filler(q)) or _DROPS_CHOICE.search(q)
                                                          for q in kept_pieces[:i]):
            kept_pieces = kept_pieces[i:]  # the story before "so, …" / "anyway, …" / "long story short, …"
            break
    if not kept_pieces:
        kept_pieces = pieces
    # "parameterized queries. always." — a lone modality word belongs to the sentence before it
    clauses = [_rewrite_sentence(p, scope, context) for p in kept_pieces]
    clauses = [c for c in clauses if c]
    text = _compose(clauses)
    text = _finish(_restore(text, kept))
    if not text or not re.search(r"\w", text):
        text = fallback if re.search(r"\w", fallback) else sentence.strip()
    return _limit(text, budget)
