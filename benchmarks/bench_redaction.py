"""Secret redaction, before and after: what it catches, what it wrongly touches, how fast.

    .venv/bin/python benchmarks/bench_redaction.py [--old-commit 95622ec] [--skip-heldout] [--show]

Side by side, the redaction of an earlier commit (forgemem/secrets.py as `git show
<commit>:forgemem/secrets.py`, loaded as a module) and the current one:

1. shapes caught on the development corpus (tests/security/fixtures/secret_shapes.yaml
   plus tests/fixtures/secrets_corpus.yaml) and on the held-out corpus
   (secret_shapes_heldout.yaml, never tuned on); a shape is caught when neither the
   secret nor any 6+ character piece of it (that the sentence does not hold elsewhere)
   is left in the redacted text;
2. false positives: sentences of tests/security/fixtures/not_secrets.yaml changed at
   all; and on real text (../shared/eval, skipped when absent), the capture corpus's
   utterances and their context turns, and the turns of the real agent transcripts,
   and the turns of the LoCoMo conversations, that are changed although they hold no
   secret (the one planted secret in those corpora is AWS's documented example key,
   AKIAIOSFODNN7EXAMPLE; a text holding it counts as a hit, not a false positive);
3. speed: µs to redact one 200-character sentence (median and p95 over many sentences,
   built from the capture utterances), and ms for one 241 kB transcript.

--show prints every miss and every false positive.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "security" / "fixtures"
EVAL = ROOT.parent / "shared" / "eval"
EXAMPLE_KEY = "AKIAIOSFODNN7EXAMPLE"
MARK = re.compile(r"\[REDACTED:[\w-]+\]")


def old_module(commit: str) -> types.ModuleType:
    source = subprocess.run(
        ["git", "show", f"{commit}:forgemem/secrets.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType(f"secrets_{commit}")
    exec(compile(source, f"{commit}:forgemem/secrets.py", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


def secrets_of(case: dict) -> list[str]:
    secret = case["secret"]
    return [str(s) for s in secret] if isinstance(secret, list) else [str(secret)]


def leaked(case: dict, clean: str) -> bool:
    clean = MARK.sub("\0", clean)
    for secret in secrets_of(case):
        if secret in clean:
            return True
        surrounding = case["text"].replace(secret, "\0")
        for size in range(6, len(secret)):
            for start in range(len(secret) - size + 1):
                piece = secret[start : start + size]
                if piece not in surrounding and piece in clean:
                    return True
    return False


def caught(redact, cases: list[dict]) -> tuple[int, list[str]]:
    misses = [case for case in cases if leaked(case, redact(case["text"])[0])]
    return len(cases) - len(misses), [f"{c['kind']}: {redact(c['text'])[0]}" for c in misses]


def eval_texts() -> tuple[list[str], list[str]]:
    """(capture utterances and their context turns, real transcript turns); empty without ../shared/eval."""
    if not (EVAL / "capture").is_dir():
        return [], []
    rows = [json.loads(line) for line in (EVAL / "capture" / "utterances.jsonl").read_text().splitlines() if line]
    utterances = [row["text"] for row in rows] + [turn["text"] for row in rows for turn in row.get("context", [])]
    from forgemem.capture.transcripts import Turn, detect_format, read_all

    turns = []
    for path in sorted(EVAL.rglob("*")):
        if path.is_file() and path.suffix in (".jsonl", ".json", ".md") and path.parent.name != "eval":
            fmt = detect_format(path)
            if fmt is not None:
                turns += [event.text for event in read_all(path, fmt) if isinstance(event, Turn)]
    return utterances, turns


def locomo_turns() -> list[str]:
    """The turns of the LoCoMo conversations (everyday chat, full of dates, numbers and names)."""
    path = EVAL / "locomo" / "locomo_dev.json"
    if not path.is_file():
        return []
    return [
        turn["text"]
        for conversation in json.loads(path.read_text())
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def speed(redact, sentences: list[str], rounds: int = 5) -> tuple[float, float]:
    redact("warm up: password: hunter2-Blue")
    times = []
    for _ in range(rounds):
        for sentence in sentences:
            start = time.perf_counter()
            redact(sentence)
            times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times) * 1e6, times[int(len(times) * 0.95)] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-commit", default="95622ec")
    parser.add_argument("--skip-heldout", action="store_true", help="do not measure the held-out corpus")
    parser.add_argument("--show", action="store_true", help="print every miss and false positive")
    args = parser.parse_args()

    from forgemem.store import redact as new

    versions = {f"old ({args.old_commit})": old_module(args.old_commit).redact, "new": new.redact}
    dev = yaml.safe_load((FIXTURES / "secret_shapes.yaml").read_text()) + yaml.safe_load(
        (ROOT / "tests" / "fixtures" / "secrets_corpus.yaml").read_text()
    )
    heldout = [] if args.skip_heldout else yaml.safe_load((FIXTURES / "secret_shapes_heldout.yaml").read_text())
    prose = yaml.safe_load((FIXTURES / "not_secrets.yaml").read_text())
    utterances, turns = eval_texts()
    chat = locomo_turns()
    sentences = [((t + " ") * (200 // max(1, len(t)) + 1))[:200] for t in (utterances or prose)][:400]
    big = EVAL / "transcripts" / "aider" / "aider-ai-aider" / "chat-history.bytes-0-241120.md"

    rows: list[tuple[str, dict[str, str]]] = []
    details: dict[str, list[str]] = {}

    def row(label: str, values: dict[str, str]) -> None:
        rows.append((label, values))

    results: dict[str, dict] = {name: {} for name in versions}
    for name, redact in versions.items():
        r = results[name]
        r["dev"], details[f"{name} dev misses"] = caught(redact, dev)
        if heldout:
            r["heldout"], details[f"{name} held-out misses"] = caught(redact, heldout)
        fp = [clean for clean, text in ((redact(t)[0], t) for t in prose) if clean != text]
        r["prose"], details[f"{name} not_secrets false positives"] = len(fp), fp
        if utterances:
            for key, texts in (("utterances", utterances), ("turns", turns), ("locomo", chat)):
                hits = [(text, clean) for text, clean in ((t, redact(t)[0]) for t in texts) if clean != text]
                false = [clean for text, clean in hits if EXAMPLE_KEY not in text]
                r[key], r[f"{key}-fp"] = len(hits), len(false)
                details[f"{name} {key}: false positives"] = false
        r["speed"] = speed(redact, sentences)
        if big.is_file():
            text = big.read_text()
            start = time.perf_counter()
            redact(text)
            r["big"] = (time.perf_counter() - start) * 1e3

    names = list(versions)
    row("development shapes caught", {n: f"{results[n]['dev']}/{len(dev)}" for n in names})
    if heldout:
        row("held-out shapes caught", {n: f"{results[n]['heldout']}/{len(heldout)}" for n in names})
    row("not_secrets.yaml changed (false positives)", {n: f"{results[n]['prose']}/{len(prose)}" for n in names})
    if utterances:
        row(
            f"capture utterances+context changed / false positives (of {len(utterances)})",
            {n: f"{results[n]['utterances']} / {results[n]['utterances-fp']}" for n in names},
        )
        row(
            f"real transcript turns changed / false positives (of {len(turns)})",
            {n: f"{results[n]['turns']} / {results[n]['turns-fp']}" for n in names},
        )
    if chat:
        row(
            f"LoCoMo chat turns changed / false positives (of {len(chat)})",
            {n: f"{results[n]['locomo']} / {results[n]['locomo-fp']}" for n in names},
        )
    row(
        "µs per 200-char sentence, median (p95)",
        {n: f"{results[n]['speed'][0]:.0f} ({results[n]['speed'][1]:.0f})" for n in names},
    )
    if "big" in results[names[-1]]:
        row("ms for the 241 kB aider transcript", {n: f"{results[n]['big']:.0f}" for n in names})

    width = max(len(label) for label, _ in rows) + 2
    print(f"{'':{width}}" + "".join(f"{n:>18}" for n in names))
    for label, values in rows:
        print(f"{label:{width}}" + "".join(f"{values[n]:>18}" for n in names))
    if not utterances:
        print("(../shared/eval is not here: no real-text figures)")
    if heldout:
        print(f"\nheld-out misses (new): {len(details['new held-out misses'])}")
        for line in details["new held-out misses"]:
            print("  -", line)
    if args.show:
        for title, lines in details.items():
            print(f"\n{title}: {len(lines)}")
            for line in lines:
                print("  -", line.replace("\n", "⏎")[:240])


if __name__ == "__main__":
    main()
