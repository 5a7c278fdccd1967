"""The trained part of the offline classifier: is a sentence durable, which category, which scope.

Three small logistic-regression heads, shipped as `capture_weights.npz` beside this
module (trained by `benchmarks/train_capture.py` on the capture corpus's train split,
deterministically; the file is rebuilt bit for bit by re-running it):

- **durable**: is what this sentence says still true and useful in a later session
  (a rule, a preference, a decision, a fact about the person, a correction)?
- **category**: which of the five (softmax over the durable rows);
- **scope**: repo or user, for what explicit cues leave open.

Each reads the same features of the sentence alone: its all-MiniLM-L6-v2 vector
and pattern features (modality, "from now on", "in this repo", one-off and
hypothetical markers, questions, quoted output, imperatives, quantifiers, …) that
carry what vectors miss. Without an embedding model (lexical mode) a second set of
heads over the pattern features alone decides. What depends on the turn before (a
confirmation of the agent's proposal, a correction of its work) is decided by rules
in `offline.py`.

The decision threshold of `durable` is set for precision: real sessions are mostly
tasks and chatter, so a sentence must be clearly durable to be written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from forgemem.capture.classify.lexicon import ALWAYS, EVERYWHERE, FROM_NOW_ON, NEVER
from forgemem.capture.classify.never import _rx, never_durable

CATEGORIES = ("coding-preferences", "project-conventions", "architectural-decisions", "user-facts", "corrections")
WEIGHTS = Path(__file__).with_name("capture_weights.npz")


# ------------------------------------------------------------------ pattern features

_P = {
    "first_person": _rx(r"\b(?:i|i'm|i've|i'd|my|me|mine)\b"),
    "we": _rx(r"\b(?:we|we're|we've|our|us|ours)\b"),
    "you": _rx(r"\b(?:you|your|you're)\b"),
    "always_never": _rx(r"\b(?:always|never|every time|each time|whenever|at all times)\b"),
    "from_now_on": _rx(r"\bfrom now on\b", r"\bgoing forward\b", r"\bin (?:the )?future\b", r"\bfrom here on\b",
                       r"\bremember (?:to|that)\b", r"\bkeep in mind\b", r"\bfor (?:all|every) (?:new |future )?\w+"),
    "prefer": _rx(r"\bprefer\w*\b", r"\bi (?:really |much |strongly )?(?:like|love|hate|dislike|can't stand)\b",
                  r"\b(?:fan of|rather than|instead of|over)\b"),
    "modal_rule": _rx(r"\b(?:must|should|shall|need to|needs to|have to|has to|is required|are required)\b",
                      r"\b(?:don't|do not|never|avoid|stop) \w+"),
    "convention": _rx(r"\b(?:convention|standard|policy|rule|style guide|our style|by default|the norm)\b",
                      r"\b(?:live|lives|go|goes|belong|belongs|are kept|is kept|sit|sits) (?:in|under)\b"),
    "repo_cue": _rx(r"\bin this (?:repo|repository|project|codebase|team|service|app|package|crate|module)\b",
                    r"\b(?:this|the) (?:repo|repository|project|codebase)(?:'s)?\b", r"\bhere\b(?!'s| is| are)",
                    r"\bour (?:team|repo|project|codebase|ci|pipeline|app|service|stack)\b", r"\bbei uns\b",
                    r"\b(?:aquí|ici|en este proyecto|dans ce projet|in diesem (?:projekt|repo))\b"),
    "user_cue": _rx(r"\b(?:personally|for me|i prefer|my (?:own )?(?:preference|style|taste)|in all my projects|"
                    r"everywhere i work|across (?:all )?(?:my )?projects|i always|i never|i like|i hate|i'm a|i am a)\b"),
    "fact": _rx(r"\bmy name(?:'s| is)\b", r"\bi(?:'m| am) (?:a|an|the) [\w-]+", r"\bi (?:work|live|speak|use|am on)\b",
                r"\bi(?:'m| am) (?:in|from|based in|located in) (?-i:[A-Z])", r"\bi (?:only )?have (?:a|an|one|two|\d)",
                r"\bmy (?:time ?zone|team|role|job|os|laptop|machine|editor|ide|shell|keyboard|language|screen)\b",
                r"\bi(?:'m| am) (?:based|located|colou?r-?blind|left-handed|new to|dyslexic)\b",
                r"\bich bin\b", r"\bsoy\b", r"\bje suis\b"),
    "decision": _rx(r"\b(?:we|i)(?:'ve| have)? (?:decided|chosen|chose|picked|settled on|agreed|went with|go with)\b",
                    r"\blet's (?:go with|stick with|switch to|move to|use|adopt|standardi[sz]e)\b",
                    r"\b(?:the|our) decision\b", r"\bwe(?:'re| are) (?:going with|moving to|switching to)\b"),
    "rationale": _rx(r"\bbecause\b", r"\bsince\b", r"\bso that\b", r"\bto avoid\b", r"\bweil\b", r"\bporque\b",
                     r"\bparce que\b", r"\b(?:too|so) (?:slow|fast|flaky|expensive|complex|risky|heavy)\b"),
    "change": _rx(r"\bactually\b", r"\binstead\b", r"\bno longer\b", r"\banymore\b", r"\bswitch(?:ed|ing)?\b",
                  r"\bmoved? (?:to|off|from|away)\b", r"\bchang(?:e|ed|ing) (?:my|our) mind\b", r"\bscratch that\b",
                  r"\bnow (?:we|i|it's|its|on)\b", r"\breplac\w+\b", r"\bmigrat\w+\b", r"\bi was wrong\b"),
    "negation_start": _rx(r"^(?:no|nope|wrong|not quite|not like that|that's (?:wrong|not|incorrect)|don't|do not|"
                          r"stop|never|nein|no,)\b"),
    "one_off": _rx(r"\bfor now\b", r"\bthis once\b", r"\bjust this\b", r"\b(?:today|tonight|tomorrow)\b",
                   r"\bfor this (?:pr|branch|commit|release|sprint|session|ticket|task|one|file|run)\b",
                   r"\buntil\b", r"\btemporar\w+\b", r"\bright now\b", r"\bfor the moment\b", r"\bthis time\b",
                   r"\bin this session\b", r"\bfor the demo\b", r"\bquick(?:ly)? hack\b", r"\bjust for\b"),
    "hypothetical": _rx(r"^if\b", r"\bif we ever\b", r"\bmaybe\b", r"\bperhaps\b", r"\bone day\b",
                        r"\bsomeday\b", r"\bin theory\b", r"\bmight\b", r"\bwhat if\b", r"\bwould be nice\b",
                        r"\bcould (?:we|consider)\b", r"\beventually\b", r"\bi wonder\b"),
    "question": _rx(r"\?\s*$", r"^(?:can|could|would|will|should|is|are|does|do|did|what|why|how|where|when|which|"
                    r"who|any idea|do you know)\b"),
    "quoted": _rx(r"[\"“”].{8,}[\"“”]", r"\b(?:says|said|wrote|according to|the (?:wiki|readme|docs?|ticket|"
                  r"error|log|output|message) (?:says|said)|quote)\b", r"^\s*>", r"^\s*(?:error|warning|traceback)\b",
                  r"\[\d{2}:\d{2}"),
    "task_start": _rx(r"^(?:please |pls |can you |could you |would you |now |ok,? |okay,? |so,? |then )?"
                      r"(?:add|fix|make|create|implement|update|write|remove|delete|refactor|rename|change|move|"
                      r"run|show|explain|check|look|find|help|build|install|bump|generate|set up|setup|debug|"
                      r"investigate|try|test|deploy|merge|commit|push|revert|open|review|optimi[sz]e|clean)\b"),
    "confirm_start": _rx(r"^(?:yes|yep|yeah|yup|sure|ok|okay|sounds good|do it|go ahead|let's do (?:it|that)|agreed|"
                         r"perfect|exactly|please do|go for it|correct|right|ja|sí|si|oui|d'accord)\b"),
    "decline": _rx(r"\b(?:not now|no thanks|don't bother|just this one|later|revisit|not for now|skip it)\b"),
    "code": _rx(r"`[^`]+`", r"\b[\w-]+\.(?:py|ts|tsx|js|go|rs|java|kt|rb|toml|yaml|yml|json|md|sh|sql)\b",
                r"(?:^|\s)--?[a-z][\w-]+", r"\b\w+/\w+/"),
    "imperative_rule": _rx(r"^(?:use|keep|put|name|write|prefer|avoid|never|always|don't|do not|run|place|"
                           r"store|add|follow|stick to|default to|make sure)\b"),
    "quantifier": _rx(r"\b(?:every|all|each|any|everything|everywhere|anything|nothing|nobody)\b",
                      r"^no \w+", r"\bno \w+(?:s|ing)\b"),
    "additive": _rx(r"\b(?:too|as well)\W*$", r"^(?:also|and|now|then)\b", r"\b(?:that one|this one|there)\W*$"),
    "specific": _rx(r"\b(?:that|this|the) (?:function|file|test|button|line|loop|check|one|method|class|query|"
                    r"endpoint|page|component|output|value|field|variable|command)\b"),
    "chatter": _rx(r"\b(?:thanks|thank you|lol|haha|great job|nice|awesome|cool|ugh|argh|damn|hate this|"
                   r"so tired|exhausted|coffee|weekend|on call)\b"),
}
#: what the agent's turn before says: work it just did (what a correction reacts to)
_AGENT_DID = _rx(r"\b(?:i(?:'ve| have)? (?:added|changed|updated|created|fixed|written|wrote|removed|refactored|"
                 r"moved|renamed|implemented|used|replaced|installed|set)|done|here's|here is)\b")
PATTERN_NAMES = tuple(_P) + ("short", "long", "non_ascii", "agent_did")


def pattern_features(sentence: str, before: str = "") -> np.ndarray:
    """The sentence's pattern features, and whether the agent's turn before it reports work done.

    Training gives every row a turn before it (the corpus gives one only to corrections
    and confirmations; in a real session every human turn follows the agent's), so that
    having one says nothing and only what it says counts.
    """
    values = [1.0 if rx.search(sentence) else 0.0 for rx in _P.values()]
    words = len(sentence.split())
    values += [1.0 if words <= 4 else 0.0, 1.0 if words >= 40 else 0.0,
               1.0 if re.search(r"[äöüßñéèàçáíóú¿¡]", sentence, re.I) else 0.0,
               1.0 if _AGENT_DID.search(before) else 0.0]
    return np.asarray(values, dtype=np.float32)


# ------------------------------------------------------------------ character n-grams

#: n-grams of 2 to 5 characters inside word boundaries: they read the words people type as they type them
#: ("dont", "im", "pls", typos, inflections in other languages) where a sentence vector blurs them
CHAR_NGRAMS = (2, 5)
_SPACES = re.compile(r"\s\s+")


def char_ngrams(text: str) -> list[str]:
    """The lower-cased character n-grams of each word, padded with a space (scikit-learn's "char_wb")."""
    low, high = CHAR_NGRAMS
    grams: list[str] = []
    for word in _SPACES.sub(" ", text.lower()).split():
        word = f" {word} "
        for n in range(low, high + 1):
            grams.extend(word[i: i + n] for i in range(max(1, len(word) - n + 1)))
            if len(word) <= n:
                break  # the whole word: counted once
    return grams


@dataclass(frozen=True)
class CharHead:
    """A logistic regression over the sentence's TF-IDF character n-grams (sublinear tf, L2-normalised)."""

    index: dict[str, int]
    idf: np.ndarray
    w: np.ndarray
    b: float
    category_w: np.ndarray  # (n-grams, 5)
    category_b: np.ndarray

    def _logits(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        durable, category = np.full(len(texts), self.b), np.tile(self.category_b, (len(texts), 1))
        for row, text in enumerate(texts):
            counts: dict[int, int] = {}
            for gram in char_ngrams(text):
                column = self.index.get(gram)
                if column is not None:
                    counts[column] = counts.get(column, 0) + 1
            if not counts:
                continue
            columns = np.fromiter(counts, dtype=np.int64, count=len(counts))
            values = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))) * self.idf[columns]
            values /= float(np.linalg.norm(values))
            durable[row] += float(values @ self.w[columns])
            category[row] += values @ self.category_w[columns]
        return durable, category

    def probabilities(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(durable probability, category probabilities) of each text."""
        durable, category = self._logits(texts)
        category = np.exp(category - category.max(axis=1, keepdims=True))
        return _sigmoid(durable), category / category.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------ the heads


@dataclass(frozen=True)
class Heads:
    """Weights of one feature set: with the embedding model ("dense") or patterns only."""

    durable_w: np.ndarray
    durable_b: float
    durable_at: float  # the decision threshold
    category_w: np.ndarray  # (features, 5)
    category_b: np.ndarray
    scope_w: np.ndarray
    scope_b: float
    mean: np.ndarray  # feature standardisation
    scale: np.ndarray
    mix: float = 0.0  # dense: the weight of its own durable probability against the patterns heads'
    char: float = 0.0  # the weight of the character n-gram head's probability against the mix of the others
    char_category: float = 0.0  # ... and of its category probabilities against this kind's category head


@lru_cache(maxsize=1)
def load_heads() -> dict[str, Heads]:
    data = np.load(WEIGHTS)
    heads = {}
    for kind in ("dense", "patterns"):
        heads[kind] = Heads(
            durable_w=data[f"{kind}_durable_w"], durable_b=float(data[f"{kind}_durable_b"]),
            durable_at=float(data[f"{kind}_durable_at"]),
            category_w=data[f"{kind}_category_w"], category_b=data[f"{kind}_category_b"],
            scope_w=data[f"{kind}_scope_w"], scope_b=float(data[f"{kind}_scope_b"]),
            mean=data[f"{kind}_mean"], scale=data[f"{kind}_scale"],
            mix=float(data["dense_mix"]) if kind == "dense" else 0.0, char=float(data[f"{kind}_char"]),
            char_category=float(data["char_category_mix"]),
        )
    names = tuple(str(n) for n in data["pattern_names"])
    if names != PATTERN_NAMES:
        raise RuntimeError(f"{WEIGHTS.name} was trained with other pattern features; run benchmarks/train_capture.py")
    return heads


@lru_cache(maxsize=1)
def load_char_head() -> CharHead:
    data = np.load(WEIGHTS)
    grams = [str(g) for g in data["char_vocabulary"]]
    return CharHead({g: i for i, g in enumerate(grams)}, data["char_idf"].astype(np.float64),
                    data["char_w"].astype(np.float64), float(data["char_b"]),
                    data["char_category_w"].astype(np.float64), data["char_category_b"].astype(np.float64))


def feature_matrix(sentences: list[str], embedder=None, befores: list[str] | None = None) -> np.ndarray:
    """One row per sentence: [its MiniLM vector, the agent's turn before's vector,] pattern features."""
    befores = befores if befores is not None else [""] * len(sentences)
    patterns = np.stack([pattern_features(s, b) for s, b in zip(sentences, befores, strict=True)])
    if embedder is None:
        return patterns
    vectors = embedder.encode(list(sentences) + list(befores))
    mine, theirs = vectors[: len(sentences)], vectors[len(sentences):]
    theirs = theirs * np.asarray([[1.0 if b.strip() else 0.0] for b in befores], dtype=np.float32)
    return np.concatenate([mine, theirs, patterns], axis=1).astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30, 30)))


@dataclass(frozen=True)
class Decision:
    durable: float  # probability
    is_durable: bool
    category: str
    category_p: float
    user_p: float  # probability the memory belongs to the user scope (before cues)
    categories: tuple[tuple[str, float], ...] = ()  # every category, most likely first

    def best_category(self, allowed) -> str:
        """The most likely category among `allowed`."""
        return next((c for c, _ in self.categories if c in allowed), self.category)


#: Lasting statements generalise: a standing word ("always", "from now on", "in this repo",
#: "we", "I prefer", a quantifier, a decision, a change of mind, a negation). A unit with
#: none of them ("handle the escape key too") is almost always a task: it must clear a
#: higher bar.
GENERAL = ("always_never", "from_now_on", "prefer", "modal_rule", "convention", "repo_cue", "user_cue", "fact",
           "decision", "change", "negation_start", "we", "first_person", "quantifier", "rationale")
UNMARKED_AT = 0.85
#: ... and one that says it holds from now on ("never commit to main", "always run X first", "from now on …")
#: clears a lower one: its words already say it lasts
STANDING_AT = 0.3
_STANDING_RULE = _rx(rf"^(?:\W*\w+\W+){{0,2}}?(?:never|always|don't ever|do not ever|{ALWAYS}|{NEVER})\b",
                     r"\bfrom now on\b", rf"\b(?:{FROM_NOW_ON}|zawsze|nigdy)\b",
                     # "from now the daily KPI goes to slack": "from now on" said short
                     r"^(?:\W*\w+\W+){0,2}?from now\b",
                     # "wij gebruiken in onze huisstijl nooit puur zwart, altijd #1F1A17", "gebruik nooit meer text-black"
                     rf"\b(?:wir|wij|we|nosotros|nous|noi)\b[^.;:]{{0,40}}?\b(?:{ALWAYS}|{NEVER})\b",
                     rf"\b(?:gebruik|nutze|verwende|benutze|usa|utilise|utilisez)\s+(?:\S+\s+)?(?:{ALWAYS}|{NEVER})\b",
                     # said of all the team's things: "all our rust fw crates use panic-halt", "switch every crate from
                     # panic-halt to panic-probe"
                     r"\ball (?:of )?our (?:[\w-]+ ){1,4}(?:use|are|go|live|run|have|get|need)\b",
                     r"\b(?:switch|move|migrate) (?:every|all|each) (?:of (?:our|the) )?[\w-]+(?: [\w-]+)? (?:from [\w.-]+ )?"
                     r"(?:to|over to|onto)\b",
                     # what it holds for: "dat geldt voor de hele site", "gilt für das ganze Projekt"
                     r"\b(?:geldt voor|gilt für|vale para|vaut pour|applies to) (?:de hele|het hele|alle|alles|die ganze|"
                     r"das ganze|den ganzen|todo|toda|todos|tout|toute|tous|the whole|all|every)\b",
                     # a team's change of tool or way: "we're moving this repo to opentofu", "we switched to uv"
                     r"\bwe(?:'re| are|'ve| have)? (?:moving|moved|switching|switched|migrating|migrated|"
                     r"standardi[sz]ing|standardi[sz]ed)(?: (?:this|the|our) (?:repo|repository|project|codebase|"
                     r"team|app|service))? (?:to|on)\b",
                     r"\bgoing forward\b", r"\bby default\b", r"\bevery time\b",
                     # a habit of the agent's stopped, of things in general: "ugh, stop using force unwraps" (not
                     # "stop using the staging db")
                     r"^(?:\W*\w+\W+){0,2}?stop (?:using|writing|adding|putting|giving me|making|leaving|sprinkling)\s+"
                     r"(?!(?:the|this|that|it|these|those|my|our|your|a|an)\b)(?:[\w`'.-]+\s+){0,2}?[\w`'.-]+s\b",
                     # a decision said as one: "ok let's go with that: soft deletes via deletedAt …", "we decided …"
                     r"\blet'?s go with (?:that|this|it|option \w+)\s*[:,-]\s*\S+(?:\s+\S+){2,}",
                     r"\bwe(?:'ve| have)? decided\b", r"\b(?:the )?decision(?: is)?\s*:",
                     # what the agent does, asked to go on: "keep doing the java comparisons when … comes up"
                     r"^(?:\W*\w+\W+){0,2}?keep (?:doing|using|giving|writing|adding|making) (?:the|these|those|that|"
                     r"this|\w+s)\b", r"\bin (?:this|our) "
                     r"(?:repo|repository|project|codebase)\b",
                     r"\b(?:en este (?:repo|repositorio|proyecto)|in diesem (?:repo|projekt)|dans ce (?:repo|projet|"
                     r"dépôt)|neste (?:repo|projeto|repositório)|in questo (?:repo|progetto)|in deze (?:repo|project))\b")


#: the bar for a sentence that is only such a choice: two tools of one kind, one over the other, is a rule in most
#: words it comes in ("use Hilt for DI, not Koin" 0.29, with a full stop 0.41)
CHOICE_AT = 0.2
#: a choice of one thing over another of its kind, said bare: "pnpm not npm", "no. tabs, not spaces", "vitest instead of
#: jest". It names no particular thing to work on, so it is not a task, and it holds until said otherwise: it clears the
#: standing bar. Both sides must be of one kind (tools of one family in `forgemem.names`, or two ways of one style), so
#: "staging not prod" or "this one not that" is not a choice of a way
_CHOICE = re.compile(r"^\W*(?:(?:no|nope|nah|ok)\W+)?(?:use\s+)?(?P<a>[\w.+#/@-]+(?: [\w.+#/@-]+)?),?\s+"
                     r"(?:not|instead of|over|rather than|statt|nicht|no|pas|non)\s+(?P<b>[\w.+#/@-]+(?: [\w.+#/@-]+)??)"
                     r"(?:\s+(?:please|pls|plz|thanks|again|here|ever))?\W*$", re.I)
#: ... and said as an instruction with what it is for: "use RestClient for outbound calls, not WebClient", "for DI use
#: Hilt, not Koin"
_CHOICE_FOR = re.compile(r"^\W*(?:(?:no|nope|nah|ok|so|and|also)\W+)?(?:for (?!this|that|now|today)(?:[\w.+#/@-]+ ){1,4}?,?\s*)?"
                         r"use\s+(?P<a>[\w.+#/@-]+(?: [\w.+#/@-]+)?)"
                         r"(?:\s+(?:for|in|on|with) (?!this|that|now|today|it\b)(?:[\w.+#/@-]+ ?){1,5}?)?,?\s+"
                         r"(?:not|instead of|over|rather than)\s+(?P<b>[\w.+#/@-]+(?: [\w.+#/@-]+)??)"
                         r"(?:\s+(?:please|pls|plz|thanks|again|here|ever|anymore))?\W*$", re.I)
_OPPOSITES = ({"tabs", "spaces"}, {"tab", "spaces"}, {"single", "double"}, {"single quotes", "double quotes"},
              {"snake_case", "camelcase"}, {"kebab-case", "camelcase"}, {"kebab-case", "snake_case"},
              {"async/await", "callbacks"}, {"utc", "local time"}, {"named exports", "default exports"},
              {"main", "master"})


def names_a_choice(sentence: str) -> bool:
    """Whether the whole sentence chooses one thing over another of its kind ("pnpm not npm", "tabs not spaces")."""
    from forgemem.names import _families, _names

    match = _CHOICE.match(sentence.strip()) or _CHOICE_FOR.match(sentence.strip())
    if not match:
        return False
    a, b = (match.group(side).lower().strip(".,") for side in ("a", "b"))
    if {a, b} in _OPPOSITES:
        return True
    named = _names(match.group(0))  # read together: two tools of one kind vouch for each other ("ruff not black")
    return bool(_families({n for n in named if n in a}) & _families({n for n in named if n in b}))


#: the person's setup, said plainly: it lasts ("I'm on a mac", "I use neovim", "my shell is fish"). Said bare, the
#: heads give it little ("i'm on windows" 0.13: sessions are full of "i'm on a train", "im on call this week"), so it
#: clears the lowest bar: only a word that it does not last ("today", "this week": `never_durable`) stops it
_SETUP_SAID = _rx(r"\bi(?:'m| am|m) (?:on|using) (?:a |an |my )?(?:mac|macos|windows|linux|ubuntu|wsl\w*|arch|fedora|"
                  r"debian|chromebook|m\d mac|macbook|m\d(?: (?:pro|max|air|mini))?|(?:mac ?book )?(?:air|pro) m\d|"
                  r"thinkpad|surface|framework)\b", r"\bi (?:use|work in|work with|code in) (?:vim|neovim|emacs|"
                  r"vs ?code|jetbrains|pycharm|intellij|zsh|fish|powershell|helix|zed)\b",
                  r"\bi(?:'m| am|m) (?:(?:red[- ]green|partially|fully|totally|a bit) )?(?:colou?r-?blind|dyslexic|"
                  r"left-handed|based in|in the \w+ time ?zone)\b",
                  r"\bi(?:'m| am|m) in (?:the )?[\w/+-]+ (?:time|timezone|time zone|tz)\b",
                  r"\bi(?:'m| am|m) (?:in|on) (?-i:[A-Z]{2,3}S?T|CET|CEST|EET|WET|UTC|GMT)(?:[+-]\d{1,2})?\b",
                  r"\bmy (?:os|editor|ide|shell|time ?zone|keyboard layout|screen reader) is\b",
                  # the team they are on: "fyi i'm on the checkout team", "i joined the payments team"
                  r"\bi(?:'m| am|m) (?:now )?(?:on|in) the (?:[\w-]+ ){1,3}team\b",
                  # what they are by trade, in the languages people write in: "ik ben eigenlijk een Vue dev"
                  r"\b(?:i'?m|i am|ik ben|ich bin|je suis|soy|sou|sono)(?: (?:actually|really|mostly|eigenlijk|"
                  r"eigentlich|en fait|basically))? (?:a|an|een|ein|eine|un|une|um|uma|una) (?:[\w.+#-]+ ){0,2}"
                  r"(?:dev|developer|engineer|designer|entwickler|ontwikkelaar|développeur|desarrollador|"
                  r"desenvolvedor|sviluppatore)\b", r"\bi (?:joined|moved to) the "
                  r"(?:[\w-]+ ){1,3}team\b", r"\bmy team is\b")
SETUP_AT = 0.05
#: the language to answer in, asked for always ("bitte antworte mir immer auf deutsch", "always reply in english"): the
#: person's setup too (the heads give "antworte mir immer auf deutsch" 0.19: few rows are not English)
_ALWAYS_ANYWHERE = _rx(rf"\b(?:always|from now on|going forward|{FROM_NOW_ON}|{ALWAYS})\b")


def _answers_in_a_language_always(sentence: str) -> bool:
    from forgemem.capture.classify.relate_person import _answer_languages

    return bool(_ALWAYS_ANYWHERE.search(sentence)) and bool(_answer_languages(sentence))


#: the same standing words in the other languages people write to their agent (the pattern features are
#: English; the heads learn other languages from few rows, so these words must not be what they lack)
_GENERAL_ELSEWHERE = _rx(
    r"\b(?:in general|generally|as a rule|rule of thumb|by convention|as standard)\b",
    # how things are named here: "naming is stg_<source>__<table>", "branch names follow feat/<ticket>"
    r"\bnaming(?: scheme| convention| pattern)? (?:is|are|here is)\b", r"\bnames (?:are|follow|look like|go like)\b",
    # a decision said as settled: "marta made the call and it's final: endpoints are defined with tapir"
    r"\b(?:made the call|(?:it'?s|its|that'?s|thats|is) final|final (?:answer|decision|call)|settled on|"
    r"the decision is)\b",
    # the way things are here, said to be so: "keep that split, thats how this workspace is set up on purpose"
    r"\b(?:that'?s|thats|this is|that is) how (?:we|this|the|our|things|it'?s|it is)\b", r"\b(?:on purpose|by design)\b",
    # a rule said with whose it is: "single quotes unless theres interpolation, thats what standardrb wants"
    r"\bthat'?s what [\w.-]+ (?:wants|expects|enforces|requires|says)\b",
    # what holds on beside a change: "but the scripts in scripts/ stay bash", "for yaml and markdown do 2 spaces"
    r"\b(?:stays?|remains?) (?:in )?[\w`./-]+\W*(?:,|$)", r"\bfor (?:all )?[\w.]+ (?:and [\w.]+ )?(?:files )?do\b",
    # as people type them: "dont mock the db", and a choice stated against another ("retries use tenacity, not …")
    r"\bdont \w+", r"\buse [\w`./:-]+(?: [\w`./:-]+)?,? not\b", r"\b(?:pls|please|plz),? not (?:the )?[\w`.-]+",
    # as the rest of the project does it: "routers are plural noun, no .router suffix, same as the others"
    r"\b(?:same as|like|as with) (?:the others|the rest|all the others|everywhere else|the other [\w-]+s)\b",
    # what the project's tools are: "the runner is `python runtests.py`", "our default branch is trunk"
    r"\b(?:the|our) (?:test )?(?:runner|linter|formatter|build tool|package manager|entry ?point|default branch|"
    r"orm|task runner|ci|db|database|stack) (?:is|are|here is)\b",
    # an instruction about things in general, not a particular one: "keep functions under 30 lines", "name test
    # files test_*.py", "use yarn for installs" (a task points at its thing: "make the button blue", "fix it")
    r"^(?:\W*(?:please|pls|and|also|btw|oh|ok|so)\W+)*(?:use|keep|name|write|put|prefer|avoid|stick to|default "
    r"to|follow|store|place|format|prefix|sort|indent|wrap|limit|pin|log|raise|catch|comment|document|annotate)\b"
    r"(?!.*\b(?:the|this|that|these|those|it|its|them|here|there|my|your|for now|today)\b)",
    # "branch names here are …": the repository's way ("here are the logs" is not: nothing is named before it)
    r"\b\w{3,}s here (?:is|are)\b",
    # the other languages' "from now on", "always", "never", "everywhere" (`lexicon`); then German
    rf"\b(?:{FROM_NOW_ON}|{ALWAYS}|{NEVER}|{EVERYWHERE})\b",
    r"\b(?:in zukunft|grundsätzlich|generell|bei uns|wir (?:nutzen|"
    r"verwenden|benutzen|machen|schreiben|haben)|ich (?:bin|sitze?|arbeite|wohne|nutze|bevorzuge|mag)|lieber|"
    r"keine?n?|nicht mehr|statt)\b",
    # Spanish, Portuguese, Italian
    r"\b(?:jamás|prefiero|prefiro|preferisco|usamos|utilizamos|usiamo|nada de|en lugar de|em vez de|invece di|"
    r"soy|sou|sono|trabajo|trabalho|lavoro|en general|em geral|in generale|ya no|não mais|non più)\b",
    # French
    r"\b(?:de manière générale|en général|"
    r"je (?:préfère|suis|travaille|bosse)|on (?:utilise|a décidé|fait)|nous (?:utilisons|avons décidé)|"
    r"plus de|au lieu de|ne \w+ plus|pas de)\b",
    # Dutch
    r"\b(?:wij gebruiken|we gebruiken|ik (?:ben|werk|gebruik)|liever|geen)\b",
)


def generalises(sentence: str) -> bool:
    return (any(_P[name].search(sentence) for name in GENERAL) or bool(_GENERAL_ELSEWHERE.search(sentence))
            or bool(_STANDING_RULE.search(sentence)) or bool(_SETUP_SAID.search(sentence)) or names_a_choice(sentence))


def decide(features: np.ndarray, kind: str, texts: list[str] | None = None) -> list[Decision]:
    """Decisions for feature rows of `kind` ("dense": vectors + patterns, or "patterns" alone).

    With vectors, durability is a mix of both heads' probabilities and, given the texts, the
    character n-gram head's (the mix and the threshold were chosen by cross-validation);
    category and scope come from the dense heads.
    """
    heads = load_heads()[kind]
    x = (features - heads.mean) / heads.scale
    durable = _sigmoid(x @ heads.durable_w + heads.durable_b)
    if kind == "dense":
        plain = load_heads()["patterns"]
        only = (features[:, -len(PATTERN_NAMES):] - plain.mean) / plain.scale
        mix = heads.mix
        durable = mix * durable + (1 - mix) * _sigmoid(only @ plain.durable_w + plain.durable_b)
    logits = x @ heads.category_w + heads.category_b
    logits = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if texts is not None:
        char_durable, char_category = load_char_head().probabilities(texts)
        durable = (1 - heads.char) * durable + heads.char * char_durable
        probs = (1 - heads.char_category) * probs + heads.char_category * char_category
    user = _sigmoid(x @ heads.scope_w + heads.scope_b)
    out = []
    for i in range(len(features)):
        c = int(np.argmax(probs[i]))
        bar = heads.durable_at
        if texts is not None and _STANDING_RULE.search(texts[i]):
            bar = min(bar, STANDING_AT)
        if texts is not None and names_a_choice(texts[i]):
            bar = min(bar, CHOICE_AT)
        if texts is not None and (_SETUP_SAID.search(texts[i]) or _answers_in_a_language_always(texts[i])):
            bar = min(bar, SETUP_AT)
        if texts is not None and not generalises(texts[i]):
            bar = max(bar, UNMARKED_AT)
        if texts is not None and never_durable(texts[i]):
            bar = 2.0
        ranked = tuple(sorted(((CATEGORIES[k], float(probs[i, k])) for k in range(len(CATEGORIES))),
                              key=lambda pair: -pair[1]))
        out.append(Decision(float(durable[i]), bool(durable[i] >= bar), CATEGORIES[c], float(probs[i, c]),
                            float(user[i]), ranked))
    return out
