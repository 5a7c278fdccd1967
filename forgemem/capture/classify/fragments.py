"""Which sentences of a turn are said together: the units `units.units` splits are joined back where one leans
on its neighbour (a reason pointing back, "that applies to every …", a drop said before the rule that replaces it,
a rule's code example), a sentence the person took back as they said it goes, and a rule said again "like always"
is parted from a new one said after it. The offline classifier decides on what comes out."""

from __future__ import annotations

import re

from forgemem.capture.classify.never import _TASK_AT_HAND, LEFT_TO_THE_AGENT
from forgemem.capture.classify.units import _CODE_ONLY, _ENDS_POINTING_BACK, _ONLY_POINTS

#: a sentence that points back at the one before it ("Always add a new one …") belongs with it
_POINTS_BACK = re.compile(r"^(?:\W*\w+\W+){0,3}?(?:a new one|it|that one|this one|them|those|the same|same|"
                          r"(?:use|do|follow|keep|apply|prefer) (?:that|this)(?! \w+ (?:is|are|was)\b)|"
                          r"keep (?:doing|giving|writing) (?:that|this|it)|more of (?:that|this))\b", re.I)
#: a unit that only says the mind changed ("hmm wait actually no."), or only drops the old choice ("scratch GORM, it
#: bit us twice."), belongs with what follows it
_MIND_ONLY = re.compile(r"^(?:\W*(?:hmm+|hm+|wait|actually|no+|nah|nope|ugh|ok(?:ay)?|so|well|oh|scratch that|"
                        r"forget (?:that|it)|never ?mind|on second thought|changed my mind)\b)+\W*$", re.I)
_DROPS = re.compile(r"^(?:(?:ok|okay|so|then|and)\W+)?(?:scratch|scrap|forget|drop|ditch|no more|not)\b|\b(?:is|are) (?:out|gone|dead|off the table)\b|"
                    r"\b(?:moved|moving) (?:off|away from)\b|\b(?:dropped|got rid of|ditched|no longer use)\b", re.I)


#: "stop writing .append — collect the chunks in a list and pd.concat once at the end": what to stop and what to do
#: instead are one rule (a reason after it is not what comes instead: "stop using -x. with -x i have to …")
_STOP_DOING = re.compile(r"^\W*(?:(?:no|ok|so|pls|please)\W+)*stop (?:using|writing|doing|adding|calling|putting)\b"
                         r"(?:\s+\S+){0,4}\s*$", re.I)
_DOES_INSTEAD = re.compile(r"^\W*(?:just |instead,? |and )?(?:use|write|call|collect|put|keep|return|pass|wrap|build|"
                           r"read|load|store|log|raise|throw|go with|switch to|vectori[sz]e|do)\b", re.I)


#: a sentence that ends by taking itself back: "errors are anyhow everywhere in this crate— wait no."
_TAKES_ITSELF_BACK = re.compile(r"(?:[—–-]+|[,.;:])\s*(?:(?:wait|hmm+|uh+|erm+|ah+|oh|actually)[,\s]+(?:no+|nope)|nvm|"
                                r"never ?mind|scratch that)[.!…\s]*$", re.I)


#: ... said as a sentence of its own: "hmm wait, no.", "actually no.", "scratch that."
_TAKE_BACK_ALONE = re.compile(r"^\W*(?:(?:hmm+|hm+|uh+|erm+|ah+|oh|well)[,\s.]+)?(?:wait|actually)[,\s.]+(?:no+|nope)\W*$|"
                              r"^\W*(?:scratch that|never ?mind|nvm|forget (?:that|it))\W*$", re.I)


def _taken_back(units: list[str], restated: set[str]) -> list[str]:
    """The sentences without one the person took back as they said it; the one after it, saying it again as
    meant, goes into `restated` when the one taken back stated a rule."""
    from forgemem.capture.classify.learned import generalises

    kept: list[str] = []
    dropped = False
    for unit in units:
        head = _TAKES_ITSELF_BACK.sub("", unit).strip()
        if head != unit.strip() and len(head.split()) >= 3:
            dropped = generalises(head)
            continue
        if _TAKE_BACK_ALONE.match(unit) and kept and generalises(kept[-1]):
            # "… do that in all our reports going forward... hmm wait, no. the ops team reads these …. keep
            # everything in IST": the rule before it is taken back, the next rule said is the one meant
            kept.pop()
            dropped = True
            continue
        if dropped:
            restated.add(unit)
        dropped = False
        kept.append(unit)
    return kept


#: a sentence that says what was decided stands on its own, even when it points back at the problem ("we talked about it
#: in the data guild yesterday and decided: raw events land as parquet on s3 …")
_DECIDES = re.compile(r"\bdecided\b|\bagreed (?:on|that|to)\b|\bsettled on\b|\bthe decision\b", re.I)


#: "add them to service.py": the rule just said, applied to one file now - a task, not more of the rule
_APPLIES_TO_A_FILE = re.compile(r"^\W*(?:\w+\W+){0,2}?(?:add|apply|use|put|do|fix|change|update|run)\b.*"
                                r"\b[\w/-]+\.(?:py|ts|tsx|js|jsx|go|rs|java|kt|rb|cs|php|swift|c|cc|cpp|h|sql|sh|yaml|yml|"
                                r"toml|json)\b", re.I)
#: "thats how we do it everywhere": says the sentence before it is the rule
_SAYS_SO_BACK = re.compile(r"^\W*(?:(?:and|also|oh|btw|plus)\W+){0,2}(?:that (?:applies|goes) (?:to|for)|"
                           # "make that the standard for all eval scripts in here"
                           r"make (?:that|this|it) (?:the |our )?(?:standard|default|rule|convention|norm)\b|(?:that'?s|this is|thats|it'?s) (?:how|what|the way|a rule|the rule|our rule|for (?:all|every|any))|"
                           # "thats my setup for all my lua code, not just this plugin"
                           r"(?:that'?s|thats|this is|it'?s) my (?:setup|style|default|preference|config|way)\b|"
                           # "thats a general thing for me", "applies to every workflow in this repo", "org policy, …",
                           # "keep that in mind for every one-liner"
                           r"(?:that'?s|thats|this is|it'?s) (?:a )?general\b|appl(?:ies|y) to (?:every|all|any)\b|"
                           r"(?:org|company|team|security|compliance) (?:policy|rule|requirement)\b|"
                           r"(?:keep|bear) (?:that|this) in mind\b|"
                           # "same in every repo, i like to know what's coming", "thats a personal thing, i want it
                           # like that in every repo i touch"
                           r"same (?:in|for|goes for|across) (?:every|all|any)\b|"
                           r"(?:that'?s|thats|this is|it'?s) (?:a |my )?(?:personal|my own) (?:thing|preference|rule|taste)\b|"
                           # "that's the api standard from now on", "thats the formatter for ledgerd", "that's the
                           # decision"; "everywhere, not only in this component"
                           r"(?:that'?s|thats|this is|that is) (?:the|our) (?:[\w-]+ ){0,2}(?:standard|convention|rule|"
                           r"decision|default|policy|pattern|approach|formatter|linter|setup|format|layout|structure)\b|"
                           r"everywhere\b(?:,? not (?:just|only)\b|\W*$)|"
                           r"a convention|the convention|the standard|our standard|policy|the policy)\b|"
                           # "dont make me ask every time": the rule before it, insisted on
                           r"^\W*(?:don'?t|do not|stop) mak(?:e|ing) me (?:ask|say|repeat|tell|remind)\b", re.I)


#: a complaint about what the agent did, the rule said next ("you added #[allow(…)] on 5 functions, i really dont like
#: that. i always want clippy warnings actually fixed"): one memory
_DISLIKES_WHAT_WAS_DONE = re.compile(r"\byou \w+ .*\bi (?:really )?(?:don'?t|do not|hate|can'?t stand) (?:like )?"
                                     r"(?:that|it|this)\W*$", re.I)


#: the reason for what was said just before, pointing back at it: "never hardcode a relation name in a model — we once
#: had a prod run reading from a dev schema because of exactly that", "… that's why we pin it" ("that's why" only at the
#: start: "… im on a mac so sed -i needs the '' or just use gsed, thats why it blew up" says why of its own words)
_REASON_BACK = re.compile(r"\bbecause of (?:exactly |precisely |just )?(?:that|this|it)\b|^\W*(?:\w+\W+){0,2}?(?:that'?s|thats|"
                          r"this is|which is) (?:exactly )?why\b|\bfor (?:that|this) (?:reason|very reason)\b", re.I)


#: a rule said again as usual, then a new one after ", and": "keep keywords uppercase like always, and trailing commas
#: pls not leading ones"
_USUAL_THEN_MORE = re.compile(r"^(?P<usual>.*?\b(?:like|as) (?:always|usual|before)\b[^,;]*)[,;]\s+(?:and|also|plus)\s+"
                              r"(?P<more>\S.*)$", re.I)


def _apart_from_the_usual(units: list[str]) -> list[str]:
    """A sentence that says a rule again as usual and then a new one is two: the new one is not dropped with the
    rule the store holds."""
    out: list[str] = []
    for unit in units:
        m = _USUAL_THEN_MORE.match(unit)
        out += [m.group("usual"), m.group("more")] if m and len(m.group("more").split()) >= 3 else [unit]
    return out


def _lost_to_the_task(before: str, unit: str) -> bool:
    """Whether a rule that ends pointing at something ("every DDL on prod goes in a transaction with SET lock_timeout
    first, thats the rule here, so write it like that") would die joined to the task said before it ("next: I need to
    add a default to events.source"): it points at its own words, not at the task."""
    from forgemem.capture.classify.learned import never_durable
    from forgemem.capture.classify.never import _SAYS_WHEN_IT_RECURS

    return (bool(_SAYS_WHEN_IT_RECURS.search(unit)) and never_durable(before) and not never_durable(unit)
            and never_durable(f"{before} {unit}"))


#: how to do the work, left to the agent: "gate it on a cargo feature or cfg(debug_assertions), whichever is cleaner" is
#: the task that applies the rule said before it, not more of the rule
_LEFT_TO_THE_AGENT = re.compile(rf"\b{LEFT_TO_THE_AGENT}\b|\bup to you\b|\byour call\b|\beither (?:way|works|is fine)\b", re.I)


#: a person named with what they own, then a rule that sends work to them: "Priya owns MCUboot and the signing keys —
#: anything touching signing goes to her for review first" is one rule; apart, "her" names no one
_WHO_OWNS = re.compile(r"^\W*(?:\w+\W+){0,2}?(?-i:[A-Z][a-z]+)(?: (?-i:[A-Z][a-z]+))? (?:owns|runs|leads|maintains|handles|is "
                       r"(?:the )?(?:owner|lead|maintainer))\b", re.I)
_HER_OR_HIM = re.compile(r"\b(?:to|by|with|from|ask|ping|tell|past|through) (?:her|him)\b", re.I)


def _merge_fragments(units: list[str]) -> list[str]:
    from forgemem.capture.classify.learned import _SETUP_SAID

    merged: list[str] = []
    last = ""  # the last sentence merged: a drop sentence takes the one rule said after it, not the task after that
    for unit in units:
        if merged and (_MIND_ONLY.match(last) or _ONLY_POINTS.match(last) or (_DROPS.search(last) and not _DROPS.search(unit))
                       or (_STOP_DOING.match(last) and _DOES_INSTEAD.match(unit))
                       or _DISLIKES_WHAT_WAS_DONE.search(last)
                       or ((_POINTS_BACK.search(unit) or _ENDS_POINTING_BACK.search(unit) or _REASON_BACK.search(unit))
                           and not _APPLIES_TO_A_FILE.search(unit) and not _TASK_AT_HAND.search(unit)
                           and not _DECIDES.search(unit) and not _SETUP_SAID.search(merged[-1])
                           and not _lost_to_the_task(merged[-1], unit) and not _LEFT_TO_THE_AGENT.search(unit))
                       or _SAYS_SO_BACK.match(unit) or _CODE_ONLY.match(unit)
                       or (_HER_OR_HIM.search(unit) and _WHO_OWNS.match(merged[-1]))):
            ends = bool(re.search(r"[.!?;:,]\s*$", merged[-1]))
            apart = not ends and (_REASON_BACK.search(unit) or _DROPS.search(last) or _STOP_DOING.match(last)
                                  or _HER_OR_HIM.search(unit))
            merged[-1] = f"{merged[-1]}{'; ' if apart else ' '}{unit}"
        else:
            merged.append(unit)
        last = unit
    return merged
