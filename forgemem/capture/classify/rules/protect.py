"""Code, quotes, URLs, paths and secrets set aside before a rewrite and put back verbatim after it."""

from __future__ import annotations

import itertools
import re

_PH_OPEN, _PH_CLOSE = "\ue000", "\ue001"
_PH_SEP = "\ue002"
_PLACEHOLDER = re.compile(f"{_PH_OPEN}(\\d+){_PH_SEP}(\\d+){_PH_CLOSE}")
_NAMESPACES = itertools.count(1)  # each _protect call numbers its own placeholders, so protecting twice is safe


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
    # long opaque tokens, hashes, long paths (a sentence's full stop after one is not part of it)
    r"|(?<![\w/.-])[A-Za-z0-9_+/=.-]{23,}[A-Za-z0-9_+/=-](?![\w/-])(?!\.[\w/-])"
    r"|(?<![\w/.-])(?:\.{1,2}/|[\w.-]+/)(?:[\w.-]+/)*\.\.\.(?![\w/.])"  # package patterns: ./..., ./cmd/...
    r"|(?<![\w/.-])(?=[\w.~/-]{4,})(?:~|\.{1,2})?/?(?:[\w.-]+/)+(?:[\w.-]*[\w-])?(?![\w/])(?!\.[\w/-])"  # paths
    r"|(?<![\w.-])\.?[\w-]{2,}\.[a-z][a-z0-9]{0,5}\b(?![\w/-])"  # file names: README.md, .gitattributes
    r"|(?<![\w-])--?[A-Za-z][\w-]*",  # command-line flags: "sed -i needs the ''", "-n auto", "--no-verify"
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

    text = _PROTECT.sub(hold, text)
    if _JUST_THE_TOOL.search(text):  # "we run everything through just, e.g. just test": a name, not filler
        text = _JUST_NAMES.sub(hold, text)
    return text, kept


#: `just`, the command runner, named as a tool; then its name and its recipes are kept as said
_JUST_THE_TOOL = re.compile(r"\b(?:through|with|via|using|use|uses|in|to) just\b|\bjustfile\b|\bjust (?:recipes?|"
                            r"targets?|commands?)\b", re.I)
_JUST_NAMES = re.compile(r"\bjust (?:test|tests|lint|build|fmt|format|check|dev|run|deploy|release|ci|setup|install|"
                         r"clean|serve|docs|bench|migrate|e2e|typecheck)\b|(?<=through )just\b|(?<=with )just\b|(?<=via )just\b"
                         r"|(?<=using )just\b|(?<=use )just\b|(?<=uses )just\b", re.I)


def _restore(text: str, kept: _Held) -> str:
    def back(m: re.Match) -> str:
        return kept[int(m.group(2))] if int(m.group(1)) == kept.ns else m.group(0)

    return _PLACEHOLDER.sub(back, text)
