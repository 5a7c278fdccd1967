"""Redaction of secrets before anything is written to a memory file, a cache or a log.

This module runs the layers and applies their matches (`redact`, `redact_value`); the
layers live beside it: the patterns of the first two in `redact_rules`, what a secret
value looks like (against a word, a placeholder, code or a path) in `redact_values`,
the third in `redact_detect`.

Three layers, all run on every memory text, provenance quote and stored turn:

1. Token shapes that show up in agent sessions (cloud and API keys, tokens,
   private key blocks, JWTs, auth headers): `redact_rules.TOKEN_SHAPES`.
2. Secrets in context, `redact_rules.RULES`: a value next to a label that says what it is,
   the way people write it in prose and commands — "the deploy password is V",
   "password: V", "pw V", "the passphrase for the vault is V", "use V as the
   password", "login as admin / V", "user alice pass V", PINs and card CVVs;
   command-line flags (`mysql -pV`, `--password=V`, `--token V`, `curl -u
   user:V`, `sshpass -p V`, `docker login -p V`, `htpasswd -b f user V`,
   `ssh-keygen -N V`, `echo V | … --password-stdin`); secret-named variables
   (`PGPASSWORD=V`, `GITHUB_TOKEN=V`); passwords in URLs and connection strings
   (`Password=V;`, `PWD={V}`), `.netrc` and `.pgpass` lines; payment card
   numbers (13–19 digits, Luhn-checked, a card network's prefix). A value
   stated next to a word label is of kind "password" whatever the label
   (token, API key, secret: the kind callers have always seen), except `pin`
   and `card-cvv`.
   A value after "is" must look like a secret, not a word: it has a digit or
   a symbol, is quoted or back-ticked, or is a long random-looking string;
   placeholders (`${VAR}`, `<your password>`, `***`), code (`self.password`,
   `os.environ[...]`, `Optional[str]`), paths, URLs and plain words are left
   alone ("the password is in 1Password", "the token is refreshed hourly").
3. Yelp's detect-secrets plugins (AWS, Azure, GitHub, Slack, Stripe, JWT,
   keyword assignments in code, high-entropy quoted strings, …), line by
   line, for whatever the first two missed. A finding is widened to the whole
   token it sits in before it is redacted.

A match is replaced by `[REDACTED:<kind>]`; the label before a value is kept
("the deploy password is [REDACTED:password]"), and so are the quotes around
it. Redacting twice gives the same text as redacting once. The caller is told
the kinds found; nothing is logged with the secret in it.

Every pattern is linear: bounded repetitions, no nested unbounded quantifiers,
and rules whose trigger word is absent from the text are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from forgemem.store.redact_detect import redact_detected
from forgemem.store.redact_rules import RULES, TOKEN_SHAPES
from forgemem.store.redact_values import MARK_PREFIX

_MARK = re.compile(r"\[REDACTED:([\w-]+)\]")
_NESTED_MARK = re.compile(r"\[REDACTED:[^\]\s]*\[REDACTED")


def _apply(pattern: re.Pattern[str], handler: Callable[[re.Match], str | None], text: str, found: list[str]) -> str:
    """Replace each match the handler accepts; after a refused match, look again just after its start
    (or its label), so a refused candidate cannot hide a secret inside it."""
    pieces: list[str] = []
    last = position = 0
    has_label = "label" in pattern.groupindex
    while position <= len(text):
        m = pattern.search(text, position)
        if m is None:
            break
        result = handler(m)
        kinds = _MARK.findall(result) if result is not None else []
        for old in _MARK.findall(m.group(0)):
            if old not in kinds:
                result = None  # never cut into an earlier redaction mark
                break
            kinds.remove(old)
        if result is None or _NESTED_MARK.search(result):
            position = m.end("label") if has_label else m.start() + 1
            continue
        found.extend(kinds)
        pieces.append(text[last : m.start()])
        pieces.append(result)
        last = m.end()
        position = max(m.end(), m.start() + 1)
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _redact_rules(text: str, found: list[str]) -> str:
    """Layer 2, once."""
    lower = text.lower()
    for _name, pattern, handler, triggers in RULES:
        if triggers and not any(t in lower for t in triggers):
            continue
        before = len(found)
        text = _apply(pattern, handler, text, found)
        if len(found) != before:
            lower = text.lower()
    return text


def _redact_rules_near_marks(text: str, found: list[str]) -> str:
    """Layer 2 again, on the lines around a redaction mark only (the rest cannot have changed)."""
    lines = text.split("\n")
    near = sorted({j for i, line in enumerate(lines) if MARK_PREFIX in line for j in (i - 1, i, i + 1) if 0 <= j < len(lines)})
    windows: list[list[int]] = []
    for index in near:
        if windows and index == windows[-1][1]:
            windows[-1][1] = index + 1
        else:
            windows.append([index, index + 1])
    for start, end in windows:
        clean = _redact_rules("\n".join(lines[start:end]), found).split("\n")
        if len(clean) == end - start:
            lines[start:end] = clean
    return "\n".join(lines)


def _shape_mark(kind: str, keep: bool) -> Callable[[re.Match[str]], str]:
    """A layer-1 match's replacement: its kept label (if the shape has one), then the mark."""
    return lambda m: (m.group("keep") if keep else "") + f"[REDACTED:{kind}]"


def redact(text: str) -> tuple[str, list[str]]:
    """The text with secrets replaced, and the kinds of secret found (in order)."""
    found: list[str] = []
    for kind, pattern in TOKEN_SHAPES:
        text, count = pattern.subn(_shape_mark(kind, "keep" in pattern.groupindex), text)
        found.extend([kind] * count)
    before = len(found)
    text = _redact_rules(text, found)
    # An accepted match can span a second label ("password for the vault pw V1 : V2"); the
    # second label's own value shows up in another pass. Text without secrets (nearly all of
    # it) takes one pass, and redacting the result again changes nothing.
    for _ in range(3):
        if len(found) == before:
            break
        before = len(found)
        text = _redact_rules_near_marks(text, found)
    return redact_detected(text, found), found


def redact_value(value):
    """`redact` applied to every string inside a str/list/dict value (e.g. `source`)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        found: list[str] = []
        items = []
        for item in value:
            clean, kinds = redact_value(item)
            items.append(clean)
            found.extend(kinds)
        return items, found
    if isinstance(value, dict):
        found = []
        result = {}
        for key, item in value.items():
            clean, kinds = redact_value(item)
            result[key] = clean
            found.extend(kinds)
        return result, found
    return value, []
