"""The offline classifier (the default): trained heads over sentence vectors and patterns, no network.

For each sentence of each human turn, with the agent's turn before it as context, `learned` decides
durable or not, the category and the scope; `rules` words the memory as a standalone rule; `relate`
decides by subject whether it replaces, refines or relates to an existing memory. A confirmation
("yes, let's do that") carries the decision the agent proposed. How each step decides, and how well:
docs/capture.md.
"""

from __future__ import annotations

import re
from dataclasses import replace

from forgemem.capture.classify import Batch, Classification, Neighbour, Neighbours, Proposal
from forgemem.capture.classify.change_words import (
    _CHANGE_WORDS,
    _DECIDED,
    _GOES,
    _RETRACTS,
    _SAYS_THE_NEW,
    RESTATED_AT,
    RETRACTED_AT,
    _names_in,
    asked_in,
    dropped_names,
    holds_the_same,
    says_as_usual,
)
from forgemem.capture.classify.fragments import _apart_from_the_usual, _merge_fragments, _taken_back
from forgemem.capture.classify.one_pass import (
    JOINED_CHARS,
    _joined,
    _latest_only,
    _not_taken_back,
    _one_thought,
    _quote,
    _similarity,
)
from forgemem.capture.classify.relate_language import _THING_MOVES
from forgemem.capture.transcripts import Turn


class OfflineClassifier:
    """The default classifier: trained heads over sentence vectors and patterns, no network.

    For each sentence of each human turn (`units`), with the turn before it as
    context: durable or not, category, scope (`learned`); the memory text as a
    standalone rule (`rules.rule_text`); its relation to the nearest existing
    memories by subject (`relate`). A confirmation ("yes, let's do that")
    carries the decision the agent proposed, and only when the agent proposed a
    standing rule. Within one pass, a later statement that replaces an earlier
    one (a change of mind mid-batch) is written after it and supersedes it, so
    the earlier is never current. Without an embedding model, heads over the
    patterns alone decide.
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
        from forgemem.capture.classify.learned import STANDING_AT, decide, feature_matrix, never_durable
        from forgemem.capture.classify.one_pass import _kept_by_the_pass
        from forgemem.capture.classify.relate_person import _answer_languages, _tools
        from forgemem.capture.classify.scope import (
            _ABOUT_ME_FIRST,
            _HOW_TO_TALK,
            _REPO_CUE,
            PERSONAL_AT,
            about_the_person,
            scope_for,
        )
        from forgemem.capture.classify.units import units

        found: list[tuple[str, Turn, str, bool]] = []  # (unit, turn, the turn before, before is the agent's)
        joined_from: dict[str, list[str]] = {}  # a correction said over several sentences: its sentences
        restated: set[str] = set()  # said right after a rule the person took back ("… wait no. anyhow only in …")
        recurring: set[int] = set()  # turns that complain the agent does it again, after its turn
        before, agent = "", False
        asked, their_proposal = "", {}  # "can we just use node:test", and the yes said to it after the agent weighed it
        for turn in batch.context:
            before, agent = turn.text, turn.role != "user"
            asked = "" if agent else asked_in(units(turn.text))
        for turn in batch.turns:
            if turn.role != "user":
                before, agent = turn.text, True
                continue
            pieces = _apart_from_the_usual(_merge_fragments(_taken_back(units(turn.text), restated)))
            if agent and _RECURS.search(turn.text):
                recurring.add(id(turn))
                pieces = _merge_correction(pieces, joined_from)
            if agent and asked and pieces and _CONFIRMATION.match(pieces[0]):
                their_proposal[len(found)] = asked
            for unit in pieces:
                found.append((unit, turn, before, agent))
            before, agent, asked = turn.text, False, asked_in(pieces)
        if not found:
            return Classification([], self.name)
        embedder = self.embedder()
        kind = "dense" if embedder is not None else "patterns"
        # a confirmation is decided on what the agent proposed; anything else on its own words
        confirms = [agent and bool(_CONFIRMATION.match(unit)) and bool(_rule_offers(before))
                    for unit, _, before, agent in found]
        judged = [_proposal_of(before) if confirm else unit
                  for (unit, _, before, _), confirm in zip(found, confirms, strict=True)]
        befores = ["" if confirm else (_as_trained(before) if agent else "")
                   for (_, _, before, agent), confirm in zip(found, confirms, strict=True)]
        decisions = decide(feature_matrix(judged, embedder, befores), kind, judged)
        said, drop_only = _change_context(found, decisions)
        for i, statement in their_proposal.items():
            said[i] = f"{statement}. {said[i]}"  # "yes convert, drop vitest" says yes to "use node:test"
        proposals: list[Proposal] = []
        for i, ((unit, turn, before, agent), confirm, decision) in enumerate(
                zip(found, confirms, decisions, strict=True)):
            first = i == 0 or found[i - 1][1] is not turn  # the turn's first sentence: an answer starts there
            question = _question_about_them(before) if agent and first else ""
            answers = bool(question)
            rest = _CONFIRMATION.sub("", unit, count=1)  # what follows "ok": a change says more than "now"
            if (agent and _CONFIRMATION.match(unit) and not confirm and not answers and said[i] == unit
                    and not (decision.is_durable and len(rest.split()) >= 4)
                    and not _may_change_mind(re.sub(r"\bnow\b", "", rest), decision.durable)):
                continue  # yes to a one-off step: nothing lasting was decided ("ok poetry is dead to me. uv for
                # everything from now on" says more than yes, and so do "yeah, ruff format only. rip black out" and
                # "ok switch to zap")
            if drop_only[i]:
                continue  # "redis was a mistake": the rule said next to it replaces that memory (its context)
            changes_mind = False
            if (not decision.is_durable and unit in restated and decision.durable >= STANDING_AT
                    and not never_durable(unit)):
                decision = replace(decision, is_durable=True)  # the rule said again, as meant
            fact = answer_fact(question, unit) if answers and not never_durable(unit) else ""
            if fact and not decision.is_durable and decision.durable >= STANDING_AT:
                # "Are you on Windows?" - "yeah windows 11 + wsl2": the person's answer about themselves is a fact
                decision = replace(decision, is_durable=True)
            if (not decision.is_durable and id(turn) in recurring
                    and decision.durable >= (RECURRING_AT if unit in joined_from else STANDING_AT)
                    and (_REACTION.match(unit) or _CORRECTIVE.search(unit)) and not never_durable(unit)):
                # "you did the # type: ignore thing again. fix the actual type, dont silence it": a reaction to a
                # habit of the agent's, said with a complaint that it recurs, is a standing correction
                decision = replace(decision, is_durable=True)
            if not (confirm or decision.is_durable):
                if not _may_change_mind(said[i], decision.durable):
                    continue
                changes_mind = True  # written only if it replaces a memory (below)
            category = decision.category
            if category == "corrections" and not (agent and _REACTS.search(unit)):
                # a correction reacts to what the agent just did; said unprompted it is a rule of another kind
                category = decision.best_category([c for c in CATEGORY_ORDER if c != "corrections"])
            odds = dict(decision.categories)
            if (agent and category in ("project-conventions", "coding-preferences") and _REACTION.match(unit)
                    and (_AT_THE_WORK.search(unit)
                         or odds.get("corrections", 0.0) >= odds.get(category, 0.0) - CORRECTION_MARGIN)):
                # a rule said in reaction to what the agent just did ("don't use --no-git in those tests")
                # is a correction: when it points at that work, or when the heads hesitate between the two
                category = "corrections"
            if ((unit in joined_from or agent) and _DID_IT_AGAIN.search(unit)
                    and (category in ("project-conventions", "coding-preferences")
                         or (category == "user-facts" and not about_the_person(unit)))):
                category = "corrections"  # the agent told off for what it did, again, and told what to do instead
            if category != "user-facts" and _ABOUT_ME_FIRST.match(unit) and not _REACTS.search(unit):
                category = "user-facts"  # it opens on the person: what follows is what that means for their work
            if category == "user-facts" and not about_the_person(unit):
                # a fact about the person says so ("I'm …", "my …"); about the project it is another kind
                category = decision.best_category([c for c in CATEGORY_ORDER if c not in ("user-facts", "corrections")])
            if (_answer_languages(unit) or (_MY_SETUP.search(unit) and _tools(unit))) and not _REPO_CUE.search(unit):
                # the language the person wants answers in, and their OS, editor and shell, in any language:
                # "respóndeme siempre en español", "rispondimi sempre in italiano", "trabajo en Windows con WSL2"
                category = "user-facts"
            about = f"{before}\n{unit}" if confirm else unit
            scope, why_scope = scope_for(about, category, decision.user_p, self.has_repo,
                                           dict(decision.categories).get(category, decision.category_p))
            if (category == "corrections" and scope == "user" and why_scope in _WEAK_SCOPE and agent
                    and _AT_THE_WORK.search(unit)):
                # a correction pointing at the work just done here ("don't use --no-git in those tests")
                scope, why_scope = "repo", "corrects the work done in this repository"
            if fact:
                # what the person said of themselves, asked by the agent: a fact about them, stated in full
                text, category, scope, why_scope = fact, "user-facts", "user", "the person's answer about themselves"
            elif i in their_proposal:  # what they asked for and said yes to: "use node:test"
                text = rule_form(their_proposal[i], category=category, scope=scope)
            elif unit in joined_from:  # each sentence of the correction in rule form, in one memory
                text = ""
                for piece in joined_from[unit]:
                    rule = rule_form(piece, category=category, scope=scope, context=before)
                    text = _joined(text, rule, piece) if text else rule
            else:
                text = rule_form(unit, category=category, scope=scope, context=before if agent else "",
                                 proposal=before if confirm else "")
            nearest = neighbours(text if said[i] == unit else f"{text}\n{said[i]}")
            relation, target, similarity = relate_to(text, said[i], category, scope, nearest)
            weak = why_scope in _WEAK_SCOPE or (said[i] != unit and not why_scope.startswith("cue “in all"))
            if weak and relation not in ("supersedes", "refines", "duplicate"):
                # no cue decided the scope: a memory of the other scope on the same subject decides it
                # (a change of mind about a personal preference stays personal), but a project
                # decision or convention never moves into the user store
                other = "user" if scope == "repo" else "repo"
                if (other == "repo" or category not in ("project-conventions", "architectural-decisions")
                        or (why_scope == "project knowledge"
                            and (decision.user_p >= PERSONAL_AT or said[i] != unit or _GOES.search(unit)))):
                    # (a convention said with no word of where may change a personal preference when the scope
                    # head finds it personal, "ok poetry is dead to me. uv for everything from now on", or when it
                    # is said with what goes: "120 was too wide … lets do 100 as the max width")
                    again = relate_to(text, said[i], category, other, nearest)
                    if again[0] in ("supersedes", "refines", "duplicate"):
                        scope, why_scope = other, "the scope of the memory it changes"
                        relation, target, similarity = again
            if (changes_mind and (relation != "supersedes" or similarity < CHANGE_OF_MIND_AT)
                    and not _kept_by_the_pass(said[i], turn, relation, target, proposals)):
                continue
            if says_as_usual(unit) and any(n.memory.scope == scope and n.similarity >= RESTATED_AT
                                           and (relation != "supersedes" or holds_the_same(n.memory.body, unit))
                                           for n in nearest):
                continue  # "pnpm, like always", "again, use pnpm here, not npm": the rule the store holds, said again
            replaced = next((n.memory for n in nearest if n.memory.id == target), None)
            if relation == "supersedes" and replaced:
                # a new version of a memory keeps its kind (in every labelled set, 36 of 37 changes of mind do): a
                # change of mind about a convention is one too, not a correction of the agent; but a decision said
                # as one ("we decided in the arch review: config moves to pydantic-settings") is one
                category = "architectural-decisions" if _DECIDED.search(unit) and scope == "repo" else replaced.category
            elif scope == "repo" and category == "project-conventions" and _DECIDED.search(unit):
                category = "architectural-decisions"  # "marta made the call and it's final: endpoints are … tapir"
            if relation == "supersedes" and replaced and replaced.scope == scope and category == replaced.category:
                pass  # ... even a kind filed against its scope's usual one ("coding-preferences" in a repository)
            elif scope == "user" and category in ("project-conventions", "architectural-decisions"):
                # a project's convention or decision lives with the project: one that holds in every project of
                # the person ("in all my projects use uv") is their way of working, or how they want answers
                category = "user-facts" if _HOW_TO_TALK.search(unit) else "coding-preferences"
            elif scope == "repo" and category == "coding-preferences":
                # ... and a way of writing code kept with one repository is that project's convention
                category = "project-conventions"
            elif scope == "user" and category == "coding-preferences" and _HOW_TO_TALK.search(unit):
                # how the agent is to talk to the person ("keep answers short", "stop explaining every change, I read
                # the diff") is about the person, not about code: 10 of 11 such rules in the labelled sessions
                category = "user-facts"
            proposals.append(Proposal(
                text=text, category=category, scope=scope, relation=relation, target=target,
                quote=_quote(unit if i in their_proposal else said[i]),
                turn=turn, confidence=round(1.0 if confirm else decision.durable, 2),
                reason=("a confirmation of the agent's proposal; " if confirm else f"durable {decision.durable:.2f}; ")
                       + f"{category} {decision.category_p:.2f}; {scope}: {why_scope}; {relation}"
                       + (f" ({similarity:.2f})" if target else ""),
            ))
        proposals = _not_taken_back(proposals, [(unit, turn) for unit, turn, *_ in found], batch.turns)
        similarity = _similarity(embedder)
        proposals = _one_thought(_latest_only(proposals, similarity), similarity)
        return Classification(proposals, self.name)  # nothing sent anywhere


#: a sentence the heads find not durable enough is still a memory when it changes a rule the store holds ("poetry is
#: out, it's uv now"): it says so (`change_words._CHANGE_WORDS`), the heads give it at least this probability, and the
#: relation model says it replaces a memory this surely (or it drops a rule said earlier in the pass)
CHANGE_OF_MIND_FLOOR = 0.10
CHANGE_OF_MIND_AT = 0.5


#: a way of working turned down in reaction: "no, don't squash", "nah stop rebasing" (written only if it replaces the
#: memory holding that way: `relate._verb_turned_down`)
_NO_DONT = re.compile(r"^\W*(?:no|nope|nah|wait|actually)\W+(?:\w+\W+){0,2}?(?:don'?t|do not|stop|never)\b", re.I)


def _may_change_mind(unit: str, durable: float) -> bool:
    from forgemem.capture.classify.learned import never_durable

    return (durable >= CHANGE_OF_MIND_FLOOR and bool(_CHANGE_WORDS.search(_NOT_DOING.sub(" ", unit)) or _GOES.search(unit)
                                                     or _NO_DONT.match(unit) or _THING_MOVES.search(unit))
            and not never_durable(unit))


#: a word of change said as what something does not do is a state, not a change: "the ttl isn't dropping old parts"
_NOT_DOING = re.compile(r"\b(?:isn'?t|is not|aren'?t|are not|wasn'?t|was not|doesn'?t|does not|didn'?t|did not|won'?t|"
                        r"will not|can'?t|cannot|not) (?:\w+ )?(?:dropping|replacing|switching|moving|migrating|changing|"
                        r"cancell?ing|scrapping|ditching)\b", re.I)


#: the acknowledgment the heads were trained with (`benchmarks/train_capture.py`'s AGENT_LINES): any other bare
#: one ("Okay.", "Sure thing.") is read as it. Their vectors differ enough to move the odds of the rule after them:
#: "never commit straight to main" 0.45 after "Done.", 0.25 after "Okay.".
_ACKNOWLEDGMENT = "Done."
_ACKNOWLEDGES = re.compile(r"^\W*(?:(?:ok(?:ay)?|sure(?: thing)?|done|noted|got it|will do|understood|yes|yep|"
                           r"alright|all right|sounds good|great|perfect|certainly|of course|right|k|cool|"
                           r"no problem)\W*)+$", re.I)


def _as_trained(agent_turn: str) -> str:
    """The agent's turn as the heads read it: a bare acknowledgment ("Okay.", "Sure thing!") is the one they were
    trained with; anything that says what it did ("Running flake8 .") is read as it is."""
    return _ACKNOWLEDGMENT if _ACKNOWLEDGES.match(agent_turn) else agent_turn


#: the person saying what they work on, in the languages they write in: "i'm on", "i use", "trabajo en", "ich arbeite
#: mit", "j'utilise", "lavoro su"
_MY_SETUP = re.compile(r"\b(?:i(?:'m| am|m) (?:on|using)|i use|i work (?:on|in|with)|my (?:os|editor|ide|shell|laptop|"
                       r"machine)|trabajo (?:en|con)|uso|ich (?:arbeite|nutze|benutze|bin auf)|j'utilise|je (?:travaille|"
                       r"suis) (?:sous|sur)|trabalho (?:no|com|em)|lavoro (?:su|con))\b", re.I)
_WEAK_SCOPE = ("unsure: the repo, where git review sees it", "personal style", "project knowledge")
CATEGORY_ORDER = ("coding-preferences", "project-conventions", "architectural-decisions", "user-facts", "corrections")
#: what a correction of the agent's work sounds like
_REACTS = re.compile(
    r"^(?:no|nope|wrong|not quite|not like that|that's (?:the )?(?:wrong|not|incorrect)|that is|don't|do not|stop|"
    r"never|nein|never)\b|\binstead\b|\brather than\b|\bnot \S+,|\bshould(?:n't| not)\b|\byou (?:just|forgot|used|"
    r"broke|added|created|put|keep|kept|did)\b|\bwhy did you\b|\bdon'?t\b|\bnever\b|\bagain\b", re.I)
#: how a reaction to the agent's work opens
_REACTION = re.compile(r"^(?:no|nope|wrong|not like that|that's (?:wrong|not)|that (?:does nothing|doesn'?t work|won'?t work)|"
                       r"don't|do not|dont|stop|why (?:did|do) you)\b",
                       re.I)
CORRECTION_MARGIN = 0.15
#: the agent asks about the person: their system, tools, place or habits ("Are you on Windows?")
_ASKS_ABOUT_THEM = re.compile(
    r"\b(?:are|do|did|have|were) you (?:on|using|running|use|still on|based|in|working (?:on|in|from))\b.*\?\s*$|"
    r"\b(?:which|what) (?:os|operating system|editor|ide|shell|terminal|platform|machine|time ?zone|distro|"
    r"version of \w+) (?:are|do|is) (?:you|your)\b.*\?\s*$|\byour (?:os|editor|shell|setup|machine|platform|"
    r"time ?zone)\b.*\?\s*$", re.I)
_YES_NO = re.compile(r"^\W*(?:yes|yeah|yep|yup|ya|no|nope|nah|correct|right|indeed)\b[\s,.!:;-]*", re.I)


def answer_fact(question: str, answer: str) -> str:
    """The fact a person's answer states, whole: "Are you on Windows?" + "yeah windows 11 + wsl2" -> "The user is
    on windows 11 + wsl2." ("" when the question is not one this knows how to turn round)."""
    said = _YES_NO.sub("", answer).strip().rstrip(".!")
    if not said:
        return ""
    if m := re.search(r"\b(?:are|were) you (on|using|running|based in|in|still on|working (?:on|in|from))\b",
                      question, re.I):
        return f"The user is {m.group(1).lower()} {said}."
    if m := re.search(r"\b(?:do|did) you (use|prefer|run|work (?:on|in|with))\b", question, re.I):
        verb, _, rest = m.group(1).lower().partition(" ")
        return f"The user {verb}s{' ' + rest if rest else ''} {said}."
    if m := re.search(r"\b(?:which|what) (os|operating system|editor|ide|shell|terminal|platform|machine|time ?zone|"
                      r"distro)\b|\byour (os|editor|shell|setup|machine|platform|time ?zone)\b", question, re.I):
        return f"The user's {(m.group(1) or m.group(2)).lower()}: {said}."
    return ""


def _question_about_them(agent_text: str) -> str:
    """The agent's question about the person, if it asked one ("… Which OS are you on? The Linux …")."""
    for sentence in re.split(r"(?<=[.!?])\s+", agent_text.strip()):
        if _ASKS_ABOUT_THEM.search(sentence):
            return sentence
    return ""


#: a complaint that the agent does it again and again
_RECURS = re.compile(r"\b(?:again|keep (?:on )?\w+ing|kept \w+ing|(?:every|each) (?:single )?time|how many times|"
                     r"i (?:already |just )?(?:told|asked) you|(?:yet )?another one of these|after every \w+|"
                     r"(?:exact |very )?same (?:thing|mistake|issue|bug) (?:again|as|in|last|yesterday|before)|in the last (?:\w+ )?(?:prs|pull requests|"
                     r"sessions|times|commits))\b", re.I)
#: the complaint that the agent did it before: "you did the exact same thing last week", "you keep doing this"
_DID_IT_AGAIN = re.compile(r"\byou (?:did|keep|kept|made|added|used|put|wrote|gave)\b[^.;]*\b(?:again|same|last|before)\b|"
                           r"\byou keep\b", re.I)
#: ... the heads' least probability for it; lower for a correction said whole (that it recurs, then what to do)
RECURRING_AT = 0.15
#: an instruction against what the agent did ("dont silence it", "%w not %v", "only touch the lines …")
_CORRECTIVE = re.compile(r"\b(?:don'?t|do not|never|stop|instead|rather than|no more|only|should(?:n't| not)?|"
                         r"is (?:enough|plenty|fine))\b|^\S+ not \S+", re.I)
#: pointing at the work the agent just did
_AT_THE_WORK = re.compile(r"\b(?:those|these|that|this|the new|your)\s+(?:\w+\s+)?(?:tests?|files?|functions?|"
                          r"changes?|code|commits?|lines?|imports?|methods?|class(?:es)?|ones?|diff|migration)\b|"
                          r"\byou (?:just|added|used|wrote|put|created|changed|removed)\b", re.I)


def _change_context(found: list[tuple], decisions: list) -> tuple[list[str], list[bool]]:
    """For each unit, what was said about the change around it in its turn, and whether it only drops a choice.

    A sentence that only says an old choice goes ("redis was a mistake tbh.") is read with the rule said next to
    it in the same turn ("going with postgres, a jobs table …"): the two decide together which memory the rule
    replaces, and the drop alone is not written.
    """
    said = [unit for unit, *_ in found]
    drop_only = [False] * len(found)
    for i, (unit, turn, *_) in enumerate(found):
        if not _GOES.search(unit) or _SAYS_THE_NEW.search(unit):
            continue
        # (never the person's setup: "helm charts are gone. … and btw im on a mac" is not about the mac)
        same_turn = [j for j in range(len(found)) if j != i and found[j][1] is turn and not _GOES.search(found[j][0])
                     and not _MY_SETUP.search(found[j][0])]
        # the nearest rule of the turn, the one after it first ("X was a mistake. going with Y"); else the sentence
        # next to it likelier a rule, that may change a memory ("swift testing please, @Test and #expect. i'm done
        # with XCTest for anything new. parameterize the currency cases": the one before)
        rules = sorted((j for j in same_turn if decisions[j].is_durable), key=lambda j: (abs(j - i), j < i)) or sorted(
            (j for j in (i + 1, i - 1) if j in same_turn and decisions[j].durable >= CHANGE_OF_MIND_FLOOR),
            key=lambda j: -decisions[j].durable)
        if not rules:
            continue
        j = rules[0]
        said[j] = f"{unit} {said[j]}" if j > i else f"{said[j]} {unit}"
        drop_only[i] = True
    return said, drop_only


def _merge_correction(units: list[str], joined_from: dict[str, list[str]]) -> list[str]:
    """A correction of a habit of the agent's said over several sentences ("you did the # type: ignore thing again.
    fix the actual type, dont silence it") is one memory: from the sentence that says it recurs or reacts, the
    sentences that go on correcting are joined to it (up to JOINED_CHARS); `joined_from` gets their sentences
    (and the correction that follows a question saying it recurs, alone)."""
    from forgemem.capture.classify.learned import never_durable

    groups: list[list[str]] = []
    answered: set[int] = set()  # groups that follow "why do you keep doing this."
    joining = after_question = False
    for unit in units:
        starts = bool(_RECURS.search(unit) or _REACTION.match(unit))
        corrective = starts or bool(_CORRECTIVE.search(unit))
        # "why do you keep doing this." says it recurs but asks: the correction is what follows it
        question = starts and never_durable(unit)
        if joining and corrective and not question and sum(map(len, groups[-1])) + len(unit) < JOINED_CHARS:
            groups[-1].append(unit)
            continue
        groups.append([unit])
        joining = (starts and not question) or (after_question and corrective)
        if after_question and corrective:
            answered.add(len(groups) - 1)
        after_question = question
    merged = []
    for index, group in enumerate(groups):
        merged.append(" ".join(group))
        if len(group) > 1 or index in answered:
            joined_from[merged[-1]] = group
    return merged


def _rule_offers(agent_text: str) -> list[str]:
    """The sentences of the agent's turn that offer a standing rule: a question or an offer ("Should I …
    from now on?", "Want me to make … the default?"). A report of work done ("… read from the environment
    (default off)") offers nothing, whatever its words: a "yes" or an "ok" after it decides nothing."""
    from forgemem.capture.classify.units import units

    pieces = units(agent_text) or [agent_text.strip()]
    return [p for p in pieces if _PROPOSES_RULE.search(p) and (p.rstrip().endswith("?") or _OFFER.search(p))]


def _proposal_of(agent_text: str) -> str:
    """The sentence(s) of the agent's turn that propose the standing rule (what a "yes" accepts)."""
    return " ".join(_rule_offers(agent_text)[-2:])[:400]


_CONFIRMATION = re.compile(
    r"^(?:yes|yep|yeah|yup|sure|ok|okay|sounds good|do it|go ahead|let's do (?:it|that)|agreed|perfect|exactly|"
    r"please do|go for it|correct|right|ja|sí|si|oui|d'accord)\b", re.I)
#: the agent offers (rather than reports): "I can …", "I'd suggest …", "want me to …", "how about …"
_OFFER = re.compile(r"^suggest|\bsuggest(?:ing)? (?:we|making|that|to)\b|\bmy recommendation\b|"
                    r"\bi(?:'d| would) (?:add|make|use|set|go with|switch|keep|move|put)\b|"
                    r"\b(?:i (?:can|could|would|'d) (?:suggest|propose|recommend|also)?|i suggest|i propose|"
                    r"i recommend|want me to|shall i|should i|would you like|do you want|how about|what about|"
                    r"let's|we could|we should|my suggestion|i'd make)\b", re.I)
#: the agent proposed a standing rule, not a one-off step
_PROPOSES_RULE = re.compile(
    r"\bfrom now on\b|\bgoing forward\b|\b(?:the )?(?:standard|default|convention|rule)\b|\bin (?:the )?future\b|"
    r"\bstandardi[sz]e\b|\beverywhere\b|\b(?:for|in|with|on|after) (?:all|every|each)\b|\balways\b|\bfor new\b|\bpolicy\b", re.I)


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
    # the old choice dropped by name ("scratch GORM", "we moved off wandb") replaces the memory that names it
    dropped = dropped_names(said)
    named = [c for c in candidates if c.scope == scope and _names_in(c.text, dropped)]
    if relation == "supersedes" and index is not None and candidates[index] in named:
        return relation, candidates[index].id, max(score, 0.9)
    if relation != "supersedes" and named:
        return "supersedes", named[0].id, max(score, 0.9)
    if relation != "supersedes":
        # "scratch that, …", "on second thought …": the closest rule on the subject is what is taken back
        near = [c for c in candidates if c.scope == scope and c.similarity >= RETRACTED_AT]
        if _RETRACTS.search(said) and near:
            return "supersedes", max(near, key=lambda c: c.similarity).id, max(score, 0.8)
    return relation, (candidates[index].id if index is not None else None), score
