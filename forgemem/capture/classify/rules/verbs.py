"""Verb forms for the rewrite: the base form of a past or -ing verb, and the third person."""

from __future__ import annotations

import re

_IRREGULAR_PAST = {
    "ran": "run", "wrote": "write", "made": "make", "put": "put", "set": "set", "split": "split",
    "built": "build", "took": "take", "gave": "give", "left": "leave", "kept": "keep", "got": "get",
    "threw": "throw", "did": "do", "sent": "send", "cut": "cut", "brought": "bring", "found": "find",
    "began": "begin", "chose": "choose", "broke": "break", "went": "go", "told": "tell", "said": "say",
    "read": "read", "hid": "hide", "forgot": "forget", "shut": "shut", "stuck": "stick", "rewrote": "rewrite",
    "undid": "undo", "redid": "redo", "overwrote": "overwrite", "dropped": "drop", "led": "lead",
    "fed": "feed", "bound": "bind", "drew": "draw", "spun": "spin", "ate": "eat", "sped": "speed",
    "swapped": "swap", "committed": "commit", "reset": "reset", "upset": "upset", "added": "add",
    "lost": "lose", "won": "win", "paid": "pay", "held": "hold", "meant": "mean", "felt": "feel", "heard": "hear",
    "understood": "understand", "stood": "stand", "spent": "spend", "sold": "sell", "taught": "teach",
    "thought": "think", "bought": "buy", "caught": "catch", "fought": "fight", "knew": "know", "saw": "see",
    "came": "come", "became": "become", "grew": "grow", "flew": "fly", "slept": "sleep", "lent": "lend",
    "had": "have",
}
_NEEDS_E = re.compile(
    r"(?:^[^aeiou]*[aeiou][bcdfgkmnprstvz]$)"  # one syllable, consonant-vowel-consonant: mak(e), us(e), mov(e)
    r"|(?:at|iz|is|ut|ud|ov|rs|os|ir|ur|ac|iv|ag|ib|dg|rg|ns|ps|lv|rv|uc|ok|ar|ot|as|ul|ol|ic|or|let|"
    r"[bcdfgkptz]l|(?:ch|rr)ang)$"
)
_NO_E = {"edit", "open", "visit", "limit", "exit", "audit", "commit", "submit", "omit", "permit",
         "deploy", "enter", "order", "filter", "render", "cover", "answer", "offer", "alter", "lint",
         "test", "push", "pull", "fix", "mix", "log", "tag", "pin", "run", "get", "set", "put", "cut",
         "target", "budget", "credit", "inherit", "profit", "deposit", "develop", "ship", "bump",
         "stub", "mock", "fetch", "patch", "watch", "catch", "match", "pad", "nest", "list", "sort",
         "start", "want", "need", "seed", "feed", "bundle", "handle", "print", "import", "export",
         "focus", "bias", "panic", "mimic", "format", "refactor", "benchmark", "cancel", "label",
         "model", "travel", "level", "channel", "signal", "control", "patrol", "install", "call",
         "roll", "poll", "scroll", "monitor", "mirror", "vendor", "author", "factor", "color", "colour", "anchor",
         "honor", "tutor", "sponsor", "censor", "mentor", "market", "ticket", "bracket", "pocket", "bucket",
         "spell", "kill", "fill", "pool", "tool", "cool", "wrap", "map",
         "abort", "sit", "hit", "wait", "split", "quit", "shut", "gut", "ask", "check",
         "work", "mark", "park", "block", "lock", "look", "book", "hook", "cook", "stack", "pick",
         "pack", "track", "hack", "crack", "click", "stick", "kick", "stop", "drop", "swap", "step",
         "snap", "sum", "trim", "skim", "scan", "plan", "ban", "span", "spin", "clear", "appear"}


def _base(verb: str) -> str:
    """The base form of a past-tense or -ing verb: ran → run, created → create, running → run."""
    low = verb.lower()
    if low in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[low]
    if low.endswith("ing") and len(low) > 4:
        stem = low[:-3]
    elif low.endswith("ied") and len(low) > 4:
        return low[:-3] + "y"
    elif low.endswith("ed") and len(low) > 3:
        stem = low[:-2]
        if low.endswith("eed"):  # agreed → agree; need, seed, proceed are base forms already
            return low[:-1] if low in ("freed", "agreed", "guaranteed", "refereed") else low
    else:
        return low
    if stem in _NO_E:
        return stem
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] in "bgmnprt":
        return stem[:-1]  # committ → commit, runn → run
    if stem.endswith(("e", "y", "w", "x")):
        return stem
    if _NEEDS_E.search(stem) and stem not in _NO_E:
        return stem + "e"
    return stem


def _third_person(verb: str) -> str:
    low = verb.lower()
    irregular = {"am": "is", "are": "is", "have": "has", "do": "does", "was": "was", "were": "was",
                 "can": "can", "will": "will", "would": "would", "should": "should", "must": "must",
                 "could": "could", "might": "might", "may": "may", "shall": "shall", "need": "needs",
                 "cannot": "cannot"}
    if low in irregular:
        return irregular[low]
    if low.endswith(("ed", "'t")) or low in ("used",) or low in _IRREGULAR_PAST:
        return verb  # "i said tabs" -> "the user said tabs"
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
