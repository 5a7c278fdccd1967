"""The units the offline classifier decides on: the sentences of a human turn.

A long turn often mixes a task with one lasting rule ("fix the flaky test — and
from now on we use pytest-xdist"), so each sentence is decided on its own. A
short turn ("yes, SHAs") is one unit whatever its length. Code blocks, pasted
logs and shell or slash commands are not units: they are not what the person said.
"""

from __future__ import annotations

import re

MAX_UNIT_CHARS = 400
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_LOGGY = re.compile(r"^\s*(?:[A-Z]\s{2,}|\w+(?:Error|Exception)\b|Traceback|File \"|at [\w.$]+\(|\$ |>>> |\d+\s*[│|]"
                    r"|\[\d{2}:\d{2}|\d{4}-\d{2}-\d{2}[T ]\d{2}:|npm (?:ERR|WARN)|error(?:\[E\d+\])?:|warning:)")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)(?<!\bz\.b\.)"
                           r"(?<!\bz\. b\.)(?<!\bbzw\.)(?<!\busw\.)(?<!\bp\.ej\.)(?<!\bp\. ej\.)(?<!\bex\.)\s+"
                           r"(?=[A-Za-z\"'`(¿¡ÄÖÜ])|\n+|\s+[—–]\s+|(?<=\w)\s+-\s+(?=\w)(?=[^`]*(?:`[^`]*`[^`]*)*$)|;\s+(?=(?:and |also |plus )?"
                           r"(?:we|i|use|never|always|don't|do not|keep|our)\b)", re.I)


#: a sentence wrapped onto the next line ("… data-testid only as last resort,\nnever css classes — …"): the line
#: breaks where the sentence goes on (after a comma or a word that needs what follows) and the next line goes on in
#: lower case; it is one sentence. A line that ends on a word of its own ("fix the header\nadd tests") stays a line.
_WRAPPED = re.compile(r"(?:(?<=[,;–—])|" + "|".join(rf"(?<=\b{word})" for word in (
    "and", "or", "but", "so", "the", "a", "to", "of", "in", "for", "with", "on", "because", "that", "which", "as"))
    + r")[ \t]*\n[ \t]*(?=[a-z])")


#: a request to fix what the sentence before it reported ("in useDebouncedSearch.ts the AbortController never aborts
#: the previous request, so old results sometimes land after new ones. fix it"): that sentence is the task at hand
_FIX_IT = re.compile(r"^\W*(?:(?:ok|so|pls|please|can you|could you|can u|then|now)\W+)*(?:fix|debug|investigate|"
                     r"sort out|look into|repair) (?:it|this|that|them)(?:\W+(?:pls|please|thanks|thx|ty))?\W*$", re.I)
#: ... unless it says a rule too ("always" and "never" of what is broken describe it: "the AbortController never aborts")
_SAYS_A_RULE_TOO = re.compile(r"\b(?:from now on|going forward|in this (?:repo|repository|project|codebase)|(?:we|you|i) (?:always|"
                       r"never))\b|^\W*(?:always|never)\b", re.I)


def units(text: str) -> list[str]:
    """The sentences of a human turn worth deciding on."""
    text = _CODE_FENCE.sub("\n", text).strip()
    if not text or text.startswith(("/", "!")):
        return []  # slash commands and shell input
    text = _WRAPPED.sub(" ", text)
    found: list[str] = []
    for line in text.splitlines():
        if _LOGGY.match(line) or line.startswith(">") or line.count("  ") > 3:
            continue
        for piece in (chunk for sentence in _SENTENCE_END.split(line) for part in _rule_then_task(sentence)
                      for clause in _facts_listed(part) for chunk in _cut(clause)):
            piece = piece.strip(" -*•\t")
            if found and _FIX_IT.match(piece) and not _SAYS_A_RULE_TOO.search(found[-1]):
                found.pop()  # "SettingsLayout.vue: the tabs don't keep the active state …. fix it.": what is broken
            elif piece and re.search(r"[^\W\d_]", piece):
                found.append(piece)
    if len(found) > 1:
        # a fragment of one or two words ("ok.", "thanks!") is not a unit of its own; a turn made only of them is
        # one unit when it is short ("no. tabs.": the reaction and what it wants are one thing said)
        longer = _names_carried(found)
        found = longer or ([" ".join(found)] if sum(len(f.split()) for f in found) <= SHORT_TURN_WORDS else found[:1])
    return found


_REACTION = re.compile(r"^\W*(?:no|nope|nah|ok|okay|yes|yeah)\b\W*", re.I)
_BESIDE_NAMES = {"instead", "now", "then", "only", "please", "pls", "too"}
_SAID_NAMES = re.compile(r"[\w.+#/@`' ,-]{1,40}[.!]?")


def _names_carried(pieces: list[str]) -> list[str]:
    """The pieces of three words or more; a shorter one made only of names of tools goes with the sentence after it
    (or before it, at the end): "no. pgx, pgxpool. lib/pq is gone from every service" says what replaces lib/pq."""
    from forgemem.capture.classify.change_words import _GOES
    from forgemem.names import _names

    kept: list[str] = []
    carried = ""
    for piece in pieces:
        if len(piece.split()) >= 3:
            kept.append(f"{carried} {piece}".strip())
            carried = ""
        elif _GOES.search(piece):
            kept.append(piece)  # a thing of the old way said to go, said short: "kill scripts/sweep.sh."
        elif kept and _LONE_MODALITY.match(piece):
            kept[-1] = f"{kept[-1]} {piece}"  # "dont use db push. ever.": the word says how the sentence before holds
        elif _SAID_NAMES.fullmatch(piece) and (words := [w for w in re.findall(r"[\w.+#/@-]*\w", _REACTION.sub("", piece))
                                                        if w.lower() not in _BESIDE_NAMES]) and all(
                _names(word) for word in words):
            # names alone ("pgx, pgxpool.", "no, tuist.", "jsonnet instead."), not a task ("delete x.css.")
            carried = f"{carried} {piece}".strip()
    if carried and kept:
        kept[-1] = f"{kept[-1]} {carried}"
    return kept


#: a word of how long a rule holds, said as a sentence of its own after it
_LONE_MODALITY = re.compile(r"^\W*(?:ever|never|never ever|always|no exceptions|period|everywhere|at all|not ever)\W*$", re.I)


#: a turn of at most this many words, all in fragments, is read as one unit
SHORT_TURN_WORDS = 5


#: a rule that ends on its standing words, then the task it starts ("uv for everything from now on, convert this
#: pyproject and delete poetry.lock"): two units, so the task's paths decide neither the rule's scope nor its text
_ENDS_STANDING = re.compile(r"\w+\W+\w+\W+.*\b(?:from now on|going forward|for everything|from here on|everywhere|"
                            r"by default)$", re.I)
_THEN_TASK = re.compile(r",\s+(?=(?:now |then |so |pls |please )?(?:convert|delete|remove|add|fix|update|rename|run|"
                        r"make|create|write|move|change|set|bump|rip|drop|migrate|port|redo|rerun|reformat|"
                        r"regenerate|clean|commit|push|open)\b)", re.I)


def _rule_then_task(sentence: str) -> list[str]:
    for match in _THEN_TASK.finditer(sentence):
        if _ENDS_STANDING.search(sentence[:match.start()]):
            return [sentence[:match.start()], sentence[match.end():]]
    return [sentence]


#: "quick context so you stop guessing: im on macos (m2), i use neovim not vscode, and im in berlin time": what
#: the person says of themselves, listed in one sentence, is one fact per clause (a lead-in before it goes)
_LEAD_IN = re.compile(r"^(?:quick |some |a bit of |a little |for )?(?:context|background|fyi|about me)\b[^:]{0,40}:\s*",
                      re.I)
_NEXT_FACT = re.compile(r",\s*(?:and\s+|also\s+)?(?=(?:i'm|im|i am|i use|i work|i've|ive|i live|my)\b)", re.I)
_A_FACT = re.compile(r"^(?:i'm|im|i am|i use|i work|i've|ive|i live|my)\b", re.I)


def _facts_listed(sentence: str) -> list[str]:
    rest = _LEAD_IN.sub("", sentence)
    if not _A_FACT.match(rest):
        return [sentence]
    clauses = _NEXT_FACT.split(rest)
    if len(clauses) < 2 or any(len(c.split()) < 3 for c in clauses):
        return [rest]
    words = [{w for w in re.findall(r"\w{4,}", c.lower())} for c in clauses]
    if any(words[i] & words[j] for i in range(len(words)) for j in range(i + 1, len(words))):
        return [rest]  # "i use fish, my shell is fish everywhere": one fact said twice
    return clauses


_CLAUSE_END = re.compile(r"(?<=,)\s+|\s+(?=(?:and|but|so|also|plus)\s)", re.I)


def _cut(sentence: str) -> list[str]:
    """A run-on sentence over MAX_UNIT_CHARS, cut at clause boundaries into pieces that fit (a rule buried
    in a long ramble is still read); a piece with no boundary to cut at is left out."""
    if len(sentence) <= MAX_UNIT_CHARS:
        return [sentence]
    pieces, current = [], ""
    for clause in _CLAUSE_END.split(sentence):
        if current and len(current) + 1 + len(clause) > MAX_UNIT_CHARS:
            pieces.append(current)
            current = clause
        else:
            current = f"{current} {clause}".strip()
    pieces.append(current)
    return [p for p in pieces if len(p) <= MAX_UNIT_CHARS]


# ------------------------------------------------------------------ sentences that lean on their neighbour
# (fragments._merge_fragments joins them to it)

#: "everyone on the team formats with that, no exceptions": the sentence before it is what it speaks of
_ENDS_POINTING_BACK = re.compile(r"\b(?:with|like|by|to) (?:that|this|those|these|them)\b(?:,? (?:no exceptions|too|as "
                                 r"well|always|everywhere))?\W*$|"
                                 # "from now on any new script gets it too"
                                 r"\b(?:gets?|needs?|uses?|has|have|does|do|follows?) (?:it|that|this|them|those) (?:too|as "
                                 r"well)\W*$", re.I)
#: "no, annotate them.": a reaction pointing at the work, said before the rule that explains it
_ONLY_POINTS = re.compile(r"^\W*(?:(?:no|nope|nah|ok|so)\W+)?\w+ (?:them|it|those|that|these)\W*$", re.I)
#: an example in code after the rule it shows ("use lazy %-style args — logger.info("done in %.1fs", elapsed).")
_CODE_ONLY = re.compile(r"^\W*`?[\w.]+\(.*\)`?[\s.;,]*$")
