"""How reading a transcript scales: the observer now, beside the baseline commit, in the same run.

    python benchmarks/bench_observer_scaling.py [--sizes 1000,2000,4000,8000] [--rss-mb 100]
                                                [--baseline 7c1b8e4] [--baseline-timeout 300]

The baseline is a `git worktree add` of the baseline commit in a temporary
folder (removed afterwards); each side runs in its own fresh process with its
own checkout first on `sys.path`, over the same transcript file, into its own
empty state. One run per size and side: `Observer.poll` over a Claude Code
transcript of N exchanges (a question, a tool call, its output, an answer;
about 2 KB each), cadence 5, so N/5 passes are recorded (not run: reading is
what is timed). Printed per size: seconds for each side, and seconds per 1,000
exchanges (flat when reading is linear).

Then peak RSS (VmHWM, sampled from /proc, and the process's own ru_maxrss when
it finishes) reading a transcript of about `--rss-mb` MB (10 KB tool outputs;
issue 12's target: under 400 MB on 100 MB), for each side; a side that has not
finished after `--baseline-timeout` seconds is stopped and its peak so far is
printed with "(stopped)".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, resource, subprocess, sys, time
from pathlib import Path
project, transcript = Path(sys.argv[1]), Path(sys.argv[2])
project.mkdir(parents=True)
subprocess.run(["git", "init", "-q", str(project)], check=True)
from forgemem.workspace import Workspace, init_forge_dir
init_forge_dir(project / ".forge")
from forgemem.capture.observer import Observer
observer = Observer(Workspace.open(cwd=project), [transcript], cadence=5)
started = time.perf_counter()
read = observer.poll(transcript)
seconds = time.perf_counter() - started
row = observer.state.transcript(str(transcript))
print(json.dumps({"seconds": seconds, "read": read, "humans": row["humans"], "offset": row["offset"],
                  "size": transcript.stat().st_size,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def exchange(n: int, output_chars: int) -> str:
    """One exchange as Claude Code writes it: the question, a tool call, its output, the answer."""
    sid = "bench-session"
    question = f"Request {n}: please look at module_{n % 97}.py and tell me why the parser fails on empty input."
    answer = f"Module {n % 97} returns None when the buffer is empty; I changed it to raise ValueError. " * 3
    output = (f"line {n}: " + "x" * 70 + "\n") * (output_chars // 80)
    lines = [
        {"type": "user", "sessionId": sid, "message": {"role": "user", "content": question}},
        {"type": "assistant", "sessionId": sid, "message": {"id": f"a{n}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"file_path": f"module_{n % 97}.py"}}]}},
        {"type": "user", "sessionId": sid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": output}]}, "toolUseResult": {"ok": True}},
        {"type": "assistant", "sessionId": sid, "message": {"id": f"b{n}", "role": "assistant", "content": [
            {"type": "text", "text": answer}]}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def write_transcript(path: Path, exchanges: int | None = None, megabytes: float | None = None,
                     output_chars: int = 1200) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        while (exchanges is not None and count < exchanges) or (
                megabytes is not None and handle.tell() < megabytes * 1024 * 1024):
            handle.write(exchange(count, output_chars))
            count += 1
    return count


def peak_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_side(code_root: Path, transcript: Path, work: Path, timeout: float) -> dict:
    """One reading in a fresh process with `code_root` first on sys.path."""
    project = work / f"project-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(code_root), "HOME": str(work / "home"),
           "FORGEMEM_USER_DIR": str(work / "home" / ".forge" / "memory"), "FORGEMEM_SERVER": "off"}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CHILD, str(project), str(transcript)], env=env, cwd=work,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while process.poll() is None:
        peak = max(peak, peak_kb(process.pid))
        if time.perf_counter() - started > timeout:
            process.kill()
            process.wait()
            return {"stopped": True, "seconds": time.perf_counter() - started, "rss_mb": peak / 1024}
        time.sleep(0.05)
    out, err = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{code_root}: exit {process.returncode}: {err[-2000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["rss_mb"] = max(result["rss_mb"], peak / 1024)
    result["stopped"] = False
    shutil.rmtree(project, ignore_errors=True)
    return result


def cell(result: dict) -> str:
    if result["stopped"]:
        return f">{result['seconds']:8.1f} s (stopped)"
    return f"{result['seconds']:9.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000")
    parser.add_argument("--rss-mb", type=float, default=100.0)
    parser.add_argument("--baseline", default="7c1b8e4")
    parser.add_argument("--baseline-timeout", type=float, default=300.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    work = Path(tempfile.mkdtemp(prefix="forgemem-bench-observer-"))
    baseline = work / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(baseline), args.baseline],
                   check=True)
    sides = {f"baseline {args.baseline}": baseline, "this checkout": ROOT}
    try:
        print(f"# reading N exchanges (Observer.poll, cadence 5), python {sys.version.split()[0]}")
        print(f"{'exchanges':>9} {'MB':>6} | " + " | ".join(f"{name:>26}" for name in sides)
              + " | " + " | ".join(f"{'s per 1K, ' + name.split()[0]:>20}" for name in sides))
        for n in sizes:
            transcript = work / f"t{n}.jsonl"
            write_transcript(transcript, exchanges=n)
            results = {name: run_side(root, transcript, work, args.baseline_timeout) for name, root in sides.items()}
            for name, r in results.items():
                if not r["stopped"] and r["humans"] != n:
                    raise RuntimeError(f"{name} read {r['humans']} exchanges of {n}")
            per_k = [f"{r['seconds'] / n * 1000:>20.3f}" for r in results.values()]
            print(f"{n:>9} {transcript.stat().st_size / 2**20:>6.1f} | "
                  + " | ".join(f"{cell(r):>26}" for r in results.values()) + " | " + " | ".join(per_k), flush=True)
            transcript.unlink()
        if args.rss_mb > 0:
            transcript = work / "big.jsonl"
            count = write_transcript(transcript, megabytes=args.rss_mb, output_chars=10_000)
            size = transcript.stat().st_size / 2**20
            print(f"\n# peak RSS reading one {size:.0f} MB transcript ({count:,} exchanges); target < 400 MB")
            for name, root in sides.items():
                r = run_side(root, transcript, work, args.baseline_timeout)
                done = "" if r["stopped"] else f", {r['humans']:,} exchanges read, offset at the end: " \
                                                f"{r['offset'] == r['size']}"
                print(f"{name:>26}: peak RSS {r['rss_mb']:7.0f} MB, {cell(r).strip()}{done}", flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
