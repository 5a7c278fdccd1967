"""The pattern layer: what a sentence states by its words alone (a user fact, a decision, a convention, a
correction, a preference), and the sentences of a turn worth reading.

Used where no model runs: `/memory add` guesses a category and scope with `match` and `scope_for`, and
the tests keep the families honest. The capture classifier's own patterns are features in `learned`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_SENTENCE_CHARS = 400


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


_FACT = _any(
    r"\bmy name(?:'s| is)\b",
    r"\bi(?:'m| am) (?:a|an|the) (?!bit\b|little\b|fan\b|big fan\b)[a-z-]+(?: [a-z-]+)? "
    r"(?:developer|engineer|designer|maintainer|lead|manager|owner|student|scientist|admin|"
    r"architect|consultant|contractor|founder|researcher|programmer|person|analyst|intern|freelancer)\b",
    r"\bi(?:'m| am) (?:a|an) (?:sre|devops|qa|pm|cto|ceo|dba|ux|ui|ml|data|site reliability)\b",
    r"\bi(?:'m| am) (?:the|a|an) (?:maintainer|lead|owner|author|founder)\b",
    r"\bi(?:'m| am) (?:based|located) in\b",
    r"\bi live in\b",
    r"\bi work (?:at|for|as|on a|on an|with a)\b",
    r"\bmy (?:time ?zone|team|role|job|os|operating system|laptop|machine|editor|ide|shell|manager|company|employer|keyboard|native language|first language)\b",
    r"\bi(?:'m| am) (?:on|using) (?:a )?(?:mac|macos|linux|windows|wsl)\b",
    r"\bi(?:'m| am) (?:colou?r-?blind|left-handed|new to)\b",
    r"\bi (?:speak|don't speak)\b",
)
_DECISION = _any(
    r"\b(?:we|i)(?:'ve| have)? decided\b",
    r"\bwe(?:'ve| have)? (?:chosen|chose|picked|settled on|agreed)\b",
    r"\blet's (?:go with|stick with|switch to|move to|adopt|standardi[sz]e on)\b",
    r"\bwe(?:'ll| will) (?:go with|use|stick with|switch to|move to|adopt)\b",
    r"\bwe(?:'re| are) (?:going with|switching|moving|migrating)\b",
    r"\b(?:the|our) decision (?:is|was)\b",
    r"\bwe use \S+ (?:as|for) (?:the|our)\b",
)
_RATIONALE = _any(
    r"\bbecause\b", r"\bsince\b", r"\bso that\b", r"\bso the\b", r"\bas it\b", r"\bto avoid\b",
    r"\btoo (?:much|slow|complex|heavy|risky|expensive)\b", r"\boverkill\b", r"\bsimpler\b",
)
_ARCHITECTURE = _any(
    r"\b(?:databases?|dbs?|queues?|caches?|frameworks?|librar(?:y|ies)|orms?|apis?|architecture|services?|"
    r"storage|backends?|frontends?|ui|spa|auth|brokers?|stacks?|protocols?|schemas?|deploy\w*|"
    r"infrastructure|tables?|models?|sourcing|patterns?|monolith|microservices?|serverless|runtimes?|"
    r"languages?|cloud)\b",
    r"\b(?:postgres\w*|mysql|sqlite|mongo\w*|redis|kafka|rabbitmq|graphql|grpc|rest|react|vue|"
    r"htmx|django|flask|fastapi|rails|kubernetes|docker|terraform|celery)\b",
)
_CONVENTION = _any(
    r"\b(?:we|our team|the team) (?:always|never|usually|don't|do not|prefer|keep|put|name|write|"
    r"follow|run|lint|format|use|store|tag|squash|rebase|deploy|release)\b",
    r"\bour (?:convention|style|rule|standard|policy|practice|workflow)\b",
    r"\b(?:all |every one of )?our [\w-]+(?: [\w-]+)? (?:are|is|live|lives|go|goes|use|uses|follow|follows|"
    r"must|should|need|needs|come|comes|run|runs|stay|stays|belong|belongs)\b",
    r"\b[\w-]+(?: [\w-]+)? in this (?:repo|repository|project|codebase) (?:are|is|follow|use|must|should)\b",
    r"\bin this (?:repo|repository|project|codebase|team)\b",
    r"\b(?:the )?convention (?:here )?is\b",
    r"\bby convention\b",
    r"\b(?:tests?|migrations?|fixtures?|docs?|configs?|scripts?|templates?) (?:live|go|belong|are kept|are stored|sit) (?:in|under)\b",
    r"\b(?:commit messages?|branch names?|pr titles?|changelog entries) (?:should|must|use|follow|start|go)\b",
)
_CORRECTION_START = re.compile(
    r"^(?:no|nope|wrong|not quite|not like that|that's (?:the )?(?:wrong|not right|incorrect|not what)|"
    r"that is (?:the )?(?:wrong|not right)|don't|do not|stop|quit|avoid|never)\b",
    re.I,
)
_NO_START = re.compile(
    r"^(?:no|nope|wrong|not quite|that's (?:the )?(?:wrong|not right|incorrect)|that is (?:the )?wrong)\b", re.I
)
_CORRECTION = _any(
    r"\binstead of\b",
    r"\brather than\b",
    r"\bnot \S+\s*$",
    r"\buse \S+ instead\b",
    r"\binstead\b",
    r"\bshould(?:n't| not) (?:use|be|have|call|mock)\b",
)
#: an imperative about the work just done: "pass --yes to those new tests"
_FOLLOW_UP = re.compile(
    r"^(?:pass|use|add|put|run|keep|call|mock|set|make|give|move|rename|wrap|mark)\b.*"
    r"\b(?:those|these|the new|all the|all|every|each)\s+(?:\w+\s+)?"
    r"(?:tests?|files?|functions?|commits?|calls?|modules?|classes|methods|scripts|endpoints|handlers|fixtures)\b",
    re.I,
)
_PREFERENCE = _any(
    r"\bi (?:really |strongly |much )?(?:prefer|like|love|hate|dislike|can't stand|want (?!you|to)\w+)\b",
    r"\bi(?:'m| am) a (?:big )?fan of\b",
    r"\b(?:please )?always\b",
    r"\bnever\b",
    r"\bfrom now on\b",
    r"\bgoing forward\b",
    r"\bin (?:the )?future\b",
    r"\bremember (?:to|that)\b",
    r"\bprefer\w*\b",
    r"\b(?:i|we)(?:'ve| have)? (?:now )?(?:moved|switched|migrated|changed) (?:over )?(?:to|from)\b",
    r"\b(?:should|must) (?:always|never)\b",
)
_CHANGE_OF_MIND = _any(
    r"\bactually\b",
    r"\binstead\b",
    r"\bno longer\b",
    r"\bnot anymore\b",
    r"\banymore\b",
    r"\bswitch(?:ed|ing)?\b",
    r"\bno more\b",
    r"\bmov(?:e|ed|ing) (?:to|from|away)\b",
    r"\bchanged? (?:my|our) mind\b",
    r"\bfrom now on\b",
    r"\bnow (?:we|i)\b",
    r"\bnot \S+ any ?more\b",
    r"\breplac(?:e|ed|ing)\b",
)
_QUESTION_START = re.compile(
    r"^(?:can|could|would|will|should|is|are|does|do|did|what|why|how|where|when|which|who)\b", re.I
)
#: "no, I mean …" clarifies the request at hand; it states nothing lasting
_CLARIFYING = re.compile(r"^(?:no,?\s+)?i mean\b|^(?:no,?\s+)?i meant\b", re.I)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i am|my|me|mine|i've|i'd)\b", re.I)
_REPO_WORDS = re.compile(r"\b(?:we|our|us|this repo|this project|the team|codebase)\b", re.I)
_LEADING_FILLER = re.compile(r"^(?:(?:and|but|so|also|oh|ok|okay|hey|please|btw|well|yeah|yes)\b[,\s]*)+", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z\"'`(])|\n+")
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_LOGGY = re.compile(r"^\s*(?:[A-Z]\s{2,}|\w+Error\b|Traceback|File \"|at [\w.$]+\(|\$ |>>> |\d+\s*[│|])")


@dataclass
class _Match:
    category: str
    strength: float
    reason: str


def sentences(text: str) -> list[str]:
    """The sentences of a human turn worth looking at (no code, logs or commands)."""
    text = _CODE_FENCE.sub("\n", text)
    if text.lstrip().startswith(("/", "!")):
        return []  # slash commands and shell input
    result = []
    for line in text.splitlines():
        if _LOGGY.match(line) or line.count("  ") > 3:
            continue
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            if 3 <= len(sentence.split()) and len(sentence) <= MAX_SENTENCE_CHARS:
                result.append(sentence)
    return result


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence))


def match(sentence: str, after_work: bool = False) -> _Match | None:
    """The category a sentence states something durable about, or None for chatter."""
    bare = _LEADING_FILLER.sub("", sentence).strip()
    if not bare or is_question(bare) or _CLARIFYING.search(bare):
        return None
    found: list[_Match] = []
    if _FACT.search(bare):
        found.append(_Match("user-facts", 3.0, "a fact about the user"))
    if _DECISION.search(bare) and (_RATIONALE.search(bare) or _ARCHITECTURE.search(bare)):
        found.append(_Match("architectural-decisions", 2.6, "a decision with its subject or rationale"))
    if _CONVENTION.search(bare):
        found.append(_Match("project-conventions", 2.4, "a project convention"))
    if _NO_START.match(bare) and after_work:
        found.append(_Match("corrections", 2.8, "the user said the agent was wrong"))
    elif _CORRECTION_START.match(bare) or (_CORRECTION.search(bare) and after_work):
        found.append(_Match("corrections", 2.2, "a correction of the agent"))
    elif after_work and _FOLLOW_UP.match(bare):
        found.append(_Match("corrections", 2.0, "an instruction about the work just done"))
    if _PREFERENCE.search(bare):
        found.append(_Match("coding-preferences", 2.1, "a stated preference"))
    if not found:
        return None
    best = max(found, key=lambda m: m.strength)
    # "never …"/"don't …" as a standing rule is a preference, not a one-off correction
    if best.category == "corrections" and re.search(r"\b(?:always|never|from now on|going forward)\b", bare, re.I):
        if not re.match(r"^(?:no|nope|wrong|not quite)\b", bare, re.I):
            best = _Match("coding-preferences", best.strength, "a standing rule")
    if best.category == "coding-preferences" and _REPO_WORDS.search(bare) and not _FIRST_PERSON.search(bare):
        best = _Match("project-conventions", best.strength, "a rule for this project")
    return best


def scope_for(category: str, sentence: str, has_repo: bool) -> str:
    """Personal facts and personal preferences go to the user; project knowledge to the repo."""
    if category == "user-facts" or not has_repo:
        return "user"
    if category == "coding-preferences":
        return "repo" if _REPO_WORDS.search(sentence) and not _FIRST_PERSON.search(sentence) else "user"
    return "repo"
