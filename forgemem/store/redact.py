"""Redaction of secrets before anything is written to a memory file, a cache or a log.

Three layers, all run on every memory text, provenance quote and stored turn:

1. Token shapes that show up in agent sessions (cloud and API keys, tokens,
   private key blocks, JWTs, auth headers): `_PATTERNS`.
2. Secrets in context, `_RULES`: a value next to a label that says what it is,
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
from functools import lru_cache

_RED = "[REDACTED"

# ---------------------------------------------------------------- layer 1: token shapes

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("aws-secret-key", re.compile(r"(?i)(?P<keep>aws_?secret_?(?:access_?)?key\W{0,4})[A-Za-z0-9/+]{40}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi-token", re.compile(r"\bpypi-AgE[A-Za-z0-9_\-]{50,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+")),
    ("discord-webhook", re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("google-oauth-secret", re.compile(r"\bGOCSPX-[A-Za-z0-9_\-]{20,}")),
    ("stripe-key", re.compile(r"\b(?:[rs]k|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("stripe-webhook-secret", re.compile(r"\bwhsec_[0-9A-Za-z]{24,}")),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),
    ("twilio-key", re.compile(r"\b(?:SK|AC)[0-9a-f]{32}\b")),
    ("mailgun-key", re.compile(r"\bkey-[0-9a-f]{32}\b")),
    ("telegram-bot-token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b")),
    ("digitalocean-token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    ("vault-token", re.compile(r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}")),
    ("azure-storage-key", re.compile(r"(?i)(?P<keep>AccountKey=)[A-Za-z0-9+/=]{40,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("auth-header", re.compile(r"(?i)(?P<keep>\b(?:authorization|proxy-authorization)\s*:\s*(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]{8,}")),
    ("bearer-token", re.compile(r"(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/\-]{20,}=*")),
]

# ---------------------------------------------------------------- layer 2: secrets in context

#: a value: double-, single- or back-quoted (quotes kept), or one run of non-blanks
_VALUE = r"""(?:"(?P<dq>[^"\n]{1,200})"|'(?P<sq>[^'\n]{1,200})'|`(?P<bq>[^`\n]{1,200})`|(?P<v>[^\s"'`]{1,300}))"""
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
_PLACEHOLDER = re.compile(
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


def _value_of(m: re.Match) -> tuple[str, str, bool]:
    """(group name, value, quoted) of the `_VALUE` part of a match."""
    for name in _VALUE_GROUPS:
        value = m.group(name) if name in m.re.groupindex else None
        if value is not None:
            return name, value, name != "v"
    raise AssertionError("no value group")  # pragma: no cover


_ESCAPE = re.compile(r"\\[nrtu\"\\]|…")
_CLOSER_OF = {"(": ")", "[": "]", "{": "}", "<": ">"}
_OPENER_OF = {closer: opener for opener, closer in _CLOSER_OF.items()}


def _span(value: str) -> tuple[int, int]:
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


def _trim(value: str) -> str:
    start, end = _span(value)
    return value[start:end]


def _not_a_value(value: str) -> bool:
    """Placeholders, code, paths, URLs, e-mail addresses, dates and versions: never a secret."""
    if not value or _RED in value or "..." in value or "…" in value:
        return True  # "sk-...abcd": a key shown masked
    lower = value.lower()
    if lower in _STOPWORDS or _PLACEHOLDER.match(value) or _CODE_REF.match(value):
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


def _secret_like(value: str, *, form: str, cls: str, quoted: bool) -> bool:
    """Whether `value` (after a label, in a given form) looks like a secret rather than a word.

    form: "assign" (`password: V`, `password=V`), "is" (`password is V`), "direct" (`password V`).
    cls: "password", "pin", "cvv" or "key" (tokens, API keys, secrets).
    """
    if quoted:
        value = value.strip()
        first = value.split()[0].lower() if value.split() else ""
        if not value or first in _LEADING_PROSE or _not_a_value(value):
            return False
        if cls in ("pin", "cvv"):
            return value.isdigit() and len(value) >= _digit_floor(cls)
        if cls == "key" and form != "assign":
            # a token or key is random, never a word: "the access token is 'opaque' here"
            return _secret_like(value, form=form, cls=cls, quoted=False)
        return len(value) >= 3
    if _not_a_value(value):
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


_LABEL = r"""(?P<label>
    pass(?:words?|wd|phrases?|codes?)|pass[ _-]phrases?|pwd|pw|
    (?P<pin>pin(?:[ _-]?(?:codes?|numbers?))?)|
    (?P<cvv>cvv2?|cvc2?|security[ _-]codes?)|
    secret[ _-]access[ _-]keys?|
    (?:(?:api|access|auth|bearer|refresh|session|client|app|bot|deploy|id|oauth|personal[ _-]access|webhook)[ _-]?)?tokens?|
    (?:api|access|secret|private|client|signing|encryption|master|license|licence|subscription|account|service|app)[ _-]?keys?|
    apikeys?|
    (?:(?:client|api|app|shared|webhook|signing|consumer)[ _-]?)?secrets?|
    credentials|creds
)"""

_LABELLED = re.compile(
    r"(?ix)(?P<keep>(?=[pcstabrdiowemlPCSTABRDIOWEML])(?<![A-Za-z0-9])" + _LABEL + r"""(?![A-Za-z0-9])
    (?:
        (?P<assign>["'\]]{0,2}[ \t]*(?:=>|:=|[:=])[ \t]*)
      | (?P<is>(?:\s+(?:for|of|on|to|at|in|from|with)(?:\s+[^\s:=,;.]{1,40}){1,4}?)?
               (?:\s+(?:is|was|are|were|will\s+be|should\s+be|would\s+be)\s+|[ \t]*[:=][ \t]*)
               (?:(?:now|still|currently|just|simply|actually|literally|also|always)\s+)?)
      | (?P<direct>[ \t]+)
    ))""" + _VALUE
)


def _replace_value(m: re.Match, kind: str) -> str:
    """The match with its value (trimmed when unquoted) replaced by the redaction mark."""
    name, value, quoted = _value_of(m)
    start, end = (0, len(value)) if quoted else _span(value)
    offset = m.start(name) - m.start()
    whole = m.group(0)
    return whole[: offset + start] + f"[REDACTED:{kind}]" + whole[offset + end :]


def _labelled(m: re.Match) -> str | None:
    label = m.group("label").lower()
    if m.group("cvv"):
        cls, kind = "cvv", "card-cvv"
    elif m.group("pin"):
        cls, kind = "pin", "pin"
    elif label.startswith(("pass", "pw")):
        cls, kind = "password", "password"
    else:
        cls, kind = "key", "password"
    if m.group("assign") is not None:
        form = "assign"
    elif m.group("is") is not None:
        form = "assign" if re.search(r"[:=][ \t]*$", m.group("is")) else "is"
    else:
        form = "direct"
        if label.startswith("cred"):
            return None  # "credentials admin …": the word after is a user name
        if cls == "pin" and m.group("label") != m.group("label").upper():
            return None  # "pin numpy 1.26": a lower-case pin is a verb
    name, value, quoted = _value_of(m)
    start, end = (0, len(value)) if quoted else _span(value)
    value = value[start:end]
    if not quoted and form == "assign" and m.start() > 0 and m.string[m.start() - 1] in "?&":
        value = re.split(r"[&#]", value)[0]  # a URL query parameter ends at & or #
        end = start + len(value)
    if not _secret_like(value, form=form, cls=cls, quoted=quoted):
        return None
    whole = m.group(0)
    offset = m.start(name) - m.start()
    return whole[: offset + start] + f"[REDACTED:{kind}]" + whole[offset + end :]


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        n = int(char)
        if index % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


#: the first digits of a number issued by a card network (Visa, Mastercard, Amex, Diners, JCB, Discover,
#: UnionPay, Maestro); a Luhn-valid number that starts otherwise is an id, a timestamp, …
_CARD_PREFIX = re.compile(r"^(?:4|5[0-8]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|30[0-5]|3[5689]|6011|64[4-9]|65|62|63|67)")


def _card(m: re.Match) -> str | None:
    number = m.group(0)
    digits = re.sub(r"[ -]", "", number)
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits) or not _luhn(digits):
        return None
    separators = set(re.findall(r"[ -]", number))
    if len(separators) > 1:
        return None
    if separators and any(len(g) < 3 for g in re.split(r"[ -]", number)):
        return None  # "4 2 4 2 …" or "1-800-…": not how card numbers are written
    return "[REDACTED:card-number]"


def _url_password(m: re.Match) -> str | None:
    password = m.group("pw")
    if _RED in password or _PLACEHOLDER.match(password) or password.lower() in {"password", "pass", "pwd", "secret"}:
        return None
    if password.upper() == password and re.fullmatch(r"[A-Z_]+", password):  # postgres://USER:PASSWORD@HOST
        return None
    return m.group("keep") + "[REDACTED:url-password]"


#: the last part of a variable name that says its value is not the secret itself (AUTH_URL, TOKEN_TTL)
_NOT_SECRET_SUFFIX = re.compile(
    r"_(?:URL|URI|HOST|HOSTNAME|PORT|FILE|PATH|DIR|MODE|TYPE|PROVIDER|METHOD|ENABLED|DISABLED|TTL|TIMEOUT|EXPIRY|"
    r"EXPIRES|EXPIRATION|LENGTH|LEN|NAME|ID|REGION|ENDPOINT|HEADER|USER|USERNAME|ISSUER|AUDIENCE|SCOPE|SCOPES|"
    r"VERSION|LIMIT|COUNT|SIZE|MAX|MIN|FORMAT|ALGORITHM|ALG|PREFIX|FIELD|COOKIE_NAME|STRATEGY|BACKEND|DOMAIN)$"
)


def _env_secret(m: re.Match) -> str | None:
    name = m.group("name")
    if _NOT_SECRET_SUFFIX.search(name):
        return None
    _, value, quoted = _value_of(m)
    value = value if quoted else _trim(value)
    if _not_a_value(value) or (value.isdigit() and len(value) < 8) or len(value) < 4:
        return None
    if value.lower() in {"true", "false", "yes", "no", "on", "off", "none", "null", "enabled", "disabled"}:
        return None
    if not re.search(r"PASS|PWD|PW|SECRET|TOKEN|KEY", name) and not _secret_like(
        value, form="is", cls="key", quoted=False
    ):
        return None  # AUTH_…, CREDENTIALS_…: a plain word there is a setting, not a secret
    return _replace_value(m, "env-secret")


def _always(kind: str) -> Callable[[re.Match], str | None]:
    """Redact the value whatever it looks like, unless it is a placeholder or already redacted."""

    def replace(m: re.Match) -> str | None:
        _, value, quoted = _value_of(m)
        value = value if quoted else _trim(value)
        if len(value) < 3 or _RED in value or _PLACEHOLDER.match(value) or value.startswith("-"):
            return None
        return _replace_value(m, kind)

    return replace


def _checked(kind: str, form: str, cls: str = "password") -> Callable[[re.Match], str | None]:
    """Redact the value when it looks like a secret in that form."""

    def replace(m: re.Match) -> str | None:
        _, value, quoted = _value_of(m)
        value = value if quoted else _trim(value)
        if value.startswith("-") or not _secret_like(value, form=form, cls=cls, quoted=quoted):
            return None
        return _replace_value(m, kind)

    return replace


def _flag(m: re.Match) -> str | None:
    if m.group("flag").lower().startswith(("no-", "without-", "skip-", "ask-", "prompt-")):
        return None
    form = "assign" if m.group("sep").strip() == "=" else "is"
    return _checked("cli-password", form, "key" if re.search(r"(?i)token|key|secret", m.group("flag")) else "password")(m)


def _user_colon_password(m: re.Match) -> str | None:
    start, end = _span(m.group("pw"))
    password = m.group("pw")[start:end]
    if not password or password.isdigit() or _RED in password or _PLACEHOLDER.match(password):
        return None  # docker run -u 1000:1000
    return m.group("keep") + m.group("pw")[:start] + "[REDACTED:cli-password]" + m.group("pw")[end:]


def _htpasswd(m: re.Match) -> str | None:
    flags = "".join(m.group("flags").replace("-", "").split())
    if "b" not in flags:
        return None
    args = m.group("args").split()
    needed = 2 if "n" in flags else 3  # -n prints instead of writing a file: no file argument
    if len(args) < needed or any(_RED in arg or arg.startswith("-") for arg in args[:needed]):
        return None
    password = args[needed - 1]
    whole = m.group(0)
    offset = m.start("args") - m.start()
    position = offset
    for arg in args[: needed - 1]:
        position = whole.index(arg, position) + len(arg)
    start = whole.index(password, position)
    clean = password.strip("'\"")
    start += password.index(clean)
    return whole[:start] + "[REDACTED:cli-password]" + whole[start + len(clean):]


def _pgpass(m: re.Match) -> str | None:
    if m.group("db").isdigit():
        return None  # file:12:5:… is a compiler position, not a .pgpass line
    start, end = _span(m.group("v"))
    value = m.group("v")[start:end]
    if re.fullmatch(r"[0-9a-fA-F:.]*", value) or _not_a_value(value):
        return None  # an IPv6 address, a MAC address
    return m.group("keep") + m.group("v")[:start] + "[REDACTED:pgpass]" + m.group("v")[end:]


#: a rule: its name, its pattern, the handler that returns the match's replacement (None: leave it),
#: and trigger strings: the rule runs only when one of them is in the lower-cased text
_Rule = tuple[str, "re.Pattern[str]", Callable[[re.Match], "str | None"], tuple[str, ...]]

_CMD_END = r"[^\n|;&]{0,300}?"

_RULES: list[_Rule] = [
    (
        "url-password",
        re.compile(r"(?P<keep>(?<=://)[^/\s:@]{0,100}:)(?P<pw>[^/\s@]{1,200})(?=@)"),
        _url_password,
        ("://",),
    ),
    (
        "connection-string",
        # ADO.NET / ODBC / JDBC key=value;… strings: the value runs to the next ";" ({…} may hold one)
        re.compile(r"(?i)(?<![A-Za-z0-9_])(?P<keep>(?:password|pwd|passwd)\s*=\s*)(?P<v>\{[^}\n]{1,200}\}|[^;\s\"'{][^;\s\"']{0,200})(?=;)"),
        _always("password"),
        ("pwd", "passw"),
    ),
    (
        "netrc",
        re.compile(r"(?i)(?P<keep>\b(?:machine\s+\S{1,200}|default)(?:\s+(?:login|account)\s+\S{1,200}){0,2}\s+password\s+)" + _VALUE),
        _always("password"),
        ("machine", "default"),
    ),
    (
        "pgpass",
        re.compile(r"(?m)(?<![^\s\"'`(])(?P<keep>[\w.*-]{1,200}:(?:\d{1,5}|\*):(?P<db>[\w.*-]{1,200}):[\w.@*-]{1,200}:)(?P<v>[^\s\"'`]{1,200})"),
        _pgpass,
        (":",),
    ),
    (
        "mysql-password",
        re.compile(r"(?i)(?P<keep>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb(?:-dump)?)\b" + _CMD_END + r"\s-p)" + _VALUE),
        _always("cli-password"),
        ("mysql", "mariadb"),
    ),
    (
        "cli-flag",
        re.compile(
            r"(?i)(?P<keep>(?<![\w-])--?(?P<flag>[a-z0-9-]{0,30}?(?:password|passwd|passphrase|pass|pwd|pw|token|secret|api-?key|access-key|secret-key|auth-key|storepass|keypass))(?P<sep>=|[ \t]+))"
            + _VALUE
        ),
        _flag,
        ("-",),
    ),
    (
        "user-colon-password",
        re.compile(r"(?P<keep>(?<![\w-])(?:-u|--user|-a|--auth)(?:=|[ \t]+)['\"]?[^\s:'\"\[\]]{1,100}:)(?P<pw>[^\s'\"]{1,200})"),
        _user_colon_password,
        ("-u", "--user", "-a", "--auth"),
    ),
    (
        "login-password-flag",
        # -p is a password only for these commands (elsewhere it is a port, a plugin, "parents", …)
        re.compile(
            r"(?i)(?P<keep>\b(?:sshpass|(?:docker|podman|buildah|skopeo|nerdctl|oc|helm\s+registry)\s+login)\b" + _CMD_END + r"\s-p[ \t]+)" + _VALUE
        ),
        _always("cli-password"),
        ("sshpass", "login"),
    ),
    (
        "ssh-keygen-passphrase",
        re.compile(r"(?P<keep>\bssh-keygen\b" + _CMD_END + r"\s-[NP][ \t]+)" + _VALUE),
        _always("passphrase"),
        ("ssh-keygen",),
    ),
    (
        "htpasswd",
        re.compile(r"\bhtpasswd(?P<flags>(?:[ \t]+-[A-Za-z]{1,6}){1,4})(?P<args>(?:[ \t]+[^\s|;&]{1,200}){1,3})"),
        _htpasswd,
        ("htpasswd",),
    ),
    (
        "piped-password",
        re.compile(r"(?P<keep>\b(?:echo|printf)(?:[ \t]+-[ne]{1,2})?[ \t]+(?:'%s\\?n?'[ \t]+)?)" + _VALUE + r"(?=[ \t]*\|[^\n]{0,200}?--password-stdin)"),
        _always("cli-password"),
        ("--password-stdin",),
    ),
    (
        "login-pair",
        # "login as admin / V", "credentials are admin/V", "creds: bot / V", "login: admin:V"
        re.compile(
            r"(?i)(?P<keep>(?<![\w-])(?:log(?:-|\s)?in|sign(?:-|\s)?in|credentials|creds|user(?:name)?|account)(?![\w-])"
            r"(?:\s+(?:as|is|are|was|were|with))?(?:[ \t]*[:=][ \t]*|[ \t]+)[\"'`]?[\w.@+-]{1,64}[\"'`]?(?:[ \t]*/[ \t]*|:(?=\S)))"
            + _VALUE
        ),
        _checked("password", "is"),
        ("log", "sign", "cred", "user", "account"),
    ),
    (
        "user-pass",
        # "user alice pass V", "username: bob, pw V"
        re.compile(
            r"(?i)(?P<keep>(?<![\w-])user(?:name)?[ \t]*[:=]?[ \t]*[\"'`]?[\w.@+-]{1,64}[\"'`]?[ \t]*[,;]?[ \t]+(?:and[ \t]+)?"
            r"(?:pass|passwd|pwd|pw)(?![A-Za-z0-9])[ \t]*[:=]?[ \t]*)" + _VALUE
        ),
        _checked("password", "is"),
        ("user",),
    ),
    (
        "use-as-password",
        # "use V as the password", "with V as the token"
        re.compile(
            r"(?i)(?P<keep>\b(?:use|using|try|with|enter|type)[ \t]+)" + _VALUE
            + r"(?=[ \t]+as[ \t]+(?:(?:the|a|an|my|our|your)[ \t]+)?(?:[\w-]{1,30}[ \t]+)?(?:password|passphrase|passcode|pin|token|api[ _-]?key|secret)\b)"
        ),
        _checked("password", "is"),
        (" as ",),
    ),
    (
        "env-secret",
        re.compile(
            # PASSWORD, PASSWD and SECRET anywhere in the name (PGPASSWORD); the shorter words only as
            # a part of it between underscores (GITHUB_TOKEN, MYSQL_PWD; not TOKENIZER, COMPASS, AUTHOR)
            r"(?P<keep>(?<![A-Za-z0-9_])(?P<name>[A-Z0-9_]{0,60}(?:PASSWORD|PASSWD|SECRET)[A-Z0-9_]{0,60}"
            r"|(?:[A-Z0-9]{1,30}_){0,5}(?:TOKENS?|API_?KEY|APIKEY|ACCESS_?KEY|PRIVATE_?KEY|PASS|PWD|PW|CREDENTIALS?|AUTH)"
            r"(?:_[A-Z0-9]{1,30}){0,5})(?![A-Za-z0-9_])[ \t]*=[ \t]*)" + _VALUE
        ),
        _env_secret,
        ("=",),
    ),
    ("password", _LABELLED, _labelled, ("pass", "pw", "pin", "cvv", "cvc", "security", "token", "key", "secret", "cred")),
    ("card-number", re.compile(r"(?<![\w.+-])\d(?:[ -]?\d){12,18}(?![\w-]|\.\d)"), _card, ()),
]

# ---------------------------------------------------------------- layer 3: detect-secrets

#: detect-secrets plugins not used: a public IP address is not a secret
_SKIPPED_PLUGINS = {"IPPublicDetector"}
_KEYWORDS = ("key", "pw", "pass", "token", "secret", "contras", "cloudant")
_RUN8 = re.compile(r"[\w+/=-]{8}")
_RUN24 = re.compile(r"[\w-]{24}")


class _Line:
    """What a line holds, worked out once and only when a plugin asks: lets `_detected_spans` skip
    the plugins that cannot match (each skip is exact: the plugin's own patterns need that feature)."""

    def __init__(self, line: str):
        self.line = line
        self.lower = line.lower()
        self._cache: dict[str, bool] = {}

    def has(self, feature: str) -> bool:
        if feature not in self._cache:
            line, lower = self.line, self.lower
            self._cache[feature] = {
                "keyword": lambda: any(word in lower for word in _KEYWORDS),
                "quote": lambda: "'" in line or '"' in line,
                "quote-or-backtick": lambda: "'" in line or '"' in line or "`" in line,
                "run8": lambda: bool(_RUN8.search(line)),
                "run24": lambda: bool(_RUN24.search(line)),
                "url-at": lambda: "://" in line and "@" in line,
                "slack": lambda: "xox" in lower or "slack" in lower,
                "npm": lambda: "_authtoken" in lower,
            }[feature]()
        return self._cache[feature]


#: per plugin, the features a line must have for the plugin to possibly match (all of them);
#: plugins not listed need a run of 8 token characters
_PLUGIN_NEEDS = {
    "KeywordDetector": ("keyword", "quote-or-backtick"),
    "CloudantDetector": ("keyword", "run24"),
    "IbmCloudIamDetector": ("keyword", "run24"),
    "IbmCosHmacDetector": ("keyword", "run24"),
    "SoftlayerDetector": ("keyword", "run24"),
    "AzureStorageKeyDetector": ("keyword",),
    "PrivateKeyDetector": ("keyword",),
    "NpmDetector": ("npm",),
    "Base64HighEntropyString": ("quote",),
    "HexHighEntropyString": ("quote",),
    "BasicAuthDetector": ("url-at",),
    "SlackDetector": ("slack",),
}
_HASH_CONTEXT = re.compile(r"(?i)sha|md5|hash|digest|checksum|commit|integrity|etag|\brev\b|revision|fingerprint")
_API_OBJECT_ID = re.compile(r"^(?:msg|toolu|srvtoolu|req|call|resp|chatcmpl|run|thread|asst|batch)[_-][A-Za-z0-9]{10,40}$")
_TOKEN_EDGE = re.compile(r"[\s\"'`<>()\[\]{},;=:]")


@lru_cache(maxsize=1)
def _plugins() -> tuple:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:  # pragma: no cover - a declared dependency; layers 1 and 2 still run
        return ()
    return tuple(
        (cls(), _PLUGIN_NEEDS.get(cls.__name__, ("run8",)))
        for cls in get_mapping_from_secret_type_to_class().values()
        if cls.__name__ not in _SKIPPED_PLUGINS
    )


def _detected_spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each detect-secrets finding, widened to its whole token."""
    spans = []
    features = _Line(line)
    for plugin, needs in _plugins():
        if not all(features.has(feature) for feature in needs):
            continue
        try:
            findings = plugin.analyze_line(filename="memory.md", line=line, line_number=1)
        except Exception:  # noqa: BLE001 - one plugin's bug must not stop the others
            continue
        for finding in findings:
            value = finding.secret_value or ""
            if len(value) < 4 or _RED in value:
                continue
            kind = finding.type.lower().replace(" ", "-")
            if kind == "hex-high-entropy-string" and len(value) in (32, 40, 56, 64, 96, 128) and _HASH_CONTEXT.search(line):
                continue  # a commit id or a checksum, said to be one
            if kind == "base64-high-entropy-string" and _API_OBJECT_ID.match(value):
                continue  # a message, tool-call or request id in an agent transcript
            if kind == "secret-keyword" and _not_a_value(value):
                continue  # password = "REDACTED_API_KEY", token = "${TOKEN}"
            for match in re.finditer(re.escape(value), line):
                start, end = match.start(), match.end()
                while start > 0 and not _TOKEN_EDGE.match(line[start - 1]):
                    start -= 1
                while end < len(line) and not _TOKEN_EDGE.match(line[end]):
                    end += 1
                if _RED not in line[start:end] and not re.match(r"(?i)sha\d+-", line[start:end]):
                    spans.append((start, end, kind))
    return spans


def _redact_detected(text: str, found: list[str]) -> str:
    lines = text.split("\n")
    for number, line in enumerate(lines):
        spans = _detected_spans(line)
        if not spans:
            continue
        spans.sort()
        merged: list[list] = []
        for start, end, kind in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end, kind])
        for start, end, kind in reversed(merged):
            line = line[:start] + f"[REDACTED:{kind}]" + line[end:]
            found.append(kind)
        lines[number] = line
    return "\n".join(lines)


# ---------------------------------------------------------------- the public functions


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
    for _name, pattern, handler, triggers in _RULES:
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
    near = sorted({j for i, line in enumerate(lines) if _RED in line for j in (i - 1, i, i + 1) if 0 <= j < len(lines)})
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


def redact(text: str) -> tuple[str, list[str]]:
    """The text with secrets replaced, and the kinds of secret found (in order)."""
    found: list[str] = []
    for kind, pattern in _PATTERNS:
        keep = "keep" in pattern.groupindex
        text, count = pattern.subn(
            lambda m, keep=keep, kind=kind: (m.group("keep") if keep else "") + f"[REDACTED:{kind}]", text
        )
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
    return _redact_detected(text, found), found


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
