"""Secret redaction (forgemem/secrets.py): what must vanish, what must stay, and where it ends up.

Corpora, in tests/security/fixtures/:
- secret_shapes.yaml (+ tests/fixtures/secrets_corpus.yaml): the development shapes;
- secret_shapes_heldout.yaml: written before the redaction was widened and never tuned on;
  its known misses are listed in HELDOUT_MISSES (xfail, strict: a fix must remove the entry);
- not_secrets.yaml: prose about passwords, tokens, keys, hashes and numbers with no secret in it.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

import pytest
import yaml

from forgemem.store.redact import redact, redact_value
from forgemem.workspace import Workspace, init_forge_dir

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval"


def load(path: Path) -> list:
    return yaml.safe_load(path.read_text())


def secrets_of(case: dict) -> list[str]:
    secret = case["secret"]
    return [str(s) for s in secret] if isinstance(secret, list) else [str(secret)]


DEV = load(FIXTURES / "secret_shapes.yaml") + load(HERE.parent / "fixtures" / "secrets_corpus.yaml")
HELDOUT = load(FIXTURES / "secret_shapes_heldout.yaml")
NOT_SECRETS = load(FIXTURES / "not_secrets.yaml")

#: held-out shapes the redaction misses. Measured once, after the rules were written: 22 of 34
#: caught. One of the 12 misses was a bug (a quoted value with "(" in it was taken for a function
#: call: `"password": "Sv(Pa55)word"`), fixed afterwards with a development shape of its own; the
#: 11 below are phrasings and commands the rules do not know. They stay strict xfails, so a rule
#: that catches one shows up here; adding a rule for them spends that part of the held-out set.
HELDOUT_MISSES: dict[str, str] = {
    "password changed to": "'X was changed to V': no rule for set/changed/reset … to V",
    "set the password to": "'set the X password to V': no rule for set/changed/reset … to V",
    "changed my password to": "'changed my X password to V': no rule for set/changed/reset … to V",
    "redis-cli -a": "redis-cli -a is not among the commands whose flag takes a password",
    "az login -p": "az login is not among the commands whose -p takes a password",
    "ldapsearch -w": "ldapsearch -w is not among the commands whose flag takes a password",
    "vault unseal key": "'unseal key' is not a label",
    "totp seed": "'TOTP seed' is not a label",
    "quoted multi-word passphrase": "'the passphrase we use for backups is': a relative clause between label and 'is'",
    "backticked unlock value": "'use V to unlock …': no label at all",
    "smtp creds are X and Y": "'creds are USER and V': only USER/V and USER:V pairs are known",
}


def leaks(case: dict, clean: str) -> list[str]:
    """The secret, or any 6+ character piece of it that the sentence does not also hold elsewhere."""
    found = []
    text = case["text"]
    clean = re.sub(r"\[REDACTED:[\w-]+\]", "\0", clean)  # "github" in [REDACTED:github-token] is no leak
    for secret in secrets_of(case):
        if secret in clean:
            found.append(secret)
            continue
        surrounding = text.replace(secret, "\0")
        for size in range(6, len(secret)):
            for start in range(len(secret) - size + 1):
                piece = secret[start : start + size]
                if piece not in surrounding and piece in clean:
                    found.append(piece)
    return found


def case_id(case: dict) -> str:
    return case["kind"]


# ------------------------------------------------------------------ shapes that must vanish


def test_the_corpora_are_what_they_say():
    assert len(load(FIXTURES / "secret_shapes.yaml")) >= 60
    assert len(HELDOUT) >= 25
    assert len(NOT_SECRETS) >= 40
    for case in DEV + HELDOUT:
        for secret in secrets_of(case):
            assert secret in case["text"], case["kind"]
    assert len({c["kind"] for c in DEV}) == len(DEV), "kinds are the test ids: keep them unique"
    assert len({c["kind"] for c in HELDOUT}) == len(HELDOUT)


@pytest.mark.parametrize("case", DEV, ids=case_id)
def test_every_development_shape_is_redacted(case):
    clean, kinds = redact(case["text"])
    assert leaks(case, clean) == []
    assert kinds and "[REDACTED:" in clean


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=HELDOUT_MISSES[c["kind"]]))
        if c["kind"] in HELDOUT_MISSES
        else c
        for c in HELDOUT
    ],
    ids=case_id,
)
def test_every_heldout_shape_is_redacted(case):
    clean, kinds = redact(case["text"])
    assert leaks(case, clean) == []
    assert kinds and "[REDACTED:" in clean


@pytest.mark.parametrize(
    "text, expected",
    [
        ("the deploy password is hunter2-Blue", "the deploy password is [REDACTED:password]"),
        ("Password is `hunter2`, it's only the dev box.", "Password is `[REDACTED:password]`, it's only the dev box."),
        ("login as admin / S3cretPw", "login as admin / [REDACTED:password]"),
        ("mysql -u root -pSecret123 db", "mysql -u root -p[REDACTED:cli-password] db"),
        ("curl -u alice:pw123 https://x.example", "curl -u alice:[REDACTED:cli-password] https://x.example"),
        ("the cache is redis://:R3disPw9@cache:6379", "the cache is redis://:[REDACTED:url-password]@cache:6379"),
        ("my card is 4242-4242-4242-4242.", "my card is [REDACTED:card-number]."),
        ("the SIM PIN is 8245.", "the SIM PIN is [REDACTED:pin]."),
    ],
)
def test_the_label_and_the_sentence_around_a_secret_stay(text, expected):
    assert redact(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "my card is 4242 4242 4242 4241",  # fails the Luhn check
        "ticket 1234 5678 9012 3456 is closed",  # Luhn-valid? no; and no card network starts with 1
        "docker run -u 1000:1000 app",  # a uid:gid, not user:password
        "the password is P",  # too short to be one
    ],
)
def test_near_misses_stay(text):
    assert redact(text) == (text, [])


# ------------------------------------------------------------------ text that must stay


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_prose_without_a_secret_is_unchanged(text):
    assert redact(text) == (text, [])


@pytest.mark.parametrize("text", [c["text"] for c in DEV + HELDOUT] + NOT_SECRETS)
def test_redacting_twice_is_redacting_once(text):
    once, _ = redact(text)
    twice, kinds = redact(once)
    assert twice == once and kinds == []


def test_redact_value_walks_nested_dicts_and_lists():
    value = {
        "transcript": "/tmp/t.jsonl",
        "lines": "12-14",
        "quote": "the deploy password is hunter2-Blue",
        "turns": [
            {"role": "user", "text": "mysql -u root -pSecret123 db"},
            ["curl -u alice:pw123 https://x.example", 42, None],
        ],
        "count": 3,
    }
    clean, kinds = redact_value(value)
    assert clean["transcript"] == "/tmp/t.jsonl" and clean["lines"] == "12-14" and clean["count"] == 3
    assert clean["quote"] == "the deploy password is [REDACTED:password]"
    assert clean["turns"][0] == {"role": "user", "text": "mysql -u root -p[REDACTED:cli-password] db"}
    assert clean["turns"][1][1:] == [42, None]
    dumped = json.dumps(clean)
    for secret in ("hunter2-Blue", "Secret123", "pw123"):
        assert secret not in dumped
    assert sorted(kinds) == ["cli-password", "cli-password", "password"]
    assert value["quote"].endswith("hunter2-Blue"), "the input is not changed in place"


# ------------------------------------------------------------------ where a secret could land


def test_a_memory_with_a_password_has_none_of_it_in_its_file_name_or_file(tmp_path):
    init_forge_dir(tmp_path / "project" / ".forge")
    init_forge_dir(tmp_path / "home" / ".forge")
    workspace = Workspace.open(
        cwd=tmp_path, repo_dir=tmp_path / "project/.forge/memory", user_dir=tmp_path / "home/.forge/memory"
    )
    password = "Zebra7-Quartz"
    memory, kinds = workspace.add(
        f"The deploy password is {password} for staging",
        category="project-conventions",
        source={"transcript": "/tmp/t.jsonl", "quote": f"the deploy password is {password}"},
    )
    assert kinds == ["password", "password"]
    files = [p for p in (tmp_path / "project/.forge/memory").rglob("*.md")]
    assert len(files) == 1
    name = files[0].name.lower()
    assert "deploy-password" in name  # the slug is made from the redacted text
    for piece in ("zebra", "quartz", "zebra7"):
        assert piece not in name
    content = files[0].read_text()
    assert password not in content and "Zebra" not in content and "Quartz" not in content
    assert "[REDACTED:password]" in content


# ------------------------------------------------------------------ real text (../shared/eval)

real = pytest.mark.skipif(not (EVAL / "capture").is_dir(), reason="../shared/eval is not here")
#: the only secret in the eval corpora: AWS's documented example access key, there on purpose
EXAMPLE_KEY = "AKIAIOSFODNN7EXAMPLE"


@real
def test_capture_utterances_are_redacted_only_where_they_hold_a_secret():
    rows = [json.loads(line) for line in (EVAL / "capture" / "utterances.jsonl").read_text().splitlines() if line]
    texts = [row["text"] for row in rows] + [turn["text"] for row in rows for turn in row.get("context", [])]
    assert len(rows) >= 500
    changed = [text for text in texts if redact(text)[0] != text]
    assert changed == [text for text in texts if EXAMPLE_KEY in text]
    assert all(EXAMPLE_KEY not in redact(text)[0] for text in changed)


@real
def test_real_transcript_turns_are_redacted_only_where_they_hold_a_secret():
    from forgemem.capture.transcripts import Turn, detect_format, read_all

    turns = []
    for path in sorted(EVAL.rglob("*")):
        if path.is_file() and path.suffix in (".jsonl", ".json", ".md") and path.parent.name != "eval":
            fmt = detect_format(path)
            if fmt is not None:
                turns += [event.text for event in read_all(path, fmt) if isinstance(event, Turn)]
    assert len(turns) >= 200
    changed = [text for text in turns if redact(text)[0] != text]
    assert changed == [text for text in turns if EXAMPLE_KEY in text]


# ------------------------------------------------------------------ speed


def test_redaction_is_fast_and_linear():
    sentence = (
        "We deploy with the blue-green script; the staging password is in Vault and the token is "
        "refreshed hourly, so never paste either into chat or a ticket, and run the tests first. "
    )[:200]
    redact(sentence)
    times = []
    for _ in range(200):
        start = time.perf_counter()
        redact(sentence)
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.005  # measured ≈ 0.15 ms; generous for a busy machine
    for hostile in ("password " * 4000, "1 " * 10000, "--password " * 3000, "user a " * 4000, "a:" * 10000):
        start = time.perf_counter()
        redact(hostile)
        assert time.perf_counter() - start < 3, hostile[:20]
