"""The offline classifier: language patterns plus embedding similarity, no network.

What a person says about *how to work* has recognisable shapes, and task
chatter ("fix the login page", "show me the diff") does not:

1. Only human turns are read, sentence by sentence; questions, slash commands,
   pasted logs and code are skipped.
2. Each sentence is matched against pattern families, one per category:
   user facts ("I'm a backend developer", "my timezone is …"), decisions
   ("we decided …", "let's go with … because …"), conventions ("in this repo
   …", "we always …", "our convention is …"), corrections ("no, …",
   "don't …", "use X instead of Y", an imperative about "those tests" right
   after the agent's work) and preferences ("I prefer …", "always …",
   "never …", "from now on …"). The strongest family decides the category.
3. The memory text keeps its subject explicit: first person becomes "The
   user …", and a correction that points back ("those tests") carries the
   request it was about.
4. Its relation to the nearest existing memory comes from embedding cosine
   similarity: ≥ DUPLICATE_AT is a duplicate (nothing written); ≥ RELATED_AT
   with change-of-mind language ("actually", "instead", "no longer", "switch
   to", "changed my mind") supersedes it; ≥ REFINES_AT otherwise refines it;
   ≥ RELATED_AT relates to it. Thresholds were set on the labelled set in
   tests/fixtures/capture_cases.yaml (see benchmarks/bench_capture.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from forgemem.capture.classify import Batch, Classification, Neighbour, Neighbours, Proposal

DUPLICATE_AT = 0.86
REFINES_AT = 0.62
RELATED_AT = 0.55
SUPERSEDES_AT = 0.45  # with change-of-mind language, same category and scope
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
_ANAPHORA = re.compile(r"\b(?:those|these|that|it|them|this)\b", re.I)
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


_THIRD_PERSON = [
    (re.compile(r"\bI'm\b|\bI am\b"), "the user is"),
    (re.compile(r"\bI've\b|\bI have\b"), "the user has"),
    (re.compile(r"\bI'd\b"), "the user would"),
    (re.compile(r"\bmy\b", re.I), "the user's"),
    (re.compile(r"\bmine\b", re.I), "the user's"),
    (re.compile(r"\bme\b", re.I), "the user"),
]
_I_VERB = re.compile(r"\bI (?:(really|strongly|much|mostly|usually|always|never|also) )?([a-z']+)\b")


def _third_person_verb(verb: str) -> str:
    irregular = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "can't": "can't", "can": "can",
                 "will": "will", "would": "would", "should": "should", "must": "must", "was": "was"}
    if verb in irregular:
        return irregular[verb]
    if verb.endswith(("ed", "'t")):
        return verb  # past tense, negations
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def explicit_subject(sentence: str) -> str:
    """First person to "the user", so the memory reads the same in any later session."""
    bare = _LEADING_FILLER.sub("", sentence).strip()
    if not _FIRST_PERSON.search(bare):
        return bare
    text = _I_VERB.sub(
        lambda m: "the user " + (f"{m.group(1)} " if m.group(1) else "") + _third_person_verb(m.group(2)), bare
    )
    for pattern, replacement in _THIRD_PERSON:
        text = pattern.sub(replacement, text)
    return text


def _finish(text: str) -> str:
    text = text.strip().rstrip(",;:")
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "`", ")")) else text + "."


def _quote(sentence: str, limit: int = 160) -> str:
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def relate(
    said: str, category: str, scope: str, neighbours: list[Neighbour]
) -> tuple[str, str | None, float]:
    """(relation, target id, similarity) of what was `said` to the nearest existing memories."""
    if not neighbours:
        return "new", None, 0.0
    best = neighbours[0]
    changed = bool(_CHANGE_OF_MIND.search(said))
    if best.similarity >= DUPLICATE_AT and not changed:
        return "duplicate", best.memory.id, best.similarity
    for neighbour in neighbours:
        same_place = neighbour.memory.scope == scope and neighbour.memory.category == category
        if changed and same_place and neighbour.similarity >= SUPERSEDES_AT:
            return "supersedes", neighbour.memory.id, neighbour.similarity
    if best.similarity >= REFINES_AT and best.memory.scope == scope:
        return "refines", best.memory.id, best.similarity
    if best.similarity >= RELATED_AT:
        return "relates-to", best.memory.id, best.similarity
    return "new", None, best.similarity


def _request_line(text: str) -> str | None:
    """The first line of a human turn, as the request it makes; None for commands and shell input."""
    if text.lstrip().startswith(("/", "!")):
        return None
    return text.strip().split("\n", 1)[0]


class OfflineClassifier:
    """The default classifier: trained heads over sentence vectors and patterns, no network.

    For each sentence of each human turn (`units`), with the turn before it as
    context: durable or not, category, scope (`learned`); the memory text as a
    standalone rule (`rules.rule_text`); its relation to the nearest existing
    memories by subject (`relate`). A confirmation ("yes, let's do that")
    carries the decision the agent proposed, and only when the agent proposed a
    standing rule. Within one pass, a later statement that replaces an earlier
    one (a change of mind mid-batch) is written alone, the earlier words noted in
    its reason. Without an embedding model, heads over the patterns alone decide.
    """

    name = "offline"

    def __init__(self, has_repo: bool = True, embedder=None):
        self.has_repo = has_repo
        self._embedder = embedder  # an embedder, or a callable giving one (or None: patterns only)

    def use_embedder(self, source) -> None:
        """Where vectors come from: an embedder, or a callable giving one (None: the patterns decide)."""
        self._embedder = source

    def embedder(self):
        source = self._embedder
        return source() if callable(source) and not hasattr(source, "encode") else source

    def classify(self, batch: Batch, neighbours: Neighbours) -> Classification:
        from forgemem.capture.classify.learned import decide, feature_matrix
        from forgemem.capture.classify.learned import scope_for as learned_scope
        from forgemem.capture.classify.units import units

        found: list[tuple[str, object, str, bool]] = []  # (unit, turn, the turn before, before is the agent's)
        before, agent, chars = "", False, 0
        for turn in batch.context:
            before, agent = turn.text, turn.role != "user"
        for turn in batch.turns:
            if turn.role != "user":
                before, agent = turn.text, True
                continue
            chars += len(turn.text)
            for unit in _merge_fragments(units(turn.text)):
                found.append((unit, turn, before, agent))
            before, agent = turn.text, False
        if not found:
            return Classification([], self.name, chars_sent=chars)
        embedder = self.embedder()
        kind = "dense" if embedder is not None else "patterns"
        # a confirmation is decided on what the agent proposed; anything else on its own words
        confirms = [agent and bool(_CONFIRMATION.match(unit)) and bool(_PROPOSES_RULE.search(before))
                    for unit, _, before, agent in found]
        judged = [_proposal_of(before) if confirm else unit
                  for (unit, _, before, _), confirm in zip(found, confirms, strict=True)]
        befores = ["" if confirm else (before if agent else "")
                   for (_, _, before, agent), confirm in zip(found, confirms, strict=True)]
        decisions = decide(feature_matrix(judged, embedder, befores), kind, judged)
        proposals: list[Proposal] = []
        for (unit, turn, before, agent), confirm, decision in zip(found, confirms, decisions, strict=True):
            if agent and _CONFIRMATION.match(unit) and not confirm:
                continue  # yes to a one-off step: nothing lasting was decided
            if not (confirm or decision.is_durable):
                continue
            category = decision.category
            if category == "corrections" and not (agent and _REACTS.search(unit)):
                # a correction reacts to what the agent just did; said unprompted it is a rule of another kind
                category = decision.best_category([c for c in CATEGORY_ORDER if c != "corrections"])
            if category == "user-facts" and not _PERSONAL.search(unit):
                # a fact about the person says so ("I'm …", "my …"); about the project it is another kind
                category = decision.best_category([c for c in CATEGORY_ORDER if c not in ("user-facts", "corrections")])
            about = f"{before}\n{unit}" if confirm else unit
            scope, why_scope = learned_scope(about, category, decision.user_p, self.has_repo,
                                           dict(decision.categories).get(category, decision.category_p))
            text = rule_form(unit, category=category, scope=scope, context=before if agent else "",
                             proposal=before if confirm else "")
            nearest = neighbours(text)
            relation, target, similarity = relate_to(text, unit, category, scope, nearest)
            if why_scope in _WEAK_SCOPE and relation not in ("supersedes", "refines", "duplicate"):
                # no cue decided the scope: a memory of the other scope on the same subject decides it
                # (a change of mind about a personal preference stays personal), but a project
                # decision or convention never moves into the user store
                other = "user" if scope == "repo" else "repo"
                if other == "repo" or category not in ("project-conventions", "architectural-decisions"):
                    again = relate_to(text, unit, category, other, nearest)
                    if again[0] in ("supersedes", "refines", "duplicate"):
                        scope, why_scope = other, "the scope of the memory it changes"
                        relation, target, similarity = again
            if relation == "supersedes" and category == "corrections":
                # a change of mind about a convention or a decision is one too, not a correction of the agent
                category = next((n.memory.category for n in nearest if n.memory.id == target), category)
            proposals.append(Proposal(
                text=text, category=category, scope=scope, relation=relation, target=target, quote=_quote(unit),
                turn=turn, confidence=round(1.0 if confirm else decision.durable, 2),
                reason=("a confirmation of the agent's proposal; " if confirm else f"durable {decision.durable:.2f}; ")
                       + f"{category} {decision.category_p:.2f}; {scope}: {why_scope}; {relation}"
                       + (f" ({similarity:.2f})" if target else ""),
            ))
        return Classification(_latest_only(proposals, _similarity(embedder)), self.name, chars_sent=chars)


_WEAK_SCOPE = ("unsure: the repo, where git review sees it", "personal style", "project knowledge")
CATEGORY_ORDER = ("coding-preferences", "project-conventions", "architectural-decisions", "user-facts", "corrections")
#: what a correction of the agent's work sounds like
_REACTS = re.compile(
    r"^(?:no|nope|wrong|not quite|not like that|that's (?:the )?(?:wrong|not|incorrect)|that is|don't|do not|stop|"
    r"never|nein|never)\b|\binstead\b|\brather than\b|\bnot \S+,|\bshould(?:n't| not)\b|\byou (?:just|forgot|used|"
    r"broke|added|created|put)\b|\bwhy did you\b|\bdon't\b|\bnever\b", re.I)
#: a fact about the person is said in the first person
_PERSONAL = re.compile(r"\b(?:i|i'm|i've|i'd|my|me|mine|ich|mein|meine|soy|mi|je|mon|ma)\b", re.I)
#: a sentence that points back at the one before it ("Always add a new one …") belongs with it
_POINTS_BACK = re.compile(r"^(?:\W*\w+\W+){0,3}?(?:a new one|it|that one|this one|them|those|the same)\b", re.I)
#: a fragment that only drops the old choice ("scratch GORM, it bit us twice.") belongs with what replaces it
_DROPS = re.compile(r"^(?:scratch|forget|drop|ditch|no more|not)\b|\b(?:is|are) (?:out|gone|dead)\b|"
                    r"\b(?:moved|moving) (?:off|away from)\b|\b(?:dropped|got rid of|ditched|no longer use)\b", re.I)


def _merge_fragments(units: list[str]) -> list[str]:
    merged: list[str] = []
    for unit in units:
        if merged and ((_DROPS.search(merged[-1]) and not _DROPS.search(unit)) or _POINTS_BACK.search(unit)):
            merged[-1] = f"{merged[-1]} {unit}"
        else:
            merged.append(unit)
    return merged


def _proposal_of(agent_text: str) -> str:
    """The sentence(s) of the agent's turn that propose the standing rule (what a "yes" accepts)."""
    from forgemem.capture.classify.units import units

    pieces = units(agent_text) or [agent_text.strip()]
    chosen = [p for p in pieces if _PROPOSES_RULE.search(p) or p.rstrip().endswith("?")]
    return " ".join(chosen[-2:] or pieces[-1:])[:400]


_CONFIRMATION = re.compile(
    r"^(?:yes|yep|yeah|yup|sure|ok|okay|sounds good|do it|go ahead|let's do (?:it|that)|agreed|perfect|exactly|"
    r"please do|go for it|correct|right|ja|sí|si|oui|d'accord)\b", re.I)
#: the agent proposed a standing rule, not a one-off step
_PROPOSES_RULE = re.compile(
    r"\bfrom now on\b|\bgoing forward\b|\b(?:the )?(?:standard|default|convention|rule)\b|\bin (?:the )?future\b|"
    r"\bstandardi[sz]e\b|\beverywhere\b|\b(?:for|in) (?:all|every|each)\b|\balways\b|\bfor new\b|\bpolicy\b", re.I)


def rule_form(unit: str, *, category: str, scope: str, context: str = "", proposal: str = "") -> str:
    """The memory text: a standalone rule (`rules.rule_text`)."""
    from forgemem.capture.classify.rules import rule_text

    return rule_text(unit, category=category, scope=scope, context=context, proposal=proposal)


def relate_to(text: str, said: str, category: str, scope: str,
              neighbours: list[Neighbour]) -> tuple[str, str | None, float]:
    """(relation, target id, score) of a new memory to the nearest existing ones, decided by subject."""
    from forgemem.capture.classify.relate import Candidate
    from forgemem.capture.classify.relate import relate as decide_relation

    candidates = [Candidate(n.memory.body, n.memory.category, n.memory.scope, n.similarity, n.memory.id)
                  for n in neighbours]
    relation, index, score = decide_relation(text, said, category, scope, candidates)
    if relation != "supersedes":
        # the old choice dropped by name ("scratch GORM", "we moved off wandb") replaces the memory that names it
        dropped = dropped_names(said)
        for candidate in candidates:
            words = set(re.findall(r"[\w.+-]+", candidate.text.lower()))
            if candidate.scope == scope and dropped & words:
                return "supersedes", candidate.id, max(score, 0.9)
    return relation, (candidates[index].id if index is not None else None), score


_DROPPED = re.compile(
    r"\b(?:scratch|ditch|drop(?:ped)?|forget|moved? (?:off|away from)|moving (?:off|away from)|no longer use|"
    r"got rid of|instead of|replac(?:e|ed|ing)|rip(?:ped)? out|switch(?:ed|ing)? (?:away )?from|migrat(?:e|ed|ing) "
    r"(?:off|away from|from))\s+(?:the |our |using )?`?([\w.+-]{3,})`?"
    r"|`?([\w.+-]{3,})`? (?:is|are) (?:out|gone|dead|deprecated|no longer used)\b", re.I)
_NOT_NAMES = {"that", "this", "the", "our", "it", "them", "those", "these", "thing", "approach", "idea", "plan"}


def dropped_names(said: str) -> set[str]:
    """Names the user said they dropped: "scratch GORM" -> {"gorm"}."""
    names = set()
    for match in _DROPPED.finditer(said):
        name = (match.group(1) or match.group(2) or "").lower().strip(".")
        if name and name not in _NOT_NAMES:
            names.add(name)
    return names


def _similarity(embedder):
    """cosine(a, b) of the embedding vectors; word overlap without a model."""
    if embedder is None:
        return _overlap

    def cosine(a: str, b: str) -> float:
        vectors = embedder.encode([a, b])
        return float(vectors[0] @ vectors[1])

    return cosine


def _latest_only(proposals: list[Proposal], similarity) -> list[Proposal]:
    """A change of mind inside one pass: both statements are written, the later superseding the earlier.

    The earlier one is written first and is never current after the pass; the
    history shows both (as if they had fallen in two passes). The same statement
    said twice is written once.
    """
    from forgemem.capture.classify.relate import Candidate
    from forgemem.capture.classify.relate import relate as decide_relation

    kept: list[Proposal] = []
    for proposal in proposals:
        for earlier in reversed(kept):
            candidate = Candidate(earlier.text, earlier.category, earlier.scope,
                                  similarity(earlier.text, proposal.text))
            relation, index, _ = decide_relation(proposal.text, proposal.quote, proposal.category, proposal.scope,
                                                 [candidate])
            if relation != "supersedes" and earlier.scope == proposal.scope and dropped_names(proposal.quote) & set(
                    re.findall(r"[\w.+-]+", earlier.text.lower())):
                relation, index = "supersedes", 0
            if index is None:
                continue
            if relation == "duplicate":
                kept.remove(earlier)
                break
            if relation == "supersedes" and earlier.replaced_by is None:
                proposal.replaces = earlier  # the capturer links them once the earlier one has its id
                earlier.replaced_by = proposal
                proposal.reason += f"; replaces “{earlier.quote}”, said earlier in this pass"
                break
        kept.append(proposal)
    return kept


def _overlap(a: str, b: str) -> float:
    wa, wb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0
