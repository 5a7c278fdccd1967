"""How a new memory relates to its nearest existing ones: a small trained decision by subject.

A change of mind is a supersession whatever the words: "we moved off poetry,
it's uv now", "scratch that, uv instead of poetry", "use uv" over *Use poetry
for dependency management.* all make the poetry memory stale. Cosine
similarity alone cannot tell that apart from a refinement ("and pin uv in CI")
or from a hard negative that shares words ("the poetry anthology page lists
authors alphabetically"); change-of-mind wording alone cannot either ("we
switched our alerts channel"). So each (new memory, candidate) pair is
described by a few signals, all cheap and offline:

* **names**: tools, products, versions, paths and code spans in both texts
  (`names._names`): shared ones, swapped ones (old name gone, new name
  in), an old name negated in what was said ("moved off poetry", "poetry is
  gone", "not npm", "von MySQL auf …") or the old rule's words said to go
  ("scrap header versioning", "no more path versions"), a changed number
  ("Node 18" → "Node 22", "two approvals" → "one");
* **subject**: what the rule is about — a small lexicon of tool families and
  subject words (`names._LEXICON`): poetry, uv and "deps" are all
  *Python dependencies*, so "use uv" and "poetry is gone" share a subject with
  the poetry memory even with no word in common; plus the overlap of the other
  content words with the names masked;
* **change language** in what was said and in the new text (English,
  German, Spanish, French), and refinement cues ("and …", "also …",
  "except …") (`relate_language`);
* the cosine similarity and whether both are in the same scope.

The category is not a signal: every supersession in the capture corpus keeps its
category, so it would be learned as a shortcut, while a classifier files a change
of mind under a category of its own ("going forward use uv" as a coding
preference over a project convention); left out, cross-validation did as well.

A multinomial logistic regression over these (weights in
`relate_weights.json`, fitted by `benchmarks/train_relate.py` on the capture
corpus's training split and this project's extra pairs) scores four classes:
supersedes, refines, other-scope (the same subject said for the other scope:
both stay), unrelated. The decision over all candidates:

1. **duplicate**: the nearest candidate, same scope, cosine ≥ DUPLICATE_AT,
   and nothing changed or added — no change language (not even "now"), no name
   or number swapped or turned down, no flip between a positive and a negative
   rule, no new name or number: the same rule said again;
2. **supersedes** the same-scope candidate the model most believes superseded
   (a supersession never crosses scopes); of several, the one whose words the
   person said go; a swap of one tool or value for another scores at least
   EXCLUSIVE_SWAP;
3. **refines** the same-scope candidate it most believes refined, on its subject (`_on_subject`) and
   at cosine ≥ REFINES_AT, whatever words of addition it uses ("and I prefer small commits" refines no
   rule about old code; on the corpus's pairs this costs one of 31 refinements in cross-validation and
   removes links a new-user trial found wrong);
4. **relates-to** a candidate the model puts on the same subject in the other
   scope, or the nearest one at cosine ≥ RELATED_AT;
5. otherwise **new**.

Measured in `benchmarks/bench_relate.py`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from forgemem.capture.classify.relate_language import (
    _CHANGE,
    _CHANGE_WEAK,
    _REFINE,
    CAN_GO,
    _follows,
    _moved_thing,
    _negated,
    _negative,
    widens,
)
from forgemem.capture.classify.relate_person import person_change
from forgemem.capture.classify.relate_style import style_change
from forgemem.names import _content, _families, _names, _side, measure_moved

WEIGHTS = Path(__file__).with_name("relate_weights.json")
CLASSES = ("supersedes", "refines", "other-scope", "unrelated")
DUPLICATE_AT = 0.86
RELATED_AT = 0.55
#: a refinement adds to a rule on the same subject: under this cosine the two are about different things,
#: whatever words of addition the new one uses ("also", "personally", "in all my projects")
REFINES_AT = 0.2


@dataclass(frozen=True)
class Candidate:
    text: str  # an existing memory's text
    category: str
    scope: str  # repo | user
    similarity: float  # cosine of all-MiniLM-L6-v2 embeddings of the candidate and the new memory text
    id: str = ""


# --------------------------------------------------------------------------- features

FEATURES = (
    "bias",
    "similarity",
    "similarity_high",
    "same_scope",
    "change",
    "change_weak",
    "refine_cue",
    "shared_name",
    "old_name_kept",
    "old_name_negated",
    "name_swap",
    "family_swap",
    "number_change",
    "subject_shared",
    "family_shared",
    "content_overlap",
    "new_names",
    "polarity_flip",
    "change_x_subject",
    "swap_x_subject",
    "other_scope_x_subject",
)


def features(new_text: str, said: str, category: str, scope: str, candidate: Candidate) -> list[float]:
    """The signals for one (new memory, candidate) pair, in FEATURES order."""
    old = _side(candidate.text)
    spoken = f"{said}\n{new_text}" if said and said.strip() != new_text.strip() else new_text
    new = _side(spoken)
    rule = _side(new_text)
    sim = float(candidate.similarity)
    same_scope = float(candidate.scope == scope)
    shared = old.names & new.names
    gone_words = _said_to_go(spoken)
    # an old name turned down ("moved off poetry"), or the old rule's words said to go ("scrap header versioning")
    negated = (any(_negated(spoken, name) for name in old.names)
               or (bool(gone_words) and len(_among(gone_words, old.content)) >= min(2, len(gone_words))))
    # a name the old memory turned down and the new one takes back ("rip out prettier" -> "back to prettier")
    revived = {name for name in old.names & rule.names if _negated(candidate.text, name) and not _negated(spoken, name)}
    kept = any(name in rule.names for name in old.names - revived) and not negated
    added = new.names - old.names
    missing_from_rule = bool(old.names) and not (old.names & rule.names)
    name_swap = (bool(added) and (missing_from_rule or negated)) or bool(revived)
    old_families = _families(old.names)
    gone = {o for o in old.names if o not in rule.names or _negated(spoken, o)}
    # a tool of the same kind comes in while the old one goes: poetry -> uv, TSLint -> ESLint
    family_swap = any((_families([n]) & _families([o])) - _NOT_A_SWAP for n in added for o in gone)
    now = rule.numbers or new.numbers
    change = bool(_CHANGE.search(spoken))
    # an old number gone ("80 -> 120"), or a new one said with a word of change while the old is named as it goes
    # ("forget the 80 col thing, 120 is fine")
    number_change = bool(old.numbers) and bool(now) and (not old.numbers <= now or (change and bool(now - old.numbers)))
    subjects = old.subjects & new.subjects
    families = old_families & _families(new.names)
    union = old.content | new.content
    overlap = len(old.content & new.content) / len(union) if union else 0.0
    polarity_flip = _negative(candidate.text) != _negative(new_text)
    subject = float(bool(subjects) or bool(shared) or overlap >= SAME_WORDS_AT)
    swap = float(name_swap or family_swap or number_change or negated)
    return [
        1.0,
        sim,
        float(sim >= 0.6),
        same_scope,
        float(change),
        float(bool(_CHANGE_WEAK.search(spoken))),
        float(bool(_REFINE.search(said or new_text))),
        float(bool(shared)),
        float(kept),
        float(negated),
        float(name_swap),
        float(family_swap),
        float(number_change),
        float(bool(subjects)),
        float(bool(families)),
        overlap,
        float(bool(added)),
        float(polarity_flip),
        float(change) * subject,
        swap * subject,
        (1.0 - same_scope) * max(subject, float(sim >= 0.45)),
    ]


_ACROSS_ON_SUBJECT, _CHANGED, _REFINE_CUE, _SHARED, _KEPT, _NEGATED, _NAME_SWAP, _FAMILY_SWAP, _NUMBER_CHANGE = (
    FEATURES.index(f) for f in ("other_scope_x_subject", "change", "refine_cue", "shared_name", "old_name_kept",
                                "old_name_negated", "name_swap", "family_swap", "number_change"))
_SUBJECT, _FAMILIES, _OVERLAP, _FLIP, _SIMILARITY = (
    FEATURES.index(f) for f in ("subject_shared", "family_shared", "content_overlap", "polarity_flip", "similarity"))
#: the share of content words, or the cosine, from which two statements are on one subject; a subject word
#: shared ("run" the tests, "run" the linter) counts only from NEAR_AT
SAME_WORDS_AT, SAME_MEANING_AT, NEAR_AT, NUMBER_NEAR_AT = 0.25, 0.5, 0.3, 0.4
#: the score given to a swap of one tool of a kind for another (`relate`): above `offline.CHANGE_OF_MIND_AT`
EXCLUSIVE_SWAP = 0.6
#: kinds of which a project holds several at once: a language or a database named in a new rule where another was
#: named in a memory is not one replacing the other ("write these with Swift Testing" does not replace "use Jest for
#: TypeScript tests"; "s3 backend with dynamodb locking" does not replace "sqlfluff (snowflake dialect)")
_NOT_A_SWAP = frozenset({"runtime", "database"})
_STANDING_WORDS = re.compile(r"\b(?:from now on|going forward|from here on|now)\b", re.I)


def _adds_to(x: list[float], said: str) -> bool:
    """A new standing rule beside the old one, not a change of it: every name of the old memory kept, nothing
    turned down, swapped or renumbered, and no word of change but standing ones ("from now on always run bun
    run lint before committing" where "make `bun run test:unit` the standard command for tests" holds)."""
    if not x[_KEPT] or x[_NEGATED] or x[_NAME_SWAP] or x[_FAMILY_SWAP] or x[_NUMBER_CHANGE] or x[_FLIP]:
        return False
    return not _CHANGE.search(_STANDING_WORDS.sub(" ", said))


_WORD = r"[\w+/-]+(?:\.[\w+/-]+)*"  # a word, a path or a dotted name, not the full stop after it
#: what the person says goes: "no more path versions", "scrap header versioning", "forget the 80 col thing",
#: "redis is out"
_GOES_AFTER = re.compile(r"\b(?:no more|scrap(?:ped)?|scratch|ditch(?:ed)?|drop(?:ped)?|forget(?: about)?|get rid of|"
                         r"cancel(?:l?ed)?|(?:soften|relax|loosen)(?:ed|ing)?|"
                         r"rip(?:ped)? out|moved? off|instead of|away from|done with|no longer|chang(?:e|ed|ing) (?:my|our) mind (?:about|on))\s+"
                         r"(?:the |our |that |"
                         rf"this |all )?((?:{_WORD} ){{0,2}}{_WORD})", re.I)
_GOES_BEFORE = re.compile(rf"((?:{_WORD} ){{0,2}}{_WORD}) (?:is|are|was|were) (?:out|gone|dead|history|a mistake|off the table|deleted|"
                          rf"removed|reverted|(?:getting |being )?(?:ripped out|phased out|removed|retired))\b|\b(?:is|are|we're|we are) (?:fully |now |finally )?off (?:the |our )?({_WORD})|"
                          rf"((?:{_WORD} ){{0,2}}{_WORD}) {CAN_GO}", re.I)


def _among(words: frozenset[str], content: set[str] | frozenset[str]) -> set[str]:
    """The words found among `content`, a word standing for the hyphenated name it starts ("jsoniter" is off the
    table: "jsoniter-scala")."""
    heads = {c.split("-", 1)[0] for c in content if "-" in c}
    return {w for w in words if w in content or w in heads}


#: what the person says they moved to: "i switched to neovim", "we migrated to opentofu", "we're on pnpm now"
_MOVED_TO = re.compile(r"\b(?:switched|switching|moved|moving|migrated|migrating|went|gone|changed|changing) (?:(?:over|"
                       r"everything|it|us|all|the \w+) ){0,2}(?:to|onto)\s+(?:the |a |an )?([\w.+#-]+(?: [\w.+#-]+)?)", re.I)


def _moved_to(said: str) -> set[str]:
    """The known tools the person says they moved to (canonical names; none when the words name no known tool)."""
    return {name for m in _MOVED_TO.finditer(said) for name in _names(m.group(1))}


#: a change of mind that names the rule it changes, not only a tool: "changing my mind on the terse thing", "scrap the
#: double quotes thing", "forget the 80 col thing"
_NAMES_THE_OLD = re.compile(r"\bchang(?:e|ed|ing) (?:my|our) mind (?:about|on)\b|\b(?:scrap|scratch|ditch|drop|forget|"
                            r"kill) (?:about )?(?:the|that|our) (?:[\w`.-]+ ){1,3}(?:thing|rule|bit|part)\b", re.I)


@lru_cache(maxsize=2048)
def _said_to_go(said: str) -> frozenset[str]:
    """The content words of what the person says goes (`_content`'s stems); asked once a candidate, so cached."""
    spans = [next(g for g in m.groups() if g) for rx in (_GOES_AFTER, _GOES_BEFORE) for m in rx.finditer(said)]
    return frozenset().union(*(_content(span, set()) for span in spans)) if spans else frozenset()


#: a memory is replaced on the evidence of a subject word and a word of change alone ("nullable enabled solution-wide
#: from now on" and "errors: anyhow everywhere" share "errors") only from this cosine: in a store that holds more than
#: the memory a change is about, 5 of 6 such replacements below it took an unrelated memory out of recall
#: (`benchmarks/bench_relate_store.py`); with a name, a kind of tool or a number in common, the model decides alone
WEAK_EVIDENCE_AT = 0.4


def _enough_to_replace(x: list[float], candidate: Candidate) -> bool:
    named = (x[_SHARED] or x[_NAME_SWAP] or x[_FAMILY_SWAP] or x[_FAMILIES] or x[_NUMBER_CHANGE] or x[_NEGATED])
    return bool(named) or candidate.similarity >= WEAK_EVIDENCE_AT


def _name_turned_down(said: str, old: str) -> bool:
    """Whether the person says a name the old memory holds goes ("external-secrets is getting ripped out"): that
    memory is what they talk about, though they name nothing of it that stays."""
    return any(_negated(said, name) for name in _side(old).names)


def _on_subject(x: list[float]) -> bool:
    """Whether a pair is about one subject: a name, a kind of tool or a subject word shared, their words, or
    their meaning (said in another language: "l'API renvoie désormais …" and "API error messages …")."""
    return bool(x[_SHARED] or x[_FAMILY_SWAP] or x[_FAMILIES] or x[_OVERLAP] >= SAME_WORDS_AT
                or x[_SIMILARITY] >= SAME_MEANING_AT or (x[_SUBJECT] and x[_SIMILARITY] >= NEAR_AT)
                # a measure moved, said close in meaning: "it's wednesdays 14:00–16:00 utc now" where "Prod deploys
                # only Tue/Thu 10:00-12:00 UTC" held
                or (x[_NUMBER_CHANGE] and x[_SIMILARITY] >= NUMBER_NEAR_AT))


# --------------------------------------------------------------------------- model

@lru_cache(maxsize=1)
def _model() -> tuple[list[list[float]], list[str]]:
    data = json.loads(WEIGHTS.read_text(encoding="utf-8"))
    if tuple(data["features"]) != FEATURES or tuple(data["classes"]) != CLASSES:
        raise RuntimeError(f"{WEIGHTS.name} does not match this code's features; rerun benchmarks/train_relate.py")
    return data["weights"], data["classes"]


def probabilities(x: list[float], weights: list[list[float]] | None = None) -> dict[str, float]:
    """Class probabilities (softmax of the linear scores) for one feature vector."""
    rows = weights if weights is not None else _model()[0]
    scores = [sum(w * v for w, v in zip(row, x)) for row in rows]
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return {label: e / total for label, e in zip(CLASSES, exps)}


def _named_alike(old: str, said: str) -> bool:
    """Whether a name the old memory wrote with capitals is said in lower case ("MSRV is Rust 1.70" … "bumping msrv to
    1.74"): the same thing, which `features` (names as written) does not count as shared."""
    return any(name.isalpha() and len(name) > 2 and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", said, re.I)
               for name in _side(old).names - _side(said).names)


#: a way of working turned down by its verb: "no, don't squash" where "squash migrations per app before merging" held
_TURNED_DOWN_VERB = re.compile(r"\b(?:(?:(?:don'?t|do not|dont|no longer) (?:need|have) to|no need to)|don'?t|dont|do not|"
                               r"never|no more|stop|quit)\s+(?:\w+ly\s+)?([a-z]{3,})\b", re.I)
_OPENS_ON = re.compile(r"^\W*(?:always\s+|please\s+)?([a-z]{3,})\b", re.I)


#: words after the verb turned down that name nothing else it could be about ("don't squash anything")
_FILLER_AFTER = frozenset({"anymore", "any", "more", "anything", "everything", "please", "pls", "them", "those", "these",
                           "that", "this", "the", "again", "ever", "for", "now", "here", "with", "and"})


def _verb_turned_down(old: str, said: str) -> bool:
    """Whether the person turns down the verb a positive memory opens on ("squash migrations …" … "no, don't
    squash"), saying nothing else it could be about: the verb's object, when said, is in the memory too."""
    opens = _OPENS_ON.match(old)
    if not opens or _negative(old):
        return False
    verb = opens.group(1).lower()
    for m in _TURNED_DOWN_VERB.finditer(said):
        said_verb = m.group(1).lower()
        if said_verb not in (verb, verb + "ing", verb.rstrip("e") + "ing"):
            continue
        clause = re.split(r"[.,;:!?()]", said[m.end():], maxsplit=1)[0].lower()
        words = [word for word in re.findall(r"[a-z0-9]{3,}", clause) if word not in _FILLER_AFTER]
        missing = sum(word not in old.lower() for word in words)
        # ... said in the words of the memory, one of them perhaps in other words ("ask before multi-file edits" where
        # "ask before multi-file changes" held)
        if missing == 0 or (missing == 1 and len(words) >= 3):
            return True
    return False


#: a move said outright: "we're switching to …", "moving to …", "going with … instead"
_MOVES_ON = re.compile(r"\b(?:we(?:'re| are)|we'll|let'?s|i'?m|is|are) (?:now )?(?:switching|moving|migrating|going)(?: [\w.-]+){0,3}? "
                       r"(?:to|with)\b|\binstead\s*[.!]?\s*$", re.I)
MOVED_ON_AT, MOVED_ON_MARGIN = 0.4, 0.1


def _same_rule_again(new_text: str, said: str, x: list[float], candidate: Candidate, scope: str) -> bool:
    """Very close, nothing changed and nothing added: no change words (not even "now"), no name or
    number swapped or negated, no flip between a positive and a negative rule, no new name or number."""
    if candidate.scope != scope or candidate.similarity < DUPLICATE_AT:
        return False
    f = dict(zip(FEATURES, x))
    if f["change"] or f["change_weak"] or f["polarity_flip"]:
        return False
    if f["name_swap"] or f["family_swap"] or f["number_change"] or f["old_name_negated"]:
        return False
    old, rule = _side(candidate.text), _side(new_text)
    return not (rule.names - old.names) and not (rule.numbers - old.numbers)


#: the scope given to a memory the statement only applies (work moved onto what it holds, `_follows`): it is no
#: store's, so every path that replaces or refines a memory of the statement's scope passes it by
APPLIED = ""


def relate(
    new_text: str,
    said: str,
    category: str,
    scope: str,
    candidates: list[Candidate],
    *,
    weights: list[list[float]] | None = None,
) -> tuple[str, int | None, float]:
    """(relation, index of the candidate it applies to or None, score). relation is one of
    new, supersedes, refines, relates-to, duplicate. `new_text` is the rule a memory will hold,
    `said` the user's own words (change-of-mind language lives there).

    The score is the model's probability for the chosen relation (for relates-to across scopes,
    that of "not unrelated"; the cosine for a duplicate, and for relates-to and new decided by
    similarity alone). `category` is accepted for callers and not used (see the module's notes).
    `weights` replaces the shipped model (for training and cross-validation only)."""
    if not candidates:
        return "new", None, 0.0
    xs = [features(new_text, said, category, scope, c) for c in candidates]
    # work moved onto what a memory holds applies that memory: no statement of any scope replaces or refines it
    candidates = [replace(c, scope=APPLIED) if _follows(said or new_text, c.text) else c for c in candidates]
    probs = [probabilities(x, weights) for x in xs]
    nearest = max(range(len(candidates)), key=lambda i: candidates[i].similarity)

    def top(label: str) -> int | None:
        picks = [i for i, p in enumerate(probs) if max(p, key=p.get) == label]
        if label in ("supersedes", "refines"):  # a supersession or refinement never crosses scopes
            picks = [i for i in picks if candidates[i].scope == scope]
        if label == "supersedes":  # ... and replaces a rule on the same subject, whatever else changed
            picks = [i for i in picks if (_on_subject(xs[i]) or _name_turned_down(said or new_text, candidates[i].text))
                     and not _adds_to(xs[i], said or new_text) and _enough_to_replace(xs[i], candidates[i])]
            if len(picks) > 1:  # ... the one whose words the person said go, when they said so
                gone = _said_to_go(said or new_text)
                named = {i: len(gone & _side(candidates[i].text).content) for i in picks}
                if max(named.values()) > 0:
                    picks = [i for i in picks if named[i] == max(named.values())]
        if label == "refines":  # ... and adds to a rule on the same subject
            picks = [i for i in picks if candidates[i].similarity >= REFINES_AT and _on_subject(xs[i])]
        return max(picks, key=lambda i: probs[i][label]) if picks else None

    if _same_rule_again(new_text, said, xs[nearest], candidates[nearest], scope):
        return "duplicate", nearest, candidates[nearest].similarity
    # the person is in one place, wants answers in one language and of one kind, works in one editor, OS and shell at
    # a time: "i moved to lisbon" where "user in PST" held replaces it, whatever words the two share
    # ... and code is formatted one way at a time: "2 spaces everywhere now" where "likes tabs" held
    if (i := person_change(said or new_text, scope, candidates)) is not None or (
            i := style_change(said or new_text, scope, candidates)) is not None:
        return "supersedes", i, max(probs[i]["supersedes"], EXCLUSIVE_SWAP)
    # "no, don't squash" where "squash migrations per app before merging" held: the way a memory opens on, turned down
    turned_down = [i for i, c in enumerate(candidates) if c.scope == scope and _verb_turned_down(c.text, said or new_text)]
    if len(turned_down) == 1:
        return "supersedes", turned_down[0], max(probs[turned_down[0]]["supersedes"], EXCLUSIVE_SWAP)
    # one tool of a kind holds at a time: "use uv" where "use poetry" held, the old one not named again and no
    # word of addition, replaces it, however few words it takes; and one value of a named thing: "bumping to node
    # 20" where "node 18" held
    # the old rule named as the one that changes ("changing my mind on the terse thing: …", "scrap the double quotes
    # thing"): the one memory of the scope holding every word said to go is replaced, whatever the new one's words
    if _NAMES_THE_OLD.search(said or new_text) and (gone := _said_to_go(said or new_text)):
        named = [i for i, c in enumerate(candidates) if c.scope == scope and gone <= _side(c.text).content]
        if len(named) == 1:
            return "supersedes", named[0], max(probs[named[0]]["supersedes"], EXCLUSIVE_SWAP)
    # "i switched to neovim" where "uses VS Code" held: a tool of the same kind said as what the person moved to
    # replaces the one memory of the scope naming its kind, even when the old one is named again ("stop giving me
    # vscode menu steps")
    if moved_to := _moved_to(said or new_text):
        kinds = _families(moved_to)
        same_kind = [i for i, c in enumerate(candidates) if c.scope == scope
                     and (old := _side(c.text).names) and not moved_to & old and _families(old) & kinds]
        if len(same_kind) == 1:
            return "supersedes", same_kind[0], max(probs[same_kind[0]]["supersedes"], EXCLUSIVE_SWAP)
    swaps = [i for i, x in enumerate(xs) if candidates[i].scope == scope and not x[_REFINE_CUE]
             and ((x[_FAMILY_SWAP] and not x[_KEPT])
                  or (x[_NUMBER_CHANGE] and x[_CHANGED] and (x[_SHARED] or _named_alike(candidates[i].text,
                                                                                       said or new_text)))
                  # a measure moved, on the same subject: "we settled on 8h for sessions" where "sessions in redis,
                  # TTL 1h" held
                  or (x[_CHANGED] and (x[_OVERLAP] > 0 or x[_SIMILARITY] >= NEAR_AT)
                      and measure_moved(candidates[i].text, said or new_text)))]
    for label in ("supersedes", "refines"):
        if (i := top(label)) is not None:
            if (label == "refines" and _enough_to_replace(xs[i], candidates[i])
                    and (((xs[i][_CHANGED] or (xs[i][_NEGATED] and xs[i][_NAME_SWAP])) and not xs[i][_REFINE_CUE])
                         or widens(candidates[i].text, said or new_text))):
                # said as a change and not as an addition ("billing moves off App Service to …", "relaxing the any
                # rule a bit: …"), or with the old one turned down ("nobody there writes TypeScript"): the new
                # statement is the rule now, the old one is its earlier version
                label = "supersedes"
            return label, i, max(probs[i][label], EXCLUSIVE_SWAP) if i in swaps else probs[i][label]
    if swaps:
        i = max(swaps, key=lambda i: candidates[i].similarity)
        return "supersedes", i, max(probs[i]["supersedes"], EXCLUSIVE_SWAP)
    if (i := _moved_thing(said or new_text, scope, candidates)) is not None:
        return "supersedes", i, max(probs[i]["supersedes"], EXCLUSIVE_SWAP)
    # "we're switching to the http interface", "we're going with a flat json instead": a move said outright, with one
    # memory of the scope clearly the closest and close enough, replaces it even when they share no name (unless the
    # names on both sides are known tools of different kinds)
    if _MOVES_ON.search(said or new_text):
        near = sorted((i for i, c in enumerate(candidates) if c.scope == scope), key=lambda i: -candidates[i].similarity)
        known = _families(_side(said or new_text).names)
        if near and (old_kinds := _families(_side(candidates[near[0]].text).names)) and known and not known & old_kinds:
            near = []  # tools the lexicon knows, of other kinds ("switching to loguru" where "logging: zerolog" held)
        if near and candidates[near[0]].similarity >= MOVED_ON_AT and (
                len(near) == 1 or candidates[near[0]].similarity - candidates[near[1]].similarity >= MOVED_ON_MARGIN):
            return "supersedes", near[0], probs[near[0]]["supersedes"]
    # the same subject in the other scope, or a same-subject pair across scopes the model
    # would otherwise call a supersession or refinement: both stay, linked
    across = [
        i for i, (p, x) in enumerate(zip(probs, xs))
        if candidates[i].scope != scope and max(p, key=p.get) in ("supersedes", "refines", "other-scope")
        and x[_ACROSS_ON_SUBJECT] > 0  # on the same subject: shared names or subject words, or close
    ]
    if across:
        i = max(across, key=lambda i: 1.0 - probs[i]["unrelated"])
        return "relates-to", i, 1.0 - probs[i]["unrelated"]
    if candidates[nearest].similarity >= RELATED_AT:
        return "relates-to", nearest, candidates[nearest].similarity
    return "new", None, candidates[nearest].similarity
