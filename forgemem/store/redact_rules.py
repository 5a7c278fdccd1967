"""The patterns of redaction's layers 1 (token shapes) and 2 (secrets in context), each with its handler."""

from __future__ import annotations

import re
from collections.abc import Callable

from forgemem.store.redact_values import (
    MARK_PREFIX,
    PLACEHOLDER,
    VALUE,
    not_a_value,
    secret_like,
    span,
    trim,
    value_of,
)

# ---------------------------------------------------------------- layer 1: token shapes

TOKEN_SHAPES: list[tuple[str, re.Pattern[str]]] = [
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
    ))""" + VALUE
)


def _replace_value(m: re.Match, kind: str) -> str:
    """The match with its value (trimmed when unquoted) replaced by the redaction mark."""
    name, value, quoted = value_of(m)
    start, end = (0, len(value)) if quoted else span(value)
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
    name, value, quoted = value_of(m)
    start, end = (0, len(value)) if quoted else span(value)
    value = value[start:end]
    if not quoted and form == "assign" and m.start() > 0 and m.string[m.start() - 1] in "?&":
        value = re.split(r"[&#]", value)[0]  # a URL query parameter ends at & or #
        end = start + len(value)
    if not secret_like(value, form=form, cls=cls, quoted=quoted):
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
    if MARK_PREFIX in password or PLACEHOLDER.match(password) or password.lower() in {"password", "pass", "pwd", "secret"}:
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
    _, value, quoted = value_of(m)
    value = value if quoted else trim(value)
    if not_a_value(value) or (value.isdigit() and len(value) < 8) or len(value) < 4:
        return None
    if value.lower() in {"true", "false", "yes", "no", "on", "off", "none", "null", "enabled", "disabled"}:
        return None
    if not re.search(r"PASS|PWD|PW|SECRET|TOKEN|KEY", name) and not secret_like(
        value, form="is", cls="key", quoted=False
    ):
        return None  # AUTH_…, CREDENTIALS_…: a plain word there is a setting, not a secret
    return _replace_value(m, "env-secret")


def _always(kind: str) -> Callable[[re.Match], str | None]:
    """Redact the value whatever it looks like, unless it is a placeholder or already redacted."""

    def replace(m: re.Match) -> str | None:
        _, value, quoted = value_of(m)
        value = value if quoted else trim(value)
        if len(value) < 3 or MARK_PREFIX in value or PLACEHOLDER.match(value) or value.startswith("-"):
            return None
        return _replace_value(m, kind)

    return replace


def _checked(kind: str, form: str, cls: str = "password") -> Callable[[re.Match], str | None]:
    """Redact the value when it looks like a secret in that form."""

    def replace(m: re.Match) -> str | None:
        _, value, quoted = value_of(m)
        value = value if quoted else trim(value)
        if value.startswith("-") or not secret_like(value, form=form, cls=cls, quoted=quoted):
            return None
        return _replace_value(m, kind)

    return replace


def _flag(m: re.Match) -> str | None:
    if m.group("flag").lower().startswith(("no-", "without-", "skip-", "ask-", "prompt-")):
        return None
    form = "assign" if m.group("sep").strip() == "=" else "is"
    return _checked("cli-password", form, "key" if re.search(r"(?i)token|key|secret", m.group("flag")) else "password")(m)


def _user_colon_password(m: re.Match) -> str | None:
    start, end = span(m.group("pw"))
    password = m.group("pw")[start:end]
    if not password or password.isdigit() or MARK_PREFIX in password or PLACEHOLDER.match(password):
        return None  # docker run -u 1000:1000
    return m.group("keep") + m.group("pw")[:start] + "[REDACTED:cli-password]" + m.group("pw")[end:]


def _htpasswd(m: re.Match) -> str | None:
    flags = "".join(m.group("flags").replace("-", "").split())
    if "b" not in flags:
        return None
    args = m.group("args").split()
    needed = 2 if "n" in flags else 3  # -n prints instead of writing a file: no file argument
    if len(args) < needed or any(MARK_PREFIX in arg or arg.startswith("-") for arg in args[:needed]):
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
    start, end = span(m.group("v"))
    value = m.group("v")[start:end]
    if re.fullmatch(r"[0-9a-fA-F:.]*", value) or not_a_value(value):
        return None  # an IPv6 address, a MAC address
    return m.group("keep") + m.group("v")[:start] + "[REDACTED:pgpass]" + m.group("v")[end:]


#: a rule: its name, its pattern, the handler that returns the match's replacement (None: leave it),
#: and trigger strings: the rule runs only when one of them is in the lower-cased text
_Rule = tuple[str, "re.Pattern[str]", Callable[[re.Match], "str | None"], tuple[str, ...]]

_CMD_END = r"[^\n|;&]{0,300}?"

RULES: list[_Rule] = [
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
        re.compile(r"(?i)(?P<keep>\b(?:machine\s+\S{1,200}|default)(?:\s+(?:login|account)\s+\S{1,200}){0,2}\s+password\s+)" + VALUE),
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
        re.compile(r"(?i)(?P<keep>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb(?:-dump)?)\b" + _CMD_END + r"\s-p)" + VALUE),
        _always("cli-password"),
        ("mysql", "mariadb"),
    ),
    (
        "cli-flag",
        re.compile(
            r"(?i)(?P<keep>(?<![\w-])--?(?P<flag>[a-z0-9-]{0,30}?(?:password|passwd|passphrase|pass|pwd|pw|token|secret|api-?key|access-key|secret-key|auth-key|storepass|keypass))(?P<sep>=|[ \t]+))"
            + VALUE
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
            r"(?i)(?P<keep>\b(?:sshpass|(?:docker|podman|buildah|skopeo|nerdctl|oc|helm\s+registry)\s+login)\b" + _CMD_END + r"\s-p[ \t]+)" + VALUE
        ),
        _always("cli-password"),
        ("sshpass", "login"),
    ),
    (
        "ssh-keygen-passphrase",
        re.compile(r"(?P<keep>\bssh-keygen\b" + _CMD_END + r"\s-[NP][ \t]+)" + VALUE),
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
        re.compile(r"(?P<keep>\b(?:echo|printf)(?:[ \t]+-[ne]{1,2})?[ \t]+(?:'%s\\?n?'[ \t]+)?)" + VALUE + r"(?=[ \t]*\|[^\n]{0,200}?--password-stdin)"),
        _always("cli-password"),
        ("--password-stdin",),
    ),
    (
        "login-pair",
        # "login as admin / V", "credentials are admin/V", "creds: bot / V", "login: admin:V"
        re.compile(
            r"(?i)(?P<keep>(?<![\w-])(?:log(?:-|\s)?in|sign(?:-|\s)?in|credentials|creds|user(?:name)?|account)(?![\w-])"
            r"(?:\s+(?:as|is|are|was|were|with))?(?:[ \t]*[:=][ \t]*|[ \t]+)[\"'`]?[\w.@+-]{1,64}[\"'`]?(?:[ \t]*/[ \t]*|:(?=\S)))"
            + VALUE
        ),
        _checked("password", "is"),
        ("log", "sign", "cred", "user", "account"),
    ),
    (
        "user-pass",
        # "user alice pass V", "username: bob, pw V"
        re.compile(
            r"(?i)(?P<keep>(?<![\w-])user(?:name)?[ \t]*[:=]?[ \t]*[\"'`]?[\w.@+-]{1,64}[\"'`]?[ \t]*[,;]?[ \t]+(?:and[ \t]+)?"
            r"(?:pass|passwd|pwd|pw)(?![A-Za-z0-9])[ \t]*[:=]?[ \t]*)" + VALUE
        ),
        _checked("password", "is"),
        ("user",),
    ),
    (
        "use-as-password",
        # "use V as the password", "with V as the token"
        re.compile(
            r"(?i)(?P<keep>\b(?:use|using|try|with|enter|type)[ \t]+)" + VALUE
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
            r"(?:_[A-Z0-9]{1,30}){0,5})(?![A-Za-z0-9_])[ \t]*=[ \t]*)" + VALUE
        ),
        _env_secret,
        ("=",),
    ),
    ("password", _LABELLED, _labelled, ("pass", "pw", "pin", "cvv", "cvc", "security", "token", "key", "secret", "cred")),
    ("card-number", re.compile(r"(?<![\w.+-])\d(?:[ -]?\d){12,18}(?![\w-]|\.\d)"), _card, ()),
]
