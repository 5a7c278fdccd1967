"""What a secret value looks like, as against a word, a placeholder, code, a path or a version."""

from __future__ import annotations

import re

#: the start of every redaction mark, `[REDACTED:<kind>]`
MARK_PREFIX = "[REDACTED"

#: a value: double-, single- or back-quoted (quotes kept), or one run of non-blanks
VALUE = r"""(?:"(?P<dq>[^"\n]{1,200})"|'(?P<sq>[^'\n]{1,200})'|`(?P<bq>[^`\n]{1,200})`|(?P<v>[^\s"'`]{1,300}))"""
_VALUE_GROUPS = ("dq", "sq", "bq", "v")
#: trailing punctuation that ends a sentence rather than a secret
_TRAILING = ".,;:)]}>"

# Words that, standing alone as the "value", say something about a secret instead of being one.
_STOPWORDS = frozenset(
    """
    a an the in on at to of for from by with into onto via per as is are was were be been being it its it's
    this that these those there here not no none null nil nan undefined true false yes ok okay n/a na tbd todo
    unknown empty blank unset set required optional mandatory needed necessary missing wrong invalid incorrect
    correct right valid expired expiring stale old new same different stored kept saved managed handled
    generated rotated refreshed reset changed updated hidden masked redacted encrypted hashed encoded secret
    secrets password passwords passwd token tokens key keys pin pins passphrase credential credentials creds
    string str text bytes int integer number bool boolean any object dict list type value values field
    whatever your my our their his her what which one something anything nothing someone default defaults
    see check ask use using read loaded fetched injected provided supplied passed given sent shown printed
    logged too very quite still also just now only always never sometimes short long weak strong secure
    insecure simple complex random unique temporary temp permanent shared private public personal
    environment env variable variables config configuration settings file files vault keychain keyring
    1password lastpass bitwarden keepass dashlane onepassword include omit same-origin
    """.split()
)
#: words after which a quoted value is prose, not the secret ("the password is 'in the vault'")
_LEADING_PROSE = frozenset(
    """a an the in on at to of for from by with into via as is are was were be not no it this that there here
    whatever your my our their what which one same stored kept saved set see ask use""".split()
)
#: a part of a hyphenated word that marks it as a stand-in ("your-token-here", "dummy_secret")
_PLACEHOLDER_WORDS = frozenset("your my dummy placeholder example sample fake test changeme here xxx foo bar baz todo not".split())
#: a hyphenated part that describes a secret ("base64-encoded", "12-char", "short-lived")
_DESCRIPTORS = frozenset(
    """char chars character characters digit digits bit bits byte bytes letter letters word words long length
    encoded hashed signed based protected encrypted only lived live scoped level wide time use""".split()
)
#: technical terms that have digits in them but are not secrets
_TECH_TERMS = re.compile(
    r"(?i)^(?:sha-?\d+|md5|base(?:32|58|64)(?:url)?|utf-?\d+|rs\d{3}|hs\d{3}|es\d{3}|ps\d{3}|aes-?\d+|argon2(?:id|i|d)?"
    r"|pbkdf2|bcrypt|scrypt|oauth2?|http[23s]?|ipv[46]|s3|ec2|k8s|i18n|l10n|x509|pkcs#?\d+|totp|hotp|2fa|mfa|u2f"
    r"|1password|webauthn|fido2|v\d+(?:\.\d+)*[a-z]?|\d+(?:\.\d+)+[a-z]?)$"
)
PLACEHOLDER = re.compile(
    r"^(?:\$|%\(|%s$|\{\{|\{[\w.!:'\"\[\]()]{1,80}\}$|<[^>]*>?$|\[[^\]]*\]?$|@\{|#\{|!(?:vault|ref|sub|getatt|env|secret)\b"
    r"|\*|x{3,}$|X{3,}$|\.\.\.|…|•|\?+$|-+$|_+$|none$|null$|nil$|changeme$|redacted$|secret$|password$)",
    re.I,
)
_CODE_REF = re.compile(
    # a call or a subscript, whole or cut at a quote: get_password(), os.environ[, tokens[0], re.sub(r
    r"^(?:[A-Za-z_][\w.]*\s*[(\[](?:[^()\[\]]*[)\]]|[^()\[\]]*)$"
    # an attribute: self.password, settings.DB_PASSWORD, params.apiKey
    r"|(?:[a-z_][A-Za-z0-9_]*|[A-Z_][A-Z0-9_]*)(?:\.(?:[a-z_][A-Za-z0-9_]*|[A-Z_][A-Z0-9_]*))+$)"
)
_KEYWORD_STEM = re.compile(r"(?i)pass|pwd|secret|token|key|cred|auth|pin")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_URL = re.compile(r"^[a-zA-Z][\w+.-]*://")
_PATH = re.compile(r"^(?:/|~/|\./|\.\./|[A-Za-z]:\\|%\w+%[\\/])")
_FILE_NAME = re.compile(
    r"(?i)[\w-]\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|java|kt|rb|php|cs|c|h|cpp|hpp|swift|md|rst|txt|json|ya?ml|toml"
    r"|ini|cfg|conf|env|lock|log|sh|bash|zsh|ps1|sql|html|css|scss|xml|csv|pem|key|crt|gpg|jks|p12|pfx)(?::\d+)*$"
)
_NUMERIC_WITH_SEPARATORS = re.compile(r"^\d+(?:[.:/,x-]\d+)+$|^\d+(?:\.\d+)?%$")
_STRONG_SYMBOL = re.compile(r"[!@#$%^&*+=~?|\\;]")
_LOWER_TO_UPPER = re.compile(r"[a-z][A-Z]")


def value_of(m: re.Match) -> tuple[str, str, bool]:
    """(group name, value, quoted) of the `VALUE` part of a match."""
    for name in _VALUE_GROUPS:
        value = m.group(name) if name in m.re.groupindex else None
        if value is not None:
            return name, value, name != "v"
    raise AssertionError("no value group")  # pragma: no cover


_ESCAPE = re.compile(r"\\[nrtu\"\\]|…")
_CLOSER_OF = {"(": ")", "[": "]", "{": "}", "<": ">"}
_OPENER_OF = {closer: opener for opener, closer in _CLOSER_OF.items()}


def span(value: str) -> tuple[int, int]:
    """Where the secret sits in an unquoted value (start, end): without the brackets and punctuation
    of the sentence around it ("V." "V," "(V)"), cut at a JSON escape ("V\\n…") and before a bracket
    that closes code ("False).ids")."""
    cut = _ESCAPE.search(value)
    end = cut.start() if cut else len(value)
    depth = dict.fromkeys(_CLOSER_OF, 0)
    for index in range(end):
        char = value[index]
        if char in depth:
            depth[char] += 1
        elif char in _OPENER_OF:
            if depth[_OPENER_OF[char]]:
                depth[_OPENER_OF[char]] -= 1
            elif index + 1 == end or value[index + 1] in ".),;]}:":
                end = index
                break

    def unbalanced(char: str, start: int, end: int) -> bool:
        opener, closer = (char, _CLOSER_OF[char]) if char in _CLOSER_OF else (_OPENER_OF[char], char)
        opened, closed = value.count(opener, start, end), value.count(closer, start, end)
        return opened > closed if char == opener else closed > opened

    start = 0
    while start < end and value[start] in _CLOSER_OF:
        if unbalanced(value[start], start, end):
            start += 1  # "(V" of "(password V)"
        elif value[start] == "(" and end - start > 2 and value[end - 1] == ")" and not any(
            c in _CLOSER_OF or c in _OPENER_OF for c in value[start + 1 : end - 1]
        ):
            start, end = start + 1, end - 1  # "(V)"
        else:
            break
    while end > start and value[end - 1] in _TRAILING:
        if value[end - 1] in _OPENER_OF and not unbalanced(value[end - 1], start, end):
            break  # "Sv(Pa55)" keeps its own closing bracket
        end -= 1
    return start, end


def trim(value: str) -> str:
    start, end = span(value)
    return value[start:end]


def not_a_value(value: str) -> bool:
    """Placeholders, code, paths, URLs, e-mail addresses, dates and versions: never a secret."""
    if not value or MARK_PREFIX in value or "..." in value or "…" in value:
        return True  # "sk-...abcd": a key shown masked
    lower = value.lower()
    if lower in _STOPWORDS or PLACEHOLDER.match(value) or _CODE_REF.match(value):
        return True
    if _URL.match(value) or _PATH.match(value) or _EMAIL.match(value) or _FILE_NAME.search(value):
        return True
    if _NUMERIC_WITH_SEPARATORS.match(value) or _TECH_TERMS.match(value):
        return True
    if len(set(value)) == 1:  # "********", "xxxxxxxx"
        return True
    # an identifier that names the secret instead of holding it: db_password, userPassword, API_KEY
    if _IDENTIFIER.match(value) and _KEYWORD_STEM.search(value) and not any(c.isdigit() for c in value):
        return True
    parts = re.split(r"[-_./]", lower)
    if len(parts) > 1:
        if any(p in _DESCRIPTORS for p in parts):
            return True  # "base64-encoded", "12-char", "short-lived"
        if all(p.isalpha() for p in parts if p) and (parts[-1] in _STOPWORDS or any(p in _PLACEHOLDER_WORDS for p in parts)):
            return True  # "not-required", "your-api-key-here", "test-key", "proxy-handled"
    return False


def _digit_floor(cls: str) -> int:
    """The fewest digits an all-digit value needs to count as a secret of this class."""
    return {"cvv": 3, "pin": 4, "password": 4, "key": 10}[cls]


def secret_like(value: str, *, form: str, cls: str, quoted: bool) -> bool:
    """Whether `value` (after a label, in a given form) looks like a secret rather than a word.

    form: "assign" (`password: V`, `password=V`), "is" (`password is V`), "direct" (`password V`).
    cls: "password", "pin", "cvv" or "key" (tokens, API keys, secrets).
    """
    if quoted:
        value = value.strip()
        first = value.split()[0].lower() if value.split() else ""
        if not value or first in _LEADING_PROSE or not_a_value(value):
            return False
        if cls in ("pin", "cvv"):
            return value.isdigit() and len(value) >= _digit_floor(cls)
        if cls == "key" and form != "assign":
            # a token or key is random, never a word: "the access token is 'opaque' here"
            return secret_like(value, form=form, cls=cls, quoted=False)
        return len(value) >= 3
    if not_a_value(value):
        return False
    if value.isdigit():
        if form == "direct" and cls not in ("pin", "cvv"):
            return False
        floor = _digit_floor(cls) if form != "is" or cls != "password" else 6
        return floor <= len(value) <= 64
    if cls in ("pin", "cvv"):
        return False  # a PIN or CVV is digits; "the PIN is four digits long"
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    strong_symbol = bool(_STRONG_SYMBOL.search(value))
    if form == "assign":
        # after "password:" or "token=", anything that is not a word about the secret counts
        return len(value) >= (4 if (has_digit or strong_symbol) else 6)
    minimum = 6 if form == "direct" else 5
    if len(value) < minimum:
        return False
    if has_digit and has_alpha:
        return True
    if strong_symbol and (has_digit or has_alpha):
        return True
    # letters only: random-looking mixed case ("hUnTeRbLuE"), not CamelCase names ("PostgreSQL")
    if value.isalpha() and len(_LOWER_TO_UPPER.findall(value)) >= 3:
        return True
    return False
