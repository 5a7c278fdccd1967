"""One sentence at a time: split, filler stripped, the subject made explicit, told apart as rule or reason."""

from __future__ import annotations

import re

from forgemem.capture.classify.rules.filler import (
    _ASIDE,
    _INLINE_FILLER,
    _LEAD_FILLER,
    _LIKE_FILLER,
    _PREAMBLE,
    _TIME_ANCHOR,
    _TRAILING_FILLER,
)
from forgemem.capture.classify.rules.patterns import (
    _CONTRACTIONS,
    _FIRST_PERSON,
    _HERE_AT_END,
    _I_VERB,
    _IMPERATIVE_START,
    _MODAL,
    _REASON_START,
    _REPO_WORDS,
    _SHOUTED,
    _STARTS,
    _USER_STARTS,
    _WE_ELSEWHERE,
    _WE_GERUND,
    _WE_MODAL,
    _WE_VERB,
    _WE_VERB_ELSEWHERE,
)
from forgemem.capture.classify.rules.protect import _PH_OPEN
from forgemem.capture.classify.rules.verbs import _base, _third_person


def _cap(text: str) -> str:
    """Upper-case the first letter, unless the first word is code, a path or a lower-case name (npm, dbt)."""
    text = text.lstrip()
    if not text or text.startswith(_PH_OPEN):
        return text
    first = text.split(" ", 1)[0]
    if (first[:1].islower() and not re.search(r"[A-Z]|[./_]|\d", first[1:])
            and re.search(r"[aeiouy]", first.lower())):
        return text[0].upper() + text[1:]
    return text


_COMMON_START = re.compile(
    r"^(?:the|a|an|it|it's|its|this|that|these|those|every|each|all|any|no|not|never|always|only|do|does|"
    r"there|there's|they|you|your|and|but|so|if|when|whenever|in|on|for|with|without|once|then|also|"
    r"anything|everything|nothing|someone|everyone|nobody|everybody|somebody|one|two|three|some|most|new|old|our|my|"
    r"except|unless|until|before|after|otherwise|even)\b"
)


def _decap(text: str) -> str:
    """Lower-case the first letter of a clause that now follows "; " (common words and verbs, not names)."""
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].islower() and (
        _COMMON_START.match(first.lower()) or _IMPERATIVE_START.match(first.lower())
    ):
        return text[0].lower() + text[1:]
    return text


# ------------------------------------------------------------------ sentences


_SPLIT = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\bcf)(?<!\bapprox)([.!?]+)\s+(?=\S)|\n+")


def _sentences(text: str) -> list[str]:
    parts: list[str] = []
    last = 0
    for m in _SPLIT.finditer(text):
        piece = text[last:m.start()]
        if m.group(1) and "?" in m.group(1):
            piece += "?"
        parts.append(piece)
        last = m.end()
    parts.append(text[last:])
    return [p.strip() for p in parts if p and p.strip(" .!")]


def _strip_filler(clause: str) -> str:
    # "… dir pls dont put them …": a please in the middle starts a new instruction
    clause = re.sub(r"(?<=\w)(?<!\byou)(?<!\bto)\s+(?:please|pls|plz)\s+"
                    r"(?=(?:do not|don't|dont|never|always|use|avoid|keep|make|stop|put|add|run|only|no)\b)",
                    "; ", clause, flags=re.I)
    previous = None
    while previous != clause:
        previous = clause
        clause = _LEAD_FILLER.sub("", clause).strip()
        rest = _PREAMBLE.sub("", clause).strip()
        # (a sentence that is only the preamble, "I've changed my mind on the code-only answers thing.", stays whole)
        clause = clause if re.fullmatch(r"\W*(?:(?:the|that|this)\s+)?(?:thing|rule|bit|part|one|stuff|idea)?\W*", rest,
                                        re.I) else rest
    clause = _INLINE_FILLER.sub("", clause)
    clause = _LIKE_FILLER.sub(" ", clause)
    clause = _TIME_ANCHOR.sub("", clause)
    clause = _ASIDE.sub("", clause)
    previous = None
    while previous != clause:
        previous = clause
        clause = _TRAILING_FILLER.sub("", clause).strip()
    clause = re.sub(r"\s+([,;:.!?)])(?=\s|$)", r"\1", clause)
    clause = re.sub(r"\(\s+", "(", clause)
    clause = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", clause)
    clause = re.sub(r"^[\s,;:.!-]+", "", clause)
    return re.sub(r"\s{2,}", " ", clause).strip(" ,;:-")


def _gerund_start(clause: str) -> str:
    """"(always) running X" → "(Always) run X" after "would you mind"."""
    m = re.match(r"^((?:always|never|also|only) )?([a-z]+ing)\b", clause, re.I)
    if m and m.group(2).lower() not in ("nothing", "everything", "something", "anything", "string", "thing"):
        return (m.group(1) or "") + _base(m.group(2)) + clause[m.end():]
    return clause


def _start(clause: str) -> tuple[str, bool]:
    """Rewrite how a clause begins: "I prefer" → "The user prefers", "we use X" → "Use X", "let's …" → "…"."""
    done = False
    for pattern, replacement in _USER_STARTS:
        m = pattern.match(clause)
        if m:
            clause = replacement + clause[m.end():]
            done = True
            break
    if not done:
        for pattern, replacement in _STARTS:
            m = pattern.match(clause)
            if not m:
                continue
            if replacement == "_switch":
                what, old, new = m.group(1), m.group(2).strip(), m.group(3).strip()
                named = what and what.lower() not in ("over", "everything", "all")
                head = f"Use {new} for {what}" if named else f"Use {new}"
                clause = f"{head}, not {old}" + clause[m.end():]
            else:
                clause = m.expand(replacement) + clause[m.end():]
                if not replacement:
                    again, _ = _start(clause)  # "we decided to go with X" → "go with X" → "Use X"
                    clause = again
            done = True
            break
    if not done:
        m = re.match(r"^(?:stop|quit) ([a-z]+ing)\b", clause, re.I)
        if m and m.group(1).lower() not in ("thing", "string"):
            clause = "Do not " + _base(m.group(1)) + clause[m.end():]
            done = True
    if not done:
        m = _WE_GERUND.match(clause)
        if m and m.group(1).lower() not in ("going", "thinking", "trying", "planning", "hoping", "having", "getting"):
            clause = _base(m.group(1)) + clause[m.end():]
            done = True
    if not done and _WE_VERB.match(clause):
        m = _WE_MODAL.match(clause)
        modal = (m.group(1) or "").lower().split()
        rest = clause[m.end():]
        if not clause.lower().startswith("we"):  # "the team uses pnpm" -> "use pnpm"
            verb, _, after = rest.partition(" ")
            rest = f"{_plain(verb)} {after}".strip()
        words = []
        if any(w in ("never",) for w in modal):
            words.append("never")
        elif any(w in ("don't", "dont", "not") for w in modal):
            words.append("do not")
        elif "always" in modal:
            words.append("always")
        elif "only" in modal:
            words.append("only")
        if "usually" in modal or "generally" in modal:
            words.insert(0, "usually" if "usually" in modal else "generally")
        clause = " ".join(words + [rest])
        done = True
    return clause, done


def _plain(verb: str) -> str:
    """The base form of a third-person verb: uses -> use, pushes -> push, carries -> carry."""
    low = verb.lower()
    if not low.endswith("s") or low.endswith("ss"):
        return verb
    if low.endswith("ies"):
        return verb[:-3] + "y"
    if low.endswith(("sses", "xes", "ches", "shes", "zes", "oes")):
        return verb[:-2]
    return verb[:-1]


_INNER_WE = re.compile(r"[,;:]\s+(?=(?:we|let's|let us|the team)\b)", re.I)
_SUBORDINATE = re.compile(r"^\s*(?:because|since|as|so|if|when|whenever|while|although|though|unless|until|and|but)\b",
                          re.I)


def _subject(clause: str, scope: str) -> str:
    """Make the subject explicit: first person → the user; we/let's → imperative or the project."""
    clause, _ = _start(clause)
    # "no more Poetry, we moved to uv": a later clause that starts with "we" is a rule of its own
    for m in reversed(list(_INNER_WE.finditer(clause))):
        before = re.split(r"[,;:]\s+", clause[: m.start()])[-1]
        if _SUBORDINATE.match(before):
            continue
        tail, done = _start(clause[m.end():])
        if done:
            clause = clause[: m.end()] + _decap(tail)
    # first person anywhere
    clause = _I_VERB.sub(lambda m: "the user " + m.group(1) + _third_person(m.group(2)), clause)
    for pattern, replacement in _FIRST_PERSON:
        clause = pattern.sub(replacement, clause)
    # "we" further in
    if scope == "repo" or re.search(r"\bwe\b|\bour\b", clause, re.I):
        for pattern, replacement in _WE_ELSEWHERE:
            clause = pattern.sub(replacement, clause)
        clause = _WE_VERB_ELSEWHERE.sub(
            lambda m: "the project " + m.group(1) + _third_person(m.group(2)), clause
        )
    clause = re.sub(r"\b(the project|the user) (\w+) \1's own\b",
                    lambda m: f"{m.group(1)} {m.group(2)} {'its' if m.group(1) == 'the project' else 'their'} own",
                    clause)
    clause = re.sub(r"^(The user prefers [^,;]+?) (?:better|more) than\b", r"\1 over", clause)
    # "the project already runs Redis and do not want …": the second verb keeps the subject's person
    clause = re.sub(r"(\bthe (?:project|user) [^;,.]*?\band) do not\b", r"\1 does not", clause)
    clause = re.sub(r"^the user\b", "The user", clause)
    clause = re.sub(r"\bthe user is the user's\b", "the user is their own", clause)
    return clause


def _repo_words(clause: str, scope: str) -> str:
    for pattern, replacement in _REPO_WORDS:
        clause = pattern.sub(replacement, clause)
    if scope == "repo" and "repository" not in clause.lower():
        clause = _HERE_AT_END.sub(" in this repository", clause, count=1)
    return clause


_CONCLUSION = re.compile(
    r"^(?:so|anyway|anyways|long story short|tl;?dr|bottom line|in short|point is|the point is|"
    r"what i want is|what i'm asking is|going forward|from now on)\b", re.I
)


#: a sentence that drops the old choice ("we no longer use black", "we moved off Jenkins"): the rule that
#: follows it ("from now on format with ruff format instead") is only whole with it
_DROPS_CHOICE = re.compile(
    r"\b(?:no longer (?:use|using)|(?:are|'re) not using|stop(?:ped)? using|moved? (?:off|away from)|"
    r"moving (?:off|away from)|switch(?:ed|ing)? (?:away )?from|got rid of|ditch(?:ed)?|dropp(?:ed|ing))\b", re.I)


def _is_strong_rule(clause: str) -> bool:
    return bool(_IMPERATIVE_START.match(clause) or re.search(r"\b(?:always|never|must|should|do not)\b", clause, re.I))


def _is_rule(clause: str) -> bool:
    return bool(_IMPERATIVE_START.match(clause) or _MODAL.search(clause))


def _is_reason(clause: str) -> bool:
    return bool(_REASON_START.match(clause)) and not _IMPERATIVE_START.match(clause)


def _colon_reason(clause: str) -> str:
    """"Use X, not Y: Y is too slow in CI" → "Use X, not Y (Y is too slow in CI)"."""
    m = re.match(r"^(.{8,}?):\s+(.+)$", clause)
    if not m:
        return clause
    left, right = m.group(1), m.group(2)
    if _is_rule(left) and _is_reason(right) and not _is_rule(right):
        return f"{left} ({right.rstrip('.')})"
    return clause


def _expand(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(lambda m, r=replacement: r if not (m.group(0)[:1].isupper() and r == "do not") else "Do not",
                           text)
    text = _SHOUTED.sub(lambda m: m.group(0).lower().replace("dont", "do not").replace("don't", "do not"), text)
    return text
