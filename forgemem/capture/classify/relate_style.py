"""What code is formatted with, one way at a time: tabs or spaces (and how many), single or double quotes,
semicolons or none, trailing, leading or no commas, SQL keywords in upper or lower case; and how a repository merges
pull requests (squash, rebase, merge commits) and writes commit messages (conventional, plain, gitmoji, ticket first),
the branch work goes into, how dates and ids look, how lists are paged, whether table names are singular, the
language comments, commit messages and docs are written in; and how code is written (absolute or relative imports,
named or default exports, async/await or promise chains, the case of file, JSON, column, env and component names). A statement that gives
another way replaces the memory of the same store that holds the old one ("2 spaces everywhere now" where "user
likes tabs for indentation" held; "double quotes from now on" where "single quotes in TS" held), however few words
the two share: the relation model, which reads shared names and words, misses them.

Never by one said for a language or kind of file the memory does not name ("spaces in yaml" is an exception to "likes
tabs", not its new rule), and never by one that adds a case ("also", "except", "only in").
"""

from __future__ import annotations

import re

from forgemem.capture.classify.relate_person import _LANGUAGE, _LANGUAGES

#: the word that turns a way down: "spaces, not tabs", "no tabs", "instead of double quotes", "tabs over spaces"
_TURNED_DOWN = re.compile(r"(?:\b(?:no|not|never|instead of|rather than|over|without|drop(?:ping)?|ditch(?:ing)?|"
                          r"don'?t|do not|stop|quit|done with|give up on|gave up on|"
                          r"away from|off|from|than)\s+(?:the\s+|any\s+|using\s+)?)$", re.I)
_TURNED_DOWN_AFTER = re.compile(r"^\W*(?:(?:are|is) (?:out|gone|dead)|anymore|any more|no more)\b", re.I)

#: each scale: its ways, each a pattern (group 1, when there is one, is a number that must also agree)
_SCALES: dict[str, dict[str, re.Pattern[str]]] = {
    "indent": {
        "tabs": re.compile(r"\btabs?\b(?!\s*(?:bar|key|keys|component|layout|navigator|page|view|group|index|panel)\b)"
                           r"(?![)/])", re.I),
        "spaces": re.compile(r"\b(\d)[ -]?spaces?\b|\bspaces?\b", re.I),
    },
    "quotes": {
        "single": re.compile(r"\bsingle[- ]?quot\w*|\bsingle ones\b|'\s*(?:quotes|strings)\b", re.I),
        "double": re.compile(r"\bdouble[- ]?quot\w*|\bdouble ones\b|\"\s*(?:quotes|strings)\b", re.I),
    },
    "semicolons": {
        "without": re.compile(r"\b(?:no|without|drop(?:ping)?|omit(?:ting)?|skip(?:ping)?) semi(?:colon)?s\b|"
                              r"\bsemi(?:colon)?-?less\b|\bsemi(?:colon)?s?:\s*false\b", re.I),
        "with": re.compile(r"\b(?:always|use|with|keep|add) semi(?:colon)?s\b|\bsemi(?:colon)?s (?:everywhere|always|"
                           r"on|required|at the end)\b|\bsemi(?:colon)?s?:\s*true\b", re.I),
    },
    "commas": {
        "trailing": re.compile(r"\btrailing commas?\b", re.I),
        "leading": re.compile(r"\bleading commas?\b|\bcomma[- ]first\b", re.I),
    },
    # how pull requests are merged, and what a commit message looks like: one way a repository at a time
    "merge": {
        "squash": re.compile(r"\bsquash(?:ed|ing)?(?:[- ](?:and[- ])?merg\w*| (?:the )?(?:prs?|pull requests?|commits?)\b|"
                             r"\w* only\b)", re.I),
        "rebase": re.compile(r"\brebase(?:[- ](?:and[- ])?merg\w*| (?:the )?prs?\b| only\b)", re.I),
        "merge-commit": re.compile(r"\bmerge commits?\b|--no-ff\b|\bno-ff\b|\b(?:regular|normal|real|true) merges?\b",
                                   re.I),
    },
    "commits": {
        "conventional": re.compile(r"\bconventional[- ]commits?\b|\b(?:feat|fix|chore)(?:\([\w-]*\))?:\s*[/,]", re.I),
        "plain": re.compile(r"\bno (?:type |feat\w* )?prefix(?:es)?\b|\bfree-?form\b|\bwithout (?:the |a |any )?(?:type )?"
                            r"prefix(?:es)?\b|\bplain (?:imperative )?(?:sentences?|messages?|english)\b", re.I),
        "gitmoji": re.compile(r"\bgitmojis?\b", re.I),
        "ticket": re.compile(r"<ticket>:|<jira[\w-]*>:|\b(?:ticket|jira|issue) (?:id|key|number) (?:prefix|first)\b|"
                             r"\bprefix(?:ed)? with the (?:ticket|jira|issue)\b", re.I),
    },
    # a project's choices that hold one at a time: the branch work goes into, how dates and ids look in its data,
    # how lists are paged, whether table names are singular
    "base-branch": {
        "main": re.compile(r"\bmain\b"), "master": re.compile(r"\bmaster\b"),
        "develop": re.compile(r"\bdevelop\b|\bdev branch\b"), "trunk": re.compile(r"\btrunk\b", re.I),
    },
    "datetimes": {
        "iso-8601": re.compile(r"\biso[- ]?8601\b|\brfc ?3339\b|\biso (?:strings?|format|dates?)\b", re.I),
        "epoch": re.compile(r"\b(?:unix|epoch)(?: time)?(?: timestamps?| seconds| millis\w*| ms)?\b", re.I),
    },
    "ids": {
        "uuid": re.compile(r"\buuid(?:s|v4|v7)?\b", re.I), "ulid": re.compile(r"\bulids?\b", re.I),
        "serial": re.compile(r"\b(?:auto[- ]?increment\w*|serial|bigserial|identity columns?|sequential (?:int|integer)s?)\b",
                             re.I),
        "nanoid": re.compile(r"\bnanoids?\b", re.I), "cuid": re.compile(r"\bcuid2?s?\b", re.I),
    },
    "pagination": {
        "cursor": re.compile(r"\bcursor(?:[- ]based)?\b|\bkeyset\b|\bnext_?cursor\b|\brelay connections?\b|"
                             r"CursorPagination", re.I),
        "offset": re.compile(r"\b(?:limit[ /-])?offset\b|\bpage[ _-]?number\b|PageNumberPagination|LimitOffsetPagination",
                             re.I),
    },
    "table-names": {"singular": re.compile(r"\bsingular\b", re.I), "plural": re.compile(r"\bplural\b", re.I)},
    # how code is written, one way at a time
    "imports": {"absolute": re.compile(r"\babsolute\b", re.I), "relative": re.compile(r"\brelative\b", re.I)},
    "exports": {"named": re.compile(r"\bnamed exports?\b|\bexport (?:it )?by name\b", re.I),
                "default": re.compile(r"\bdefault exports?\b|\bexport default\b", re.I)},
    "async": {"await": re.compile(r"\basync ?/ ?await\b|\bawait\b", re.I),
              "then": re.compile(r"\.then\b|\bthen\(\)|\bpromise chains?\b|\bcallbacks?\b", re.I)},
    "sql-case": {
        "upper": re.compile(r"\b(?:upper[- ]?case|caps|capitali[sz]ed) (?:sql )?keywords\b|\bkeywords (?:in )?(?:upper[- ]?case|"
                            r"caps|capitali[sz]ed)\b", re.I),
        "lower": re.compile(r"\blower[- ]?case (?:sql )?keywords\b|\bkeywords (?:in )?lower[- ]?case\b", re.I),
    },
}
#: "tabs" and "spaces" mean indentation only in a text about it: a word of indentation, a width, or the two named
#: together ("tabs not spaces")
_ABOUT_INDENT = re.compile(r"\bindent\w*|\b\d[ -]?spaces?\b|\btabs?\b.{0,20}\bspaces?\b|\bspaces?\b.{0,20}\btabs?\b|"
                           r"\b(?:use|prefer|likes?|with|uses)\s+tabs\b|\btabs (?:everywhere|only|for)\b", re.I)
#: the words a scale's ways mean something only beside: "main" is a branch only in a text about where work goes
_ABOUT = {
    "indent": _ABOUT_INDENT,
    "base-branch": re.compile(r"\b(?:branch(?:es)? (?:off|from)|base branch|default branch|target(?:s|ing)?|(?:merge|merged|"
                              r"merging|prs?|pull requests?|features?) (?:go(?:es)? )?(?:in)?to|against|cut from|"
                              r"branch(?:ed)? off|trunk-based)\b", re.I),
    "datetimes": re.compile(r"\b(?:dates?|datetimes?|timestamps?|times)\b", re.I),
    "ids": re.compile(r"\b(?:ids?|primary keys?|pks?|identifiers?)\b", re.I),
    "pagination": re.compile(r"\bpaginat\w+|\bpag(?:e|ed|es|ing)\b|\blist (?:endpoints?|fields?)\b|Pagination\b", re.I),
    "table-names": re.compile(r"\btables?(?: names?)?\b", re.I),
    "imports": re.compile(r"\bimports?\b|\bimport paths?\b", re.I),
    "async": re.compile(r"\basync\w*|\bpromises?\b|\.then\b|\bcallbacks?\b", re.I),
}
#: how names are written, said of one kind of name: "file names in kebab-case", "json keys camelCase"
_CASES = {
    "kebab": re.compile(r"\bkebab[- ]?case\b", re.I), "snake": re.compile(r"\bsnake[_ -]?case\b", re.I),
    "camel": re.compile(r"\bcamel[- ]?case\b", re.I), "pascal": re.compile(r"\bpascal[- ]?case\b", re.I),
    "screaming": re.compile(r"\b(?:screaming|upper)[_ -]?snake(?:[_ -]?case)?\b", re.I),
}
_NAMED = {
    "files": re.compile(r"\bfile ?names?\b|\bfiles\b", re.I),
    "json": re.compile(r"\bjson\b|\b(?:api|response|request|payload) (?:fields?|keys?|properties)\b", re.I),
    "columns": re.compile(r"\bcolumns?\b|\bdb fields?\b", re.I),
    "env": re.compile(r"\benv(?:ironment)? ?var(?:iable)?s?\b", re.I),
    "components": re.compile(r"\bcomponents?\b", re.I),
    "branches": re.compile(r"\bbranch(?:es| names?)\b", re.I),
}
#: what a text is written in, said of one of these: "code comments in German", "commit messages in English"
_WRITTEN = {
    "comments": re.compile(r"\b(?:code )?comments?\b|\bdocstrings?\b", re.I),
    "commits": re.compile(r"\bcommit (?:messages?|msgs?)\b|\bcommits? in\b", re.I),
    "docs": re.compile(r"\b(?:docs|documentation|readmes?|adrs?)\b", re.I),
    "identifiers": re.compile(r"\b(?:identifiers?|variable names?|function names?)\b", re.I),
    "ui": re.compile(r"\bui (?:strings?|texts?|copy|labels?)\b", re.I),
}
#: a "no trailing commas" is a third way of the comma scale
_NO_COMMAS = re.compile(r"\b(?:no|without|drop(?:ping)?) trailing commas?\b", re.I)

#: what a way of formatting is said for: a language or a kind of file
_WHERE = re.compile(r"\b(?:python|golang|rust|java|kotlin|swift|ruby|php|c#|c\+\+|typescript|ts|tsx|javascript|js|"
                    r"jsx|yaml|yml|json|toml|makefiles?|markdown|md|sql|html|css|scss|lua|elixir|haskell|scala|dart|"
                    r"shell|bash|terraform|hcl|nix|proto|graphql|svelte|vue|c)\b", re.I)
_GO = re.compile(r"\bGo\b")  # the language, not the verb


def _where(text: str) -> set[str]:
    return {w.lower() for w in _WHERE.findall(text)} | ({"golang"} if _GO.search(text) else set())


#: the scales a language or kind of file may hold differently ("tabs in Makefiles", "2 spaces in yaml")
_FORMATTING = frozenset({"indent", "quotes", "semicolons", "commas", "sql-case"})
#: the old way said to stay beside the new one: "uuid for the public id, serial pk stays"
_KEPT = re.compile(r"\b(?:stays?|still|remains?|keep(?:s|ing)?|kept|as is|unchanged)\b", re.I)
#: a case added beside the way that holds, not another way: "also", "except", "only in", "but in"
_ADDS = re.compile(r"\b(?:also|too|as well|except|but (?:in|for)|only (?:in|for)|unless|exception)\b", re.I)


def _ways(text: str, *, new: bool) -> dict[str, set[str]]:
    """Each scale the text gives a way of (the ways it does not turn down), with a width for spaces."""
    found: dict[str, set[str]] = {}
    for scale, ways in _SCALES.items():
        if scale in _ABOUT and not _ABOUT[scale].search(text):
            continue
        for way, rx in ways.items():
            for m in rx.finditer(text):
                if way != "without" and (_turned_down_before(text, m) or _TURNED_DOWN_AFTER.match(text[m.end():])):
                    continue
                width = m.group(1) if m.groups() and m.group(1) else ""
                found.setdefault(scale, set()).add(f"{way}{width}")
    if _NO_COMMAS.search(text):
        commas = found.setdefault("commas", set())
        commas.discard("trailing")
        commas.add("none")
    languages = {_LANGUAGES[m.group(0).lower()] for m in _A_LANGUAGE.finditer(text) if not _turned_down_before(text, m)}
    cases = {case for case, rx in _CASES.items() for m in rx.finditer(text) if not _turned_down_before(text, m)}
    found.update(_said_of(text, languages, _WRITTEN, "language"))
    found.update(_said_of(text, cases, _NAMED, "case"))
    return {scale: ways for scale, ways in found.items() if ways}


def _turned_down_before(text: str, match: re.Match[str]) -> bool:
    """Whether the words just before a way turn it down ("not tabs", "instead of double quotes")."""
    return bool(_TURNED_DOWN.search(text[max(0, match.start() - 24):match.start()]))


def _said_of(text: str, ways: set[str], kinds: dict[str, re.Pattern[str]], scale: str) -> dict[str, set[str]]:
    """The ways (a language, a case) for each kind of thing the text says them of: "comments and commit messages in
    English" gives English to "language-comments" and "language-commits"."""
    return {f"{scale}-{kind}": set(ways) for kind, rx in kinds.items() if ways and rx.search(text)}


_A_LANGUAGE = re.compile(rf"\b(?:{_LANGUAGE})\b", re.I)


def _changed(old: set[str], now: set[str]) -> bool:
    """Whether the new ways replace the old: one not held before, and, for spaces, another width."""
    def kind(way: str) -> str:
        return way.rstrip("0123456789")

    if {kind(w) for w in now} - {kind(w) for w in old}:
        return True
    widths = {w for w in now if w != kind(w)}
    held = {w for w in old if w != kind(w)}
    return bool(widths and held and not widths & held)


def style_change(said: str, scope: str, candidates: list) -> int | None:
    """The index of the candidate of the same store whose way of formatting the statement replaces, or None.
    `said` is the person's own words."""
    if _ADDS.search(said):
        return None
    now = _ways(said, new=True)
    if not now:
        return None
    where_now = _where(said)
    hits: list[tuple[float, int]] = []
    for i, candidate in enumerate(candidates):
        if candidate.scope != scope:
            continue
        held = _ways(candidate.text, new=False)
        elsewhere = bool(where_now - _where(candidate.text))
        # "tabs in Makefiles" is not what "2 spaces for python" is about, nor "spaces in yaml" an exception to "likes
        # tabs" its new rule (said with no word of where, a way of formatting is about what the memory was)
        if any(scale in held and _changed(held[scale], ways) and not (elsewhere and scale in _FORMATTING)
               and not (held[scale] <= ways and _KEPT.search(said)) for scale, ways in now.items()):
            hits.append((candidate.similarity, i))
    return max(hits)[1] if hits else None
