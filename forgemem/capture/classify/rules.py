"""Memories read as rules: the user's words rewritten as one statement a later session can act on.

    rule_text("Actually, let's switch to uv instead of poetry: poetry is too slow in CI.",
              category="architectural-decisions", scope="repo")
    → "Use uv, not poetry (poetry is too slow in CI)."

Pure, offline and deterministic: regular expressions over the sentence, no network,
no model (nothing here is learned: the corpus in ../shared/eval/capture was used to
develop the patterns on its TRAIN split only; benchmarks/bench_rules.py measures it).
What it does, in order:

1. Code spans (`...`), quoted strings, URLs, paths, file names, NAME=value pairs,
   key blocks and long tokens are set aside and put back verbatim at the end:
   never re-cased, split or trimmed, so a secret among them still looks to the
   redaction that runs on the memory afterwards exactly as it was typed.
2. Markdown lists become one line ("Rules: a; b; c"), emoji and discourse filler go
   ("Actually,", "ok so", "hey", "can you", "please", "I think", "just", "btw",
   "so yeah", "lol", "thanks"), as do thank-yous, venting ("jesus."), change-of-mind
   preambles ("forget what I said about …", "scratch that"), remarks about the
   incident at hand ("you just ate them", "that's why the outputs are garbage"),
   the task request riding along ("take it out", "can you fix the three files …?")
   and time anchors of the past ("last sprint", "this morning").
3. The subject is made explicit. First person becomes the user ("I prefer X" →
   "The user prefers X", "I'm on fish" → "The user is on fish", "my" → "the
   user's"); "we"/"let's" become imperatives for the repository ("we use pnpm
   here" → "Use pnpm in this repository.", "let's switch to X instead of Y" →
   "Use X, not Y", "we dropped moment" → "No longer use moment"), and a "we"
   further in becomes "the project".
4. A reason the user gave is kept: inline ("…, because …") or, when it follows as
   its own remark, in parentheses at the end.
5. A correction that points back ("don't do that", "never do that again") says what
   "that" was when the preceding assistant turn says it briefly ("I ran black over
   the whole module" → "Do not run black over the whole module."); otherwise the
   sentence is kept as it is.
6. A confirmation ("yes, let's do that") takes its rule from the agent's proposal
   (`proposal`, or `context` when the reply is a plain yes to a question or offer):
   "Should I pin all GitHub Actions to a commit SHA from now on?" + "yes, with the
   tag in a comment" → "Pin all GitHub Actions to a commit SHA, with the tag in a
   comment." A yes with a rule of its own after a one-off offer ("ok, and from now
   on always run the full suite") keeps the user's rule.

German, Spanish and French sentences keep their language: there is no translation
offline. Only filler (emoji, "bitte", "por favor", "s'il vous plaît", "also,",
"bueno,", "bon,") is stripped from them.

The result is never empty and never much longer than what it came from (at most
1.3 × the input plus 40 characters, the input being the sentence and, for a
confirmation, the proposal); a text that is already a clean rule comes back
essentially unchanged.

What it cannot do: paraphrase. A rule buried in a long complaint, a statement
whose subject is implicit ("parquet for intermediate files"), or a fact that
should become an instruction ("I use fish" → "give fish commands") keeps the
user's own wording; the `category` is accepted for the classifier's call but
the wording follows the words, not the label.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["rule_text"]

_PH_OPEN, _PH_CLOSE = "\ue000", "\ue001"
_PH_SEP = "\ue002"
_PLACEHOLDER = re.compile(f"{_PH_OPEN}(\\d+){_PH_SEP}(\\d+){_PH_CLOSE}")
_NAMESPACES = itertools.count(1)  # each _protect call numbers its own placeholders, so protecting twice is safe


def _any(*patterns: str) -> str:
    return "(?:" + "|".join(patterns) + ")"


# ------------------------------------------------------------------ protecting code and quotes

#: what is never rewritten: code, quotes, and anything that may be a name, a path, a flag value
#: or a secret (so that the redaction run on the memory afterwards sees it exactly as typed)
_PROTECT = re.compile(
    r"```.*?(?:```|\Z)"  # fenced code, kept as it is
    r"|-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)"  # key blocks, whole
    r"|`[^`\n]+`"  # inline code
    r"|(?<![\w'])'[^'\n]{1,60}'(?![\w'])"  # 'quoted words'
    r"|\"[^\"\n]{1,80}\""  # "quoted words"
    r"|“[^”\n]{1,80}”"
    r"|\b[a-z][a-z0-9+.-]*://[^\s`'\"<>]+"  # URLs
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail addresses, user@host
    r"|\b[A-Za-z_][A-Za-z0-9_]*=[^\s,;]+"  # NAME=value
    r"|(?<![\w/.-])[A-Za-z0-9_+/=.-]{24,}(?![\w/.-])"  # long opaque tokens, hashes, long paths
    r"|(?<![\w/.-])(?=[\w.~/-]{4,})(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*(?![\w/])"  # paths with a slash
    r"|(?<![\w.-])\.?[\w-]{2,}\.[a-z][a-z0-9]{0,5}\b(?![\w/-])",  # file names: README.md, .gitattributes
    re.S,
)


class _Held(list):
    """The spans one `_protect` call set aside, under its own namespace."""

    def __init__(self) -> None:
        super().__init__()
        self.ns = next(_NAMESPACES)


def _protect(text: str) -> tuple[str, _Held]:
    kept = _Held()

    def hold(m: re.Match) -> str:
        kept.append(m.group(0))
        return f"{_PH_OPEN}{kept.ns}{_PH_SEP}{len(kept) - 1}{_PH_CLOSE}"

    return _PROTECT.sub(hold, text), kept


def _restore(text: str, kept: _Held) -> str:
    def back(m: re.Match) -> str:
        return kept[int(m.group(2))] if int(m.group(1)) == kept.ns else m.group(0)

    return _PLACEHOLDER.sub(back, text)


# ------------------------------------------------------------------ input clean-up

_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\U00002600-\U000027bf\U0001f900-\U0001f9ff\u2b00-\u2bff\ufe0f\u200d]"
    r"|(?<!\w)(?::-?[)(DPp/|]|;-?\)|<3|¯\\_\(ツ\)_/¯|\^\^|xD)(?!\w)"
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")


_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)


def _flatten(text: str) -> str:
    """Markdown headings and lists into one line: "Heading: item; item; item".

    A fenced code block next to words is an example, not the rule: it goes (alone, it stays).
    """
    if _FENCE.search(text):
        if not _FENCE.sub("", text).strip():
            return text.strip()
        text = _FENCE.sub("\n", text)
    text, kept = _protect(text)  # a key block or a code span is never split into "lines"
    return _restore(_flatten_held(text), kept)


def _flatten_held(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r", "").split("\n")]
    out: list[str] = []
    items: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        if _LIST_ITEM.match(line):
            items.append(_LIST_ITEM.sub("", line).strip().rstrip(".;,"))
            continue
        if items:
            out.append("; ".join(items) + ".")
            items = []
        line = _HEADING.sub("", line).strip()
        line = re.sub(r"\*\*|__", "", line)
        short_title = len(line.split()) <= 6 and not re.search(r"[.!?:;]$", line) and line != lines[-1].strip()
        if _HEADING.match(line) or short_title:
            line += ":"
        out.append(line)
    if items:
        out.append("; ".join(items) + ".")
    joined = ""
    for part in out:
        if not joined:
            joined = part
        elif joined.endswith(":"):
            joined += " " + part
        elif re.search(r"[.!?;]$", joined):
            joined += " " + part
        else:
            joined += ". " + part
    return re.sub(r"\*\*|__", "", joined)


# ------------------------------------------------------------------ language

_EN_WORDS = set(
    "the a an is are to of and in it we i you for with not never always use this that be on don't do "
    "our my should must only no from as when if so but have has".split()
)
_FOREIGN_WORDS = {
    "de": set("ich wir und nicht das die der ist bei uns mit auf für immer nie keine kein bitte wird werden "
              "sind auch nur oder aber den dem ein eine zu sie es mir mich mein unser".split()),
    "es": set("el los las que por para con usamos siempre nunca y una un mi nuestro nuestra yo somos está "
              "están del al lo le se pero también prefiero soy tengo favor".split()),
    "fr": set("le les des est et pas pour avec je nous toujours jamais une du au mon notre sont ce cette "
              "qui que il elle on mais aussi suis préfère jamais".split()),
}
_FOREIGN_FILLER = re.compile(
    r"^(?:(?:also|ähm|äh|ach ja|übrigens|na ja|naja|ok|okay|ja|bueno|pues|oye|vale|mira|o sea|bon|alors|"
    r"euh|du coup|en fait|bref|ok donc|donc)\b[\s,:;.!-]*)+"
    r"|[,\s]*\b(?:bitte|danke(?: dir)?|por favor|porfa|gracias|s'il (?:te|vous) pla[iî]t|stp|svp|merci)\b[\s,!.]*",
    re.I,
)


def _language(text: str) -> str:
    words = re.findall(r"[a-zà-ÿß']+", text.lower())
    english = sum(w in _EN_WORDS for w in words)
    best, score = "en", 0
    for lang, vocab in _FOREIGN_WORDS.items():
        s = sum(w in vocab for w in words)
        if s > score:
            best, score = lang, s
    return best if score >= 2 and score > english else "en"


# ------------------------------------------------------------------ verbs


_IRREGULAR_PAST = {
    "ran": "run", "wrote": "write", "made": "make", "put": "put", "set": "set", "split": "split",
    "built": "build", "took": "take", "gave": "give", "left": "leave", "kept": "keep", "got": "get",
    "threw": "throw", "did": "do", "sent": "send", "cut": "cut", "brought": "bring", "found": "find",
    "began": "begin", "chose": "choose", "broke": "break", "went": "go", "told": "tell", "said": "say",
    "read": "read", "hid": "hide", "forgot": "forget", "shut": "shut", "stuck": "stick", "rewrote": "rewrite",
    "undid": "undo", "redid": "redo", "overwrote": "overwrite", "dropped": "drop", "led": "lead",
    "fed": "feed", "bound": "bind", "drew": "draw", "spun": "spin", "ate": "eat", "sped": "speed",
    "swapped": "swap", "committed": "commit", "reset": "reset", "upset": "upset", "added": "add",
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
                 "could": "could", "might": "might", "may": "may", "shall": "shall", "need": "needs"}
    if low in irregular:
        return irregular[low]
    if low.endswith(("ed", "'t")) or low in ("used",):
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


# ------------------------------------------------------------------ filler


_LEAD_FILLER = re.compile(
    r"^(?:(?:"
    # filler whatever follows it
    + _any(
        r"actually", r"ugh+", r"argh+", r"sigh", r"omg", r"meh", r"nah", r"ok(?:ay)? so", r"ok(?:ay)?", r"alright",
        r"so yeah", r"so+", r"hey(?: there)?", r"hi", r"hello", r"yeah(?: so| about that)?", r"yea", r"oh", r"ah",
        r"also", r"and", r"but", r"btw", r"fyi", r"by the way", r"anyway(?:s)?", r"honestly", r"basically", r"tbh",
        r"imo", r"imho", r"fwiw", r"just", r"please", r"pls", r"plz", r"um+", r"uh+", r"hmm+", r"erm",
        r"heads up", r"quick (?:note|thing)", r"one more thing", r"like i (?:said|mentioned)(?: before| earlier)?",
        r"as i (?:said|mentioned)(?: before| earlier)?", r"as mentioned(?: before)?",
        r"i (?:think|guess|believe|feel like|suppose)", r"i'd say", r"i mean", r"new rule", r"real quick",
        r"context for you", r"for context", r"remember(?: to| that)", r"don't forget(?: to| that)?",
        r"keep in mind(?: that)?", r"note that", r"to be clear", r"for the record", r"in general", r"generally",
        r"as a (?:general )?rule", r"rule of thumb", r"going forward", r"moving forward", r"from now on",
        r"from here on(?: out)?", r"in (?:the )?future", r"for future reference", r"no+ no+", r"no+(?=\s*[,!])",
        r"nope", r"sorry(?:,? long day)?", r"lol", r"lmao", r"haha+", r"oh and", r"and also", r"yes",
    )
    + r"(?![\w'/-]|\.\w)(?:[\s,:;!–—-]|\.(?!\w))*"
    # filler only before a comma, colon or dash ("update: …", not "update the changelog …")
    + r"|" + _any(
        r"well", r"look", r"listen", r"note", r"again", r"update", r"decision", r"reminder", r"important",
        r"remember", r"nb", r"n\.b\.", r"ps", r"p\.s\.", r"wait", r"thanks", r"cool", r"right", r"sure",
        r"dude", r"man", r"general rule", r"fun fact",
    )
    + r"(?:\s*[,:;.!]+(?!\w)|\s+[–—-]+)\s*"
    + r")+)",
    re.I,
)
_REQUEST_LEAD = re.compile(
    r"^(?:(?:can|could|would|will) you(?: please| pls| kindly)?(?: mind)?|would you mind|do you mind|"
    r"(?:i'd|i would) (?:like|love) (?:it if )?you to|i (?:want|need) you to|make sure (?:you|to)|"
    r"be sure to|try to|remember to|please)\s+",
    re.I,
)
_INLINE_FILLER = re.compile(
    r"\s*(?<!\bnot )\bjust\b(?! to\b)(?=[\s,.;:!?)]|$)|"
    r"\s*\b(?:please|pls|plz|kindly|literally|basically|honestly|actually|really|simply|kinda|sorta|"
    r"lol|lmao|haha+|tbh|imo|imho|btw|fyi|you know|i guess|i think|i mean|"
    r"(?:thanks|thank you|thx|ty|cheers)(?: so much| a lot)?(?: in advance)?)\b(?!-)(?=[\s,.;:!?)]|$)",
    re.I,
)
_TRAILING_FILLER = re.compile(
    r"(?:(?:(?:[\s,;:.!]|\s-+\s)*\s*\b(?<![\w-])(?:please|pls|plz|thanks|thank you|thx|ty|cheers|lol|lmao|haha+|ever|"
    r"keep (?:it|\w+|that|this) (?:that|this) way|keep (?:that|this) in mind|keep doing (?:that|this|it)|"
    r"that's the house style|it's the house style|no exceptions|period|seriously|"
    r"at least|in general|for the record|going forward|from now on|moving forward|anymore)\b"
    r"|(?:\s*[,;:.!]+\s*|\s+-+\s+)(?:ok|okay|k|kk|right|yeah)\b)\W*)+$",
    re.I,
)
_TIME_ANCHOR = re.compile(
    r",?\s*\b(?:(?:from|since|as of|during|in|over) )?"
    r"(?:last (?:week|sprint|month|quarter|night|release)|this (?:morning|afternoon|week|sprint)|"
    r"yesterday|earlier today|(?:ages|a while|a month|a week|two weeks) ago|a while back|recently|"
    r"in (?:january|february|march|april|may|june|july|august|september|october|november|december)|"
    r"since (?:the|our) (?:migration|retro|rewrite|move)|"
    r"going forward|moving forward|from now on|from here on(?: out)?|for future reference|"
    r"in (?:the )?future|from today(?: on)?)\b",
    re.I,
)
#: change-of-mind preambles and asides before the rule: "that convention's outdated, …", "if you don't mind, …"
_PREAMBLE = re.compile(
    r"^(?:"
    + _any(
        r"(?:that|this|the) (?:convention|rule|one)(?:'s| is) (?:outdated|old|stale|wrong|gone|out of date)",
        r"forget (?:what|everything) i said(?: about [^,;:.]+)?", r"scratch (?:that|the [^,;:.]+)",
        r"ignore what i said(?: about [^,;:.]+)?", r"i was wrong about [^,;:.]+", r"change of plans?",
        r"i(?:'ve| have)? changed my mind(?: (?:on|about) [^,;:.]+)?", r"if you (?:do not|don't|dont) mind",
        r"if possible", r"when you get a chance", r"while you're at it", r"for (?:this|the) repo(?:sitory)?(?=:)",
        r"small thing(?: but [^,;:.]+)?", r"(?:this|it) (?:is going to|might|may) sound [^,;.]+(?: but hear me out)?",
        r"hear me out",
        r"(?:that's|that is|this is|it's) (?:the )?(?:wrong|not right|incorrect|not what [^,;:.]+)(?: [\w-]+)?",
        r"wrong [\w-]+", r"not like that", r"not quite",
    )
    + r")[\s,:;.!-]+(?=\S)",
    re.I,
)
_ASIDE = re.compile(
    r",\s*(?:it's|it has|that's|this has|it is|its) been "
    r"(?:in the (?:wiki|docs|readme|contributing)|like that|the rule|"
    r"agreed|decided)[^,;.()]*"
    r"|,\s*keep it (?:that|this) way\b"
    r"|\s+now(?=\s*(?:[,;:.!)]|$))",
    re.I,
)
_LIKE_FILLER = re.compile(r"\blike,?\s+(?=[~\d])|(?<=[,;])\s*like,\s*|\s*,\s*like,", re.I)

#: sentences that carry nothing lasting: thanks, venting, change-of-mind preambles, asides
_CHATTER = re.compile(
    r"^(?:"
    + _any(
        r"(?:thanks|thank you|thx|ty|cheers)\b.*",
        r"(?:jesus|omg|ugh+|argh+|wtf|sigh|oops|geez|man|dude|seriously|come on|really|why|lol|lmao|haha+|ok|okay|"
        r"cool|great|nice|good|perfect|awesome|excellent|exactly|correct|right|good job|well done|nice work)\W*",
        r"(?:always|never|ever|no exceptions|period|please|again|every time|everywhere)\W*",
        r"sorry\b.*", r"small thing\b.*", r"hear me out\b.*", r"(?:this|it) is going to sound\b.*",
        r"forget (?:what|everything) i said\b[^,;:.]*", r"scratch (?:that|the\b[^,;:.]*)",
        r"ignore what i said\b[^,;:.]*",
        r"i was wrong about\b[^,;:.]*", r"i(?:'ve| have)? changed my mind\b(?: (?:on|about) [^,;:.]+)?",
        r"(?:that|this) (?:convention|rule)(?:'s| is) (?:outdated|old|stale|wrong|gone)\W*",
        r"change of plans?\b.*", r"(?:small |quick )?correction\b\W*", r"new rule\W*", r"fyi\W*",
        r"just so you know\W*", r"for the record\W*",
        r"(?:keep|leave) it (?:that|this) way\b.*", r"(?:that's|that is|it's|it is) the house style\W*",
        r"(?:that's|it's|this is) (?:literally |exactly )?(?:how|why|what)\b.*",
        r"(?:that's|this is|it's) (?:been )?in the (?:wiki|docs|readme)\b.*",
        r"(?:there is|there's) no \S+ \S+\W*$",
        r"you (?:just |already )?(?:ate|broke|deleted|loaded|added|created|used|wrote|committed|pushed|made|did|"
        r"ran|put|removed|renamed|changed|forgot|missed|skipped|introduced|reformatted)\b.*",
        r"(?:that|this) (?:was|is) (?:prod|production|wrong|the wrong|not what|on the wrong)\b.*",
        r"(?:that|this) was\b.{0,20}",
        r"(?:it|that|this) (?:saves|costs|cost|took|takes) me\b.*",
        r"i(?:'ve| have) been burned\b.*", r"i(?:'ve| have) (?:already )?(?:told|asked) you\b.*",
        r"how many times\b.*", r"(?:no|nope|nah),? not like that\W*", r"not like that\W*",
        r"every (?:single )?time you [^,;:.]*\byou (?:forget|break|miss|skip|ignore|mess|get)\b.*",
    )
    + r")$",
    re.I,
)
#: the task riding along with a rule: "take it out", "delete it and …"
_TASK_LEAD = re.compile(
    r"^(?:(?:now |so )?(?:please )?(?:delete|remove|revert|undo|fix|take|put|move|change|update|redo|rename|drop)"
    r" (?:it|that|this|them|those|these)(?: out| back| again)?(?:,? and(?: then)?|,|$)\s*)",
    re.I,
)


# ------------------------------------------------------------------ subject rewrites

_NP_END = r"(?=$|[,;:()]|\s(?:and|but|so|because|since|as|for|in|on|with|which|who|that|now|from|to|,)\b)"
_OBJ = r"((?:[^,;:()](?!\b(?:because|since|so that|as it)\b))+?)"

_STARTS: list[tuple[re.Pattern[str], str]] = [
    # let's …
    (re.compile(r"^let'?s not (?:use|do) ", re.I), "Do not use "),
    (re.compile(r"^let'?s not ", re.I), "Do not "),
    (re.compile(rf"^let'?s (?:switch|move|migrate|change|go|stick|standardi[sz]e|settle|convert)(?: over| back)? "
                rf"(?:to|with|on) {_OBJ} (?:instead of|rather than|over|and not) ([^,;:()]+?){_NP_END}", re.I),
     r"Use \1, not \2"),
    (re.compile(r"^let'?s (?:switch|move|migrate|change|go|stick|standardi[sz]e|settle|convert)(?: over| back)? "
                r"(?:to|with|on) ", re.I), "Use "),
    (re.compile(r"^let'?s do (?=[~\d])", re.I), "Use "),
    (re.compile(r"^let'?s (?:always )?", re.I), ""),
    # we switched / moved / dropped …
    (re.compile(rf"^(?:we|the team)(?:'ve| have|'re| are)? (?:now |just )?(?:switched|moved|migrated|changed|went|"
                rf"switching|moving|migrating|changing)(?: over)? "
                rf"(?:((?:the )?[\w-]+(?: [\w-]+)?) )?from {_OBJ} to {_OBJ}{_NP_END}", re.I),
     "_switch"),
    (re.compile(r"^(?:we|the team)(?:'ve| have|'re| are)? (?:now |just )?(?:switched|moved|migrated|switching|moving|"
                r"migrating)(?: over| everything)? to ", re.I), "Use "),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? (?:now )?(?:moved|switched|migrated|gone) (?:off|away from) "
                rf"{_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? (?:dropped|removed|ditched|killed|got rid of|retired|abandoned|"
                rf"deprecated|stopped using) {_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(rf"^(?:we|the team)(?:'re| are) no longer (?:on|using) {_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(rf"^(?:we|the team) (?:no longer|don't|do not) use {_OBJ} any ?more{_NP_END}", re.I),
     r"No longer use \1"),
    (re.compile(rf"^(?:we|the team) no longer use {_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(r"^(?:we|the team) no longer ", re.I), "No longer "),
    (re.compile(r"^no more ", re.I), "No more "),
    # we're going with / chose / decided …
    (re.compile(rf"^(?:we|i|the team)(?:'re| are|'ve| have)? (?:going|gone|went) with {_OBJ} "
                rf"(?:over|rather than|instead of|not) ", re.I), r"Use \1 rather than "),
    (re.compile(r"^(?:we|i|the team)(?:'re| are|'ve| have)? (?:going|gone|went) with ", re.I), "Use "),
    (re.compile(r"^(?:we|i|the team)(?:'ve| have)? (?:chose|chosen|picked|selected|settled on|decided on|opted for|"
                r"standardi[sz]ed on|adopted|agreed on) ", re.I), "Use "),
    (re.compile(r"^(?:we|the team)(?:'re| are) (?:standardi[sz]ing|settling) on ", re.I), "Use "),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? decided against {_OBJ}(?:,? and (?:to )?)", re.I),
     r"Do not use \1; "),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? decided against {_OBJ} in favou?r of ", re.I),
     r"Do not use \1; use "),
    (re.compile(r"^(?:we|i|the team)(?:'ve| have)? (?:decided|agreed) (?:to|that we(?:'ll| will| should)?) ", re.I),
     ""),
    (re.compile(r"^(?:we|i|the team)(?:'ve| have)? (?:decided|agreed) that ", re.I), ""),
    (re.compile(r"^(?:the|our) (?:decision|plan|rule|convention|policy|standard)(?: here)? (?:is|was) (?:to|that) ",
                re.I),
     ""),
    (re.compile(r"^(?:the|our) (?:decision|rule|convention|policy|standard)(?: here)? (?:is|was):? ", re.I), "Use "),
    (re.compile(r"^(?:we|the team)(?:'re| are) (?:using|on|running with) ", re.I), "Use "),
    (re.compile(r"^(?:go|going) with ", re.I), "Use "),
    (re.compile(r"^(?:we|the team)(?:'re| are) (?:keeping|sticking with) ", re.I), "Keep "),
    (re.compile(r"^(?:we|the team)(?:'ll| will) (?:use|go with|stick with|stick to) ", re.I), "Use "),
]
_WE_VERB = re.compile(
    r"^(?:we|our team|the team)(?:'ll| will| should| must| need to| have to|'ve got to| gotta| want to| always| "
    r"never| usually| generally| only| also| do not| don't| dont| DONT| now)*\s+"
    r"(?!(?:are|were|was|had|have|has|got|can|could|might|may|would|did|used|need|want|'re|'ve|"
    r"like|love|hate|think|know|feel|believe|agreed|decided|talked|discussed|lost|learned|found|"
    r"saw|noticed|went|came|do|does|[a-z]+ed)\b)([a-z][\w-]*)\b",
    re.I,
)
_WE_MODAL = re.compile(
    r"^(?:we|our team|the team)((?:'ll| will| should| must| need to| have to|'ve got to| gotta| want to| always| "
    r"never| usually| generally| only| also| do not| don't| dont| DONT| now)*)\s+",
    re.I,
)
_WE_GERUND = re.compile(r"^(?:we|the team)(?:'re| are) ([a-z]+ing)\b", re.I)

_USER_STARTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:personally,?\s+)?i(?: really| strongly| much| definitely| generally| usually| always|"
                r" mostly)*(?: prefer| like| love| enjoy|'d prefer| would prefer)\b", re.I), "The user prefers"),
    (re.compile(r"^(?:personally,?\s+)?i(?: really| strongly| much| definitely)*(?: want|'d like| would like| need)\b",
                re.I), "The user wants"),
    (re.compile(r"^(?:personally,?\s+)?i(?:'d| would) (?:much )?rather\b", re.I), "The user would rather"),
    (re.compile(r"^(?:personally,?\s+)?i (?:really |truly )*(?:hate|dislike|can't stand|cannot stand|detest|"
                r"don't like|do not like)\b", re.I), "The user dislikes"),
    (re.compile(r"^(?:personally,?\s+)?i(?:'m| am) (?:really )?not (?:a|the) (?:big |huge )?fan of\b", re.I),
     "The user dislikes"),
    (re.compile(r"^(?:personally,?\s+)?(?:i(?:'m| am) )?(?:a )?(?:big |huge )?fan of\b", re.I), "The user prefers"),
    (re.compile(r"^personally,?\s+", re.I), ""),
]

_FIRST_PERSON: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bI(?:'m| am)\b", re.I), "the user is"),
    (re.compile(r"\bI(?:'ve| have)\b(?! to\b)", re.I), "the user has"),
    (re.compile(r"\bI(?:'d| would)\b", re.I), "the user would"),
    (re.compile(r"\bI(?:'ll| will)\b", re.I), "the user will"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmy\b", re.I), "the user's"),
    (re.compile(r"\bmine\b", re.I), "the user's"),
    (re.compile(r"\bme\b(?!-)", re.I), "the user"),
]
_I_VERB = re.compile(
    r"\b(?:I|i) ((?:(?:really|strongly|much|mostly|usually|always|never|also|only|still|often|rarely|sometimes|"
    r"generally|just|already|no longer|now) )*)(?!no\b|not\b)([a-z][a-z'-]*[a-z])\b"
)
_WE_ELSEWHERE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bwe(?:'re| are)\b", re.I), "the project is"),
    (re.compile(r"\bwe(?:'ve| have)\b(?! to\b)", re.I), "the project has"),
    (re.compile(r"\bwe(?:'d| would)\b", re.I), "the project would"),
    (re.compile(r"\bwe(?:'ll| will)\b", re.I), "the project will"),
    (re.compile(r"\bours\b", re.I), "the project's"),
    (re.compile(r"\bour\b", re.I), "the project's"),
    (re.compile(r"\bus\b(?!-)(?=\s|[,.;:)]|$)", re.I), "the project"),
]
_WE_VERB_ELSEWHERE = re.compile(
    r"\bwe ((?:(?:really|always|never|also|only|still|usually|generally|just|already) )*)([a-z][a-z']*)\b", re.I
)

_CONTRACTIONS = [
    (re.compile(r"\b(d)on'?t\b(?!-)", re.I), "do not"),
    (re.compile(r"\bdoesn'?t\b", re.I), "does not"),
    (re.compile(r"\bdidn'?t\b", re.I), "did not"),
    (re.compile(r"\bcan't\b|\bcant\b", re.I), "cannot"),
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\bisn'?t\b", re.I), "is not"),
    (re.compile(r"\baren'?t\b", re.I), "are not"),
    (re.compile(r"\bshouldn'?t\b", re.I), "should not"),
    (re.compile(r"\bmustn'?t\b", re.I), "must not"),
    (re.compile(r"\bwouldn'?t\b", re.I), "would not"),
    (re.compile(r"\bhasn'?t\b", re.I), "has not"),
    (re.compile(r"\bhaven'?t\b", re.I), "have not"),
    (re.compile(r"\bwasn'?t\b", re.I), "was not"),
    (re.compile(r"\bweren'?t\b", re.I), "were not"),
    (re.compile(r"\bi'?m\b(?=\s)", re.I), "I'm"),
    (re.compile(r"\bive\b", re.I), "I've"),
    (re.compile(r"\bi\b(?=[\s'])"), "I"),
    (re.compile(r"\bits (?=(?:been|a|an|the|not|just|what|how|fine|ok|too|so|always|never|only|literally|really)\b)"),
     "it's "),
    (re.compile(r"\bim (?=[a-z]+ing\b|used\b|a\b|an\b|not\b|on\b|in\b)"), "I'm "),
    (re.compile(r"\bpls\b|\bplz\b", re.I), "please"),
    (re.compile(r"\balot\b"), "a lot"),
    (re.compile(r"\bteh\b"), "the"),
    (re.compile(r"\bthier\b"), "their"),
    (re.compile(r"\bseperate(?=\w*\b)"), "separate"),
    (re.compile(r"\bdefinately\b"), "definitely"),
    (re.compile(r"\brecieve"), "receive"),
    (re.compile(r"\bdoesnt\b"), "does not"),
    (re.compile(r"\bisnt\b"), "is not"),
    (re.compile(r"\bu\b(?=\s)", re.I), "you"),
    (re.compile(r"\bur\b(?=\s)", re.I), "your"),
    (re.compile(r"\bthx\b", re.I), "thanks"),
    (re.compile(r"\bw/o\b", re.I), "without"),
    (re.compile(r"\bb/c\b|\bbc\b(?=\s)", re.I), "because"),
]
_SHOUTED = re.compile(r"\b(?:DONT|DON'T|DO|NOT|NEVER|ALWAYS|ONLY|NO|MUST|SHOULD|EVER|ANY|EVERY|ALL|USE|STOP)\b")

_REPO_WORDS = [
    (re.compile(r"\bin (?:this|the|our) (?:repo|repository)\b", re.I), "in this repository"),
    (re.compile(r"\b(?:this|our) repo\b", re.I), "this repository"),
    (re.compile(r"\bfor (?:this|our) repo\b", re.I), "for this repository"),
]
_HERE_AT_END = re.compile(r"\s+(?:around )?here(?=\s*(?:[,;.:!)]|$))", re.I)

_IMPERATIVE_START = re.compile(
    r"^(?:use|do|don't|never|always|only|keep|put|run|add|make|write|name|store|call|pass|avoid|prefer|"
    r"give|ask|check|wrap|split|load|read|set|pin|log|route|send|treat|format|declare|follow|define|"
    r"document|place|mark|return|throw|raise|test|commit|push|merge|squash|rebase|rename|move|create|"
    r"leave|stop|start|include|exclude|import|export|annotate|type|seed|version|deploy|build|install|"
    r"copy|open|close|tag|label|prefix|suffix|lint|explain|answer|reply|respond|tell|show|list|"
    r"comment|sort|group|limit|cap|bump|update|upgrade|downgrade|migrate|switch|replace|remove|delete|"
    r"stick|go|target|support|handle|validate|sanitize|sanitise|escape|quote|mock|stub|fake|inject|"
    r"fine-tune|train|evaluate|measure|profile|benchmark|cache|batch|retry|fail|skip|ignore|"
    r"no|not|the user|vectorise|vectorize|query|parse|emit|print|keep|fetch|send|respect|mention|"
    r"be|prioriti[sz]e|favou?r|stay|sit|live|go|belong)\b",
    re.I,
)
_MODAL = re.compile(
    r"\b(?:always|never|must|should|only|do not|does not|is not allowed|are not allowed|no longer|required|"
    r"mandatory|forbidden|need(?:s)? to|has to|have to|not allowed|every|all|any)\b",
    re.I,
)
_REASON_START = re.compile(
    r"^(?:because|since|as|so(?: that)?|otherwise|or else|that's why|this is why|that way|"
    r"(?:it|this|that|they)(?:'s| is| are| was| were|'re) (?:too|way|much|so|really|super|very|just|far)|"
    r"(?:it|this|that|they) (?:makes?|breaks?|causes?|keeps?|saves?|costs?|leads?|takes?|slows?)|"
    r"(?:the|our) \w+(?: \w+)? (?:is|are|was|were) (?:too|way|much|so|really|super|very|slow|fast|flaky|broken)|"
    r"(?:\w+ ){0,4}(?:burned|bit|broke|caused|leaked|failed|crashed|throttl\w*|double-charg\w*)\b|"
    r"[^;]*\b(?:is|are|was|were) (?:too|way too) |"
    r"(?:that|this|it) (?:came out of|comes from|was decided in|is from|was agreed in)\b|"
    r"(?:[\w'-]+ ){0,6}(?:was|were|had|broke|burned|bit|caused|happened|failed|crashed|rejected|complained|"
    r"lost|exploded|corrupted|leaked|blew up|took down|double-charged)\b)",
    re.I,
)
_PROPOSAL_SENT = re.compile(
    r"\b(?:should I|shall I|should we|shall we|want me to|do you want|would you like|I can|I could|I'll|"
    r"I will|let me|how about|what about|OK\?|okay\?|from now on|going forward|as the default|the standard|"
    r"the default|by default)\b",
    re.I,
)
_ACCEPT = re.compile(
    r"^(?:(?:yes|yeah|yep|yup|ya|yea|sure|ok(?:ay)?|perfect|great|sounds good|good idea|good call|please do|"
    r"go ahead|go for it|do it|do that|absolutely|definitely|of course|correct|agreed|exactly|makes sense|"
    r"lgtm|sgtm|👍|✅|please|yes please|that works|works for me|let's do (?:it|that)|right|indeed|"
    r"that's (?:right|how it should be|the way)|make (?:that|it) (?:the )?(?:default|standard|rule))\b[\s,.!:;-]*)+",
    re.I,
)
_ACCEPT_ECHO = re.compile(
    r"^(?:(?:do (?:that|this|it)|make (?:that|it|this) (?:the )?(?:default|standard|rule)|"
    r"(?:for|on) (?:everything|all of them|all|every \w+)|everywhere|always|from now on|going forward|"
    r"that's how it should be|as (?:the )?(?:default|standard))\b[\s,.!:;-]*)+$",
    re.I,
)


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
        clause = _PREAMBLE.sub("", clause).strip()
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


def _is_offer(context: str) -> bool:
    return bool(context) and (context.rstrip().endswith("?") or bool(_PROPOSAL_SENT.search(context)))


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
    previous = sentences[index - 1] if index > 0 else ""
    text = chosen.rstrip("?").strip()
    text = re.sub(r"[,\s]*\b(?:ok|okay|right|sound good|does that sound good|want that|yes or no)\s*$", "", text,
                  flags=re.I)
    text = _TIME_ANCHOR.sub("", text)
    text = _LEAD_FILLER.sub("", text).strip()
    rewrites = [
        (r"^(?:so )?(?:should|shall) (?:I|we) (?:just |also )?", ""),
        (r"^(?:do you )?want me to (?:also |just )?", ""),
        (r"^(?:would you like|do you want) me to ", ""),
        (r"^(?:I can|I could|I'll|I will|let me|I'd|I would|I suggest we|I propose we|I suggest|I propose) "
         r"(?:also |just )?", ""),
        (r"^(?:how|what) about ", ""),
        (r"^(?:should|shall|will) ((?:the |all |every |new |our |your )*[\w`\-/.\ue000\ue001]+"
         r"(?: [\w`\-/.\ue000\ue001]+)?) (use|be|have|go|live|run|follow|get|stay|include)\b", r"\1 \2"),
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


# ------------------------------------------------------------------ the rewrite


def _expand(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(lambda m, r=replacement: r if not (m.group(0)[:1].isupper() and r == "do not") else "Do not",
                           text)
    text = _SHOUTED.sub(lambda m: m.group(0).lower().replace("dont", "do not").replace("don't", "do not"), text)
    return text


def _rewrite_sentence(sentence: str, scope: str, context: str) -> str:
    clause = _strip_filler(sentence)
    if not clause:
        return ""
    # "Since we never use X, can you fix …?": the rule is the reason given for the request
    m = re.match(r"^(?:since|as|because|given that) (.+?),\s*(?:can|could|would|will) you\b.*\?$", clause, re.I)
    if m:
        clause = m.group(1)
    m = re.match(r"^(?:would you mind|do you mind)\s+(.+?)\??$", clause, re.I)
    if m:
        clause = _gerund_start(m.group(1))
    clause = _REQUEST_LEAD.sub("", clause).strip().rstrip("?")
    clause = _TASK_LEAD.sub("", clause).strip()
    clause = _expand(clause)
    clause = _strip_filler(clause)
    if not clause:
        return ""
    clause = _resolve_pointing(clause, context)
    clause = _subject(clause, scope)
    clause = _repo_words(clause, scope)
    clause = re.sub(r"\b(?:when|if|whenever) you write ([\w\- ]+?) for the user\b", r"when writing \1", clause,
                    flags=re.I)
    clause = _colon_reason(clause)
    clause = re.sub(r"\s+([,;:.!?)])(?=\s|$)", r"\1", clause)
    clause = re.sub(r"\s{2,}", " ", clause).strip(" ,;:-")
    clause = re.sub(r"[!]+$", "", clause)
    clause = re.sub(r"\.+$", "", clause)
    return clause


def _compose(clauses: list[str]) -> str:
    """The first clause leads; later rules join with "; ", later reasons go in parentheses."""
    rules: list[str] = []
    reasons: list[str] = []
    for clause in clauses:
        if not clause:
            continue
        if rules and _is_reason(clause) and not _is_rule(clause):
            reasons.append(_decap(clause))
        else:
            rules.append(clause if not rules else _decap(clause) if not clause.startswith("The user") else
                         "the user" + clause[len("The user"):])
    if not rules:
        return ""
    text = _cap(rules[0])
    for clause in rules[1:]:
        text = text.rstrip(":") + (" " if text.endswith(":") else "; ") + clause
    if reasons:
        text += " (" + "; ".join(r.strip("() ") for r in reasons) + ")"
    return text


def _finish(text: str) -> str:
    """Tidy spaces and punctuation, capitalise, end with a full stop; code spans are left alone."""
    text, kept = _protect(text)
    text = re.sub(r"\s{2,}", " ", text).strip(" ,;:-")
    text = re.sub(r"\s+([,;:.!?)])(?=\s|$)", r"\1", text)
    text = re.sub(r"\.\s*\)", ")", text)
    text = re.sub(r"([.;,:])\1+", r"\1", text)
    text = re.sub(r"[!?]+$", "", text).rstrip(" ,;:")
    if not text:
        return text
    text = _cap(text)
    last = _PLACEHOLDER.search(text[-24:]) if text.endswith(_PH_CLOSE) else None
    fence = last and int(last.group(1)) == kept.ns and kept[int(last.group(2))].startswith("```")
    if not re.search(r"[.!?…]$", text) and not fence:
        text += "."
    return _restore(text, kept)


def _limit(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    # drop the parenthesised reasons first, then cut at a word boundary
    short = re.sub(r"\s*\([^()]*\)\.$", ".", text)
    if len(short) <= budget:
        return short
    end = max(1, budget - 1)
    for span in _PROTECT.finditer(short):  # never cut into a code span, a path or a token
        if span.start() < end < span.end():
            end = span.start()
    cut = short[:end]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


def _foreign(text: str) -> str:
    """German, Spanish, French: kept in their language (no translation offline); filler and emoji removed."""
    held, kept = _protect(text)
    held = _EMOJI.sub("", held)
    previous = None
    while previous != held:
        previous = held
        held = _FOREIGN_FILLER.sub(lambda m: " " if m.start() else "", held).strip(" ,;:")
    held = re.sub(r"\s+([,;:.!?)])(?=\s|$)", r"\1", held)
    return _finish(_restore(re.sub(r"\s{2,}", " ", held), kept))


def rule_text(sentence: str, *, category: str, scope: str, context: str = "", proposal: str = "") -> str:
    """The memory a later session can act on: one standalone statement.

    `sentence` is the user's words judged durable (one sentence or a short turn);
    `category` one of coding-preferences, project-conventions, architectural-decisions,
    user-facts, corrections; `scope` repo or user. `context` is the preceding assistant
    turn: a correction that points back ("don't do that") says what "that" was when the
    turn says it briefly, and a bare "yes" to a question or offer there is read as a
    confirmation of it. `proposal`, for a confirmation, is the agent's proposal the
    user accepted: the rule then comes from the proposal, plus what the reply adds.

    English comes out imperative ("Use uv, not poetry (poetry was too slow in CI).") or
    in the third person ("The user prefers …", "The user's shell is fish."); code spans,
    names, paths and flags verbatim; a reason the user gave kept; filler removed. German,
    Spanish and French stay in their language (nothing is translated offline), with
    their filler removed. Deterministic, no network, no model. Never empty; at most
    1.3 × the input (sentence, plus proposal when one is used) + 40 characters.
    Raises ValueError for a blank sentence.
    """
    if not sentence or not sentence.strip():
        raise ValueError("rule_text needs a non-empty sentence")
    del category  # the wording follows the words, not the label; kept for the classifier's call
    scope = "repo" if scope == "repo" else "user"
    budget = int(1.3 * len(sentence)) + 40
    fallback = _finish(re.sub(r"\s+", " ", _EMOJI.sub("", sentence)).strip()) or sentence.strip()

    flat = _flatten(sentence.strip())
    if _language(flat) != "en":
        out = _foreign(flat)
        return _limit(out, budget) if out else _limit(fallback, budget)

    if not proposal and context and _ACCEPT.match(flat.strip()) and _is_offer(context):
        # a yes to the preceding question or offer; but "ok, and from now on always …" after
        # "Should I fix the test?" states its own rule: the offer must be a standing one, or
        # the reply must add no rule of its own
        remainder = _strip_filler(_ACCEPT.sub("", flat.strip()))
        standing = re.search(r"\b(?:from now on|going forward|in (?:the )?future|always|never|every|all|each|any|"
                             r"default|standard|convention|rule|whenever|by default)\b", context, re.I)
        if standing or not (len(remainder.split()) >= 4 and _is_strong_rule(remainder)):
            proposal = context
        else:
            flat = remainder
    if proposal and proposal.strip():
        rule = _proposal_rule(proposal, scope)
        if rule:
            budget += int(1.3 * len(proposal))
            addition = _reply_addition(flat, rule)
            if addition:
                joiner = ", " if re.match(r"^(?:with|without|but|except|using|via|in|on|for|plus|including)\b",
                                          addition, re.I) else "; "
                rule = rule.rstrip(" .") + joiner + addition
            return _limit(_finish(rule), budget)

    held, kept = _protect(flat)
    held = re.sub(f"(?:{_EMOJI.pattern})+\\s+(?=[a-z])", ". ", held)  # an emoji between two thoughts ends the first
    held = _EMOJI.sub("", held)
    pieces = _sentences(held)
    kept_pieces = []
    for p in pieces:
        light = _LEAD_FILLER.sub("", p.strip()).strip().rstrip(".!?")
        if re.fullmatch(r"(?:always|never)\W*", light, re.I) and kept_pieces:
            # "parameterized queries. always." — the modality belongs to the sentence before it
            before = kept_pieces[-1]
            if not re.search(r"\b(?:always|never)\b", before, re.I):
                verb = "" if _IMPERATIVE_START.match(_strip_filler(before)) else "use "
                kept_pieces[-1] = f"{light.lower()} {verb}{_strip_filler(before)}"
            continue
        if _CHATTER.match(light or "ok") or re.match(r"^(?:thanks|thank you|thx|ty)\b", p.strip(), re.I) \
                or _CHATTER.match(_strip_filler(p).rstrip(".!?") or "ok"):
            continue
        kept_pieces.append(p)
    questions = [p for p in kept_pieces if p.rstrip().endswith("?")]
    if questions and len(questions) < len(kept_pieces):
        # a question riding along ("can you fix them?") unless it states the rule ("since we never …, can you …?")
        kept_pieces = [p for p in kept_pieces if not p.rstrip().endswith("?")
                       or re.match(r"^(?:since|as|because|given that|would you mind|do you mind|"
                                   r"(?:can|could|would) you(?: please)? (?:always|never|make sure))\b",
                                   _LEAD_FILLER.sub("", p.strip()), re.I)]
    for i, p in enumerate(kept_pieces):
        if i and _CONCLUSION.match(p.strip()) and not any(_is_strong_rule(_strip_filler(q)) for q in kept_pieces[:i]):
            kept_pieces = kept_pieces[i:]  # the story before "so, …" / "anyway, …" / "long story short, …"
            break
    if not kept_pieces:
        kept_pieces = pieces
    # "parameterized queries. always." — a lone modality word belongs to the sentence before it
    clauses = [_rewrite_sentence(p, scope, context) for p in kept_pieces]
    clauses = [c for c in clauses if c]
    text = _compose(clauses)
    text = _finish(_restore(text, kept))
    if not text or not re.search(r"\w", text):
        text = fallback if re.search(r"\w", fallback) else sentence.strip()
    return _limit(text, budget)
