"""Replies that lean on the agent's turn: "don't do that" and "yes, let's do that"."""

from __future__ import annotations

import re

from forgemem.capture.classify.rules.clauses import (
    _cap,
    _decap,
    _expand,
    _gerund_start,
    _repo_words,
    _sentences,
    _strip_filler,
)
from forgemem.capture.classify.rules.cleanup import _flatten
from forgemem.capture.classify.rules.filler import _LEAD_FILLER, _TIME_ANCHOR
from forgemem.capture.classify.rules.patterns import _ACCEPT, _ACCEPT_ECHO, _PROPOSAL_SENT
from forgemem.capture.classify.rules.protect import _Held, _protect, _restore
from forgemem.capture.classify.rules.verbs import _IRREGULAR_PAST, _base

# ------------------------------------------------------------------ pointing back: "don't do that"


_POINTING_BACK = re.compile(
    r"^(do not|never|stop|quit|no more|please do not|never ever|avoid)\s+(?:\w+ing |do(?:ing)? )?"
    r"(that|this|it|so|those|these)(?: again| ever again| anymore| any more)?\W*$",
    re.I,
)
_CONTEXT_ACTION = re.compile(
    r"^(?:(?:done|ok(?:ay)?|sure|alright|right|fixed|great)[.!,:]?\s+)*(?:so\s+)?(?:I(?:'ve| have)?\s+)?"
    r"(?:(?:also|just|then|now|went ahead and)\s+)*([a-z]+(?:ed)?|ran|wrote|made|put|set|split|built|took|gave|kept|"
    r"got|did|sent|cut|broke)\s+(.+)$",
    re.I,
)


def _context_action(context: str) -> str | None:
    """What the assistant just did, as a base-form verb phrase: "I ran black over X." → "run black over X"."""
    held, kept = _protect(context.strip())
    first = [s for s in _sentences(_flatten(held)) if len(s.split()) >= 3]
    if not first:
        return None
    m = _CONTEXT_ACTION.match(first[0])
    if not m:
        return None
    verb = m.group(1)
    low = verb.lower()
    rest = m.group(2)
    if not (low.endswith("ed") or low in _IRREGULAR_PAST) or low in ("need", "seemed", "looked", "wanted", "tried") \
            or (low == "used" and rest.startswith("to ")):
        return None
    rest = re.split(r"\s+(?:so|since|because|so that|to make|to give|to save|which|and now|and then|while)\b|[,;:—(]"
                    r"|\s+and (?=(?:also |then )?(?:[a-z]+ed|ran|wrote|made|put|set|built|took|kept|got|did|sent)\b)",
                    rest)[0]
    rest = rest.strip(" .")
    if not rest:
        return None
    phrase = f"{_base(verb)} {rest}"
    phrase = re.sub(r"\bmy\b", "your", phrase)
    phrase = _restore(phrase, kept)
    if len(phrase) > 100:
        return None
    return phrase


def _resolve_pointing(clause: str, context: str) -> str:
    m = _POINTING_BACK.match(clause)
    if not m or not context:
        return clause
    action = _context_action(context)
    if not action:
        return clause
    head = m.group(1).lower()
    lead = {"never": "Never", "never ever": "Never", "stop": "Do not", "quit": "Do not", "no more": "Do not",
            "please do not": "Do not", "avoid": "Do not"}.get(head, "Do not")
    return f"{lead} {action}"


# ------------------------------------------------------------------ confirmations


#: the agent saying back what it was told ("Got it: plain `go test ./...` locally from now on."): no offer, whatever
#: its words, unless it also asks
_SAYS_BACK = re.compile(r"^\W*(?:got it|understood|noted|will do|ok(?:ay)?|sure|done|alright|all right|sounds good|"
                        r"right|of course|certainly)\b(?!.*\b(?:should i|shall i|want me to|do you want|would you like|"
                        r"i can|i could|how about|what about)\b)", re.I | re.S)


def _is_offer(context: str) -> bool:
    if not context or (_SAYS_BACK.match(context) and not context.rstrip().endswith("?")):
        return False
    return context.rstrip().endswith("?") or bool(_PROPOSAL_SENT.search(context))


#: a question that only points back at the sentence before it ("Want me to set that up?", "Make that the standard?")
_POINTS_BACK_ONLY = re.compile(
    r"^(?:(?:so |ok(?:ay)?,? )?(?:want me to|should i|shall i|do you want me to|make|keep|go with|do) )?"
    r"(?:\w+ ){0,2}(?:that|this|it|them)(?: \w+){0,3}\s*\?$", re.I)
#: a purpose said before the proposal: "To stop this recurring, I'd add …"
_PURPOSE_FIRST = re.compile(r"^to (?:stop|avoid|prevent|fix|keep) [^,]{0,40}?,?\s*(?=I\b)", re.I)


def _proposal_rule(proposal: str, scope: str) -> str:
    """The standing rule in an agent's proposal: "Should I pin X from now on?" → "Pin X"."""
    held, kept = _protect(proposal.strip())
    extra: list[_Held] = []
    sentences = _sentences(_flatten(held))
    if not sentences:
        return ""
    chosen = None
    for sentence in reversed(sentences):
        if len(re.findall(r"\w+", sentence)) < 4:
            continue  # "OK?", "Want that?", "Sound good?"
        if sentence.endswith("?") or _PROPOSAL_SENT.search(sentence):
            chosen = sentence
            break
    if chosen is None:
        chosen = sentences[-1]
    index = sentences.index(chosen)
    if index > 0 and _POINTS_BACK_ONLY.match(chosen):
        # "… so it's the standard for everyone. Want me to set that up?": the rule is what it points back at
        index -= 1
        chosen = sentences[index]
    previous = sentences[index - 1] if index > 0 else ""
    text = chosen.rstrip("?").strip()
    text = _PURPOSE_FIRST.sub("", text)
    text = re.sub(r"[,\s]*\b(?:ok|okay|right|sound good|does that sound good|want that|yes or no)\s*$", "", text,
                  flags=re.I)
    text = _TIME_ANCHOR.sub("", text)
    text = _LEAD_FILLER.sub("", text.lstrip(" ,;:—-")).strip()  # "Going forward, should …" lost its anchor
    # a lead-in before the offer: "Since you're on koin now: want me to …", "Before I commit, should I …"
    text = re.sub(r"^[^:?]{1,60}?[:,]\s+(?=(?:do you )?want me to\b|(?:should|shall) (?:I|we)\b|(?:would you like|"
                  r"do you want) me to\b)", "", text, count=1, flags=re.I)
    rewrites = [
        (r"^(?:so )?(?:should|shall) (?:I|we) (?:just |also )?", ""),
        (r"^(?:do you )?want me to (?:also |just )?", ""),
        (r"^(?:would you like|do you want) me to ", ""),
        (r"^(?:I can|I could|I'll|I will|let me|I'd|I would|I suggest we|I propose we|I suggest|I propose) "
         r"(?:also |just )?", ""),
        (r"^(?:how|what) about ", ""),
        (r"^(?:I )?suggest(?:ing)? (?:(?:making|to make) (?:it|this|that) (?:a |the )?(?:convention|rule|standard)"
         r"[:,]?\s*|we |that )?", ""),
        (r"^(?:should|shall|will) ((?:the |all |every |new |our |your )*[\w`\-/.\ue000\ue001]+"
         r"(?: [\w`\-/.\ue000\ue001]+)?) (use|be|have|go|live|run|follow|get|stay|include)\b", r"\1 should \2"),
    ]
    for pattern, replacement in rewrites:
        new = re.sub(pattern, replacement, text, count=1, flags=re.I)
        if new != text:
            text = new
            break
    text = _gerund_start(text)
    m = re.match(r"^(?:(?:do you )?want|make|keep|use|do)?\s*(?:that|this|it)\s+"
                 r"((?:as|the|for|everywhere|from|by)\b.*)$", text, re.I)
    if m and previous:
        action = _context_action(_restore(previous, kept))
        if action:
            held_action, more = _protect(action)
            extra.append(more)
            text = held_action + " " + m.group(1)
    # "them"/"these" point at the previous sentence's subject: "Provider versions are unpinned …"
    m = re.match(r"^((?:the |all |our |your )?(?:[\w`'\-/.\ue000\ue001]+ ){0,3}?[\w`'\-/.\ue000\ue001]+s) "
                 r"(?:are|were|have|hit|use|run|mix|keep|fail|get|go|take|live)\b", previous, re.I)
    if m:
        subject = re.sub(r"^(?:the|all|our|your) ", "", m.group(1), flags=re.I)
        text = re.sub(r"\bthem all\b", f"all {_decap(subject)}", text, count=1)
        text = re.sub(r"\b(?:them|these|those)\b", _decap(subject), text, count=1)
    text = re.sub(r"\s*,?\s*and (?:keep doing (?:that|this|it)|"
                  r"make (?:that|this|it) (?:the )?(?:default|standard|rule))(?= for\b|$)", "", text, flags=re.I)
    text = re.sub(r"\bmy\b", "your", text)
    text = re.sub(r"\bfor you\b", "for the user", text)
    text = _expand(text)
    text = _repo_words(text, scope)
    text = _restore(_cap(text.strip(" ,;")), kept)
    for more in extra:
        text = _restore(text, more)
    return text


def _reply_addition(reply: str, rule: str) -> str:
    """What a confirming reply adds to the proposal: "yes, SHAs, with the tag in a comment" → "with the tag …"."""
    held, kept = _protect(reply.strip())
    text = _ACCEPT.sub("", held).strip()
    text = _strip_filler(text)
    if not text or _ACCEPT_ECHO.match(text):
        return ""
    rule_words = set(re.findall(r"[a-z0-9]+", rule.lower()))
    # an echo of the choice before a comma: "SHAs, with …", "plain assert"
    m = re.match(r"^([^,;]{1,30}),\s*(.+)$", text)
    stems = {r.rstrip("s") for r in rule_words}
    if m and all(w.rstrip("s") in stems for w in re.findall(r"[a-z0-9]+", _restore(m.group(1), kept).lower())):
        text = m.group(2)
    words = re.findall(r"[a-z0-9]+", _restore(text, kept).lower())
    novel = [w for w in words if w.rstrip("s") not in {r.rstrip("s") for r in rule_words}
             and w not in ("always", "and", "the", "a", "an", "yes", "please", "it", "that", "do", "for")]
    if len(novel) < 2:
        return ""
    text = _expand(text)
    return _restore(text, kept)
