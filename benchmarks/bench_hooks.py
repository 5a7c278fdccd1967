"""The Claude Code UserPromptSubmit hook, end to end, as Claude Code runs it.

    python benchmarks/bench_hooks.py [SIZES...]      (default: 1000 10000)

For each size: a git project whose repo store holds the sample store's memories
plus N generated ones (benchmarks/bench_load.generate), a warm recall server on
a private socket, then `forgemem hook claude-code` run as a fresh process per
prompt with the documented JSON on stdin (20 development prompts, 5 chatter
prompts, each 3 times). Printed: process time p50/p95, how many prompts got a
block, injected tokens per prompt (counted with forgemem's tokenizer) against
the budget, beside `python -c pass`, `forgemem --version` and `forgemem recall`
(warm) in the same run, and `forgemem recall` again while 5 clients hold
connections to the server without finishing a request (stalled clients).
Those timed calls each use a session of their own (every call injects in full).

Then one agent session: the 20 development prompts in order with one session
id, each memory injected once per session (the default), beside the same
session with `hook_repeat_memories: true` (every relevant memory on every
prompt, as before): tokens injected in the session, blocks, hook p50.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_load import generate  # noqa: E402

PROMPTS = [
    "how do I run the tests?", "add a migration that adds a length column to berths",
    "which database migrations tool do we use?", "write a commit message for this change",
    "deploy this to production", "how should I log errors in the booking service?",
    "add a new admin page for staff to edit berth prices", "where do API routes live?",
    "fix the flaky test for double booking", "set up a background job to send reminder emails",
    "which linter and formatter do we use?", "how do I connect to the staging database?",
    "refactor the billing module into smaller functions", "add type hints to the booking service",
    "create a branch for ticket HAR-123", "how do we handle timestamps and time zones?",
    "search the code for where availability is computed", "push this branch",
    "write tests for the berth factory", "what should the answer format look like?",
]
CHATTER = ["hi", "thanks!", "ok", "continue", "make the button blue"]
REPEATS = 3


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run(command, env, cwd, stdin: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout


def stall(path: Path, count: int) -> list[socket.socket]:
    """`count` connections to the server that never finish a request (every other one sends half a line)."""
    conns = []
    for n in range(count):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(path))
        if n % 2:
            conn.sendall(b'{"op": "recall", "vers')
        conns.append(conn)
    return conns


def bench(n: int, base: Path) -> None:
    from forgemem.recall.context import count_tokens

    project = base / f"project-{n}"
    store = project / ".forge" / "memory"
    if not store.is_dir():
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        shutil.copytree(ROOT / "sample_memories" / "repo" / ".forge" / "memory", store)
        generate(store / "generated", n - sum(1 for _ in store.rglob("*.md")))
    home = base / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "FORGEMEM_SERVER": "on",
           "FORGEMEM_SERVER_SOCKET": str(base / f"server-{n}.sock"), "FORGEMEM_USER_DIR": str(home / "memory")}
    forgemem = [sys.executable, "-m", "forgemem"]
    print(f"\n== {sum(1 for _ in store.rglob('*.md')):,} memories")
    started = time.perf_counter()
    subprocess.run([*forgemem, "index"], env=env, cwd=project, check=True, capture_output=True)
    print(f"index build (once)            {time.perf_counter() - started:7.1f} s")
    # warm the server: the first hook calls start it and may be cut off at hook_timeout_ms
    calls = iter(range(1_000_000))
    event = lambda prompt, session=None: json.dumps({  # noqa: E731
        "session_id": session or f"bench-{next(calls)}", "transcript_path": str(base / "none.jsonl"), "cwd": str(project),
        "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    for _ in range(60):
        _, out = run([*forgemem, "hook", "claude-code"], env, project, event(PROMPTS[0]))
        if out:
            break
        time.sleep(1)
    hook_times, tokens, with_block, chatter_blocks = [], [], 0, 0
    for prompt in PROMPTS + CHATTER:
        for _ in range(REPEATS):
            seconds, out = run([*forgemem, "hook", "claude-code"], env, project, event(prompt))
            hook_times.append(seconds)
        if out:
            text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
            tokens.append(count_tokens(text))
            if prompt in CHATTER:
                chatter_blocks += 1
            else:
                with_block += 1
    session_rows = []
    config = home / "config.yaml"  # the user config sits beside the user store (FORGEMEM_USER_DIR)
    for label, repeat in (("repeat (before)", True), ("once per session", False)):
        config.write_text(f"memory:\n  hook_repeat_memories: {str(repeat).lower()}\n")
        session = f"session-{n}-{repeat}"
        session_tokens, blocks, times = 0, 0, []
        for prompt in PROMPTS:
            seconds, out = run([*forgemem, "hook", "claude-code"], env, project, event(prompt, session))
            times.append(seconds)
            if out:
                session_tokens += count_tokens(json.loads(out)["hookSpecificOutput"]["additionalContext"])
                blocks += 1
        session_rows.append((label, session_tokens, blocks, statistics.median(times)))
    config.unlink()
    recall_times = [run([*forgemem, "recall", "--json", p], env, project)[0] for p in PROMPTS[:10]]
    stalled_times = []
    for prompt in PROMPTS[:10]:  # 5 fresh stalled connections before each recall (the server drops them after 2 s)
        stalled = stall(Path(env["FORGEMEM_SERVER_SOCKET"]), 5)
        try:
            stalled_times.append(run([*forgemem, "recall", "--json", prompt], env, project)[0])
        finally:
            for conn in stalled:
                conn.close()
    version_times = [run([*forgemem, "--version"], env, project)[0] for _ in range(10)]
    python_times = [run([sys.executable, "-c", "pass"], env, project)[0] for _ in range(10)]
    subprocess.run([*forgemem, "serve", "--stop"], env=env, capture_output=True)

    def row(label, values):
        print(f"{label:30} p50 {1000 * statistics.median(values):6.0f} ms   p95 {1000 * pct(values, 0.95):6.0f} ms")

    row("hook claude-code (warm)", hook_times)
    row("forgemem recall (warm)", recall_times)
    row("  ... with 5 stalled clients", stalled_times)
    row("forgemem --version", version_times)
    row("python -c pass", python_times)
    print(f"blocks injected: {with_block} of {len(PROMPTS)} development prompts, {chatter_blocks} of "
          f"{len(CHATTER)} chatter prompts")
    if tokens:
        print(f"tokens per injected block: mean {statistics.mean(tokens):.0f}, max {max(tokens)} "
              f"(budget 1500)")
    print(f"one session of {len(PROMPTS)} development prompts:")
    for label, session_tokens, blocks, p50 in session_rows:
        print(f"  {label:18} {session_tokens:6d} tokens injected, {blocks:2d} blocks, hook p50 {1000 * p50:4.0f} ms")


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            bench(n, Path(tmp))


if __name__ == "__main__":
    main()
