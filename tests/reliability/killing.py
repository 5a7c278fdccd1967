"""Loops that SIGKILL real forgemem processes at random moments, and the checks made after them.

Used by tests/reliability/test_kills.py (small counts) and benchmarks/reliability_report.py (larger ones).
Every process is a real `python -m forgemem …` on a real store in a real git repository; a kill lands
after a random delay, so kills fall at different points of each command (start-up, reading, the lock,
the temporary file, the rename, the index, the socket).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

FORGEMEM = [sys.executable, "-m", "forgemem"]
TEMP = re.compile(r"^\..+\.tmp$")  # what atomic writes name their temporary files
STUCK_AFTER = 120.0  # seconds a command that follows a kill may take before it counts as stuck
CATEGORY = "project-conventions"


@dataclass
class Tally:
    operations: int = 0
    kills: int = 0
    lost: int = 0
    forks: int = 0
    stuck: int = 0
    leftovers: list[str] = field(default_factory=list)  # temporary files still there after a next command
    failures: list[str] = field(default_factory=list)  # what a check found (empty when all is well)

    def add(self, other: "Tally") -> None:
        for name in ("operations", "kills", "lost", "forks", "stuck"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.leftovers += other.leftovers
        self.failures += other.failures

    def line(self, what: str = "kill -9") -> str:
        return (f"{what}: {self.operations} operations, {self.kills} kills, lost {self.lost}, forks {self.forks}, "
                f"stuck {self.stuck}, temporary files left {len(self.leftovers)}")


class Project:
    """A git repository with a repo store, and a private HOME, driven through real CLI processes."""

    def __init__(self, root: Path, home: Path, seed: int):
        self.root, self.home = root, home
        self.rng = random.Random(seed)
        self.tally = Tally()
        self.env = {**os.environ, "HOME": str(home), "FORGEMEM_USER_DIR": str(home / ".forge" / "memory"),
                    "FORGEMEM_SERVER": "off", "FORGEMEM_SERVER_SOCKET": str(home / "recall.sock")}
        self.env.pop("FORGEMEM_REPO_DIR", None)
        self.added: dict[str, str | None] = {}  # id printed by an add (killed or not) -> its text (None: unknown)
        self.linked: set[tuple[str, str, str]] = set()  # (source, target, relationship) a link printed
        for folder in (root, home):
            folder.mkdir(parents=True, exist_ok=True)
        git = ["git", "-C", str(root)]
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
        self.must("init")

    # ------------------------------------------------------------ processes

    def start(self, *args: str) -> subprocess.Popen:
        env = dict(self.env, FORGEMEM_SERVER="on") if args[0] == "serve" else self.env  # off: serve exits at once
        return subprocess.Popen([*FORGEMEM, *args], cwd=self.root, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        """A command that must finish: one that does not within STUCK_AFTER is counted stuck (and killed)."""
        self.tally.operations += 1
        proc = self.start(*args)
        try:
            out, err = proc.communicate(timeout=STUCK_AFTER)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            self.tally.stuck += 1
            self.tally.failures.append(f"stuck: forgemem {' '.join(args[:2])} did not finish in {STUCK_AFTER:.0f} s")
        return subprocess.CompletedProcess(args, proc.returncode, out, err)

    def must(self, *args: str) -> subprocess.CompletedProcess:
        done = self.run(*args)
        if done.returncode != 0:
            raise AssertionError(f"forgemem {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done

    def killed_at_random(self, args: list[str], longest: float) -> tuple[bool, subprocess.CompletedProcess]:
        """Run a command, SIGKILL it after a random delay up to `longest` s (unless it finished first)."""
        self.tally.operations += 1
        proc = self.start(*args)
        killed = False
        try:
            proc.wait(self.rng.uniform(0.0, longest))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            self.tally.kills += 1
        out, err = proc.communicate()
        if not killed and proc.returncode != 0 and "Traceback" in err:
            self.tally.failures.append(f"forgemem {' '.join(args[:2])}: a traceback: {err[-1500:]}")
        return killed, subprocess.CompletedProcess(args, proc.returncode, out, err)

    # ------------------------------------------------------------ checks

    def temp_files(self) -> list[str]:
        found = []
        for top in (self.root / ".forge", self.home / ".forge"):
            for folder, _dirs, files in os.walk(top):
                found += [os.path.join(folder, f) for f in files if TEMP.match(f)]
        return found

    def after_next_command(self, *args: str) -> subprocess.CompletedProcess:
        """Run the command that follows kills; then no temporary file may be left anywhere in the stores."""
        done = self.run(*args)
        left = self.temp_files()
        if left:
            self.tally.leftovers += left
            self.tally.failures.append(f"after forgemem {' '.join(args[:2])}: temporary files left: {left[:3]}")
        return done

    def check(self) -> Tally:
        """Everything printed is there and parses; one head per chain; validate is clean; no temp files."""
        from forgemem.workspace import Workspace

        self.after_next_command("add", f"Checkpoint write number {self.rng.random()}.", "-c", CATEGORY)
        validate = self.run("validate")
        if validate.returncode != 0:
            self.tally.failures.append(f"validate: {validate.stdout[-1500:]}{validate.stderr[-1500:]}")
        old = {k: os.environ.get(k) for k in ("HOME", "FORGEMEM_USER_DIR")}
        os.environ.update(HOME=self.env["HOME"], FORGEMEM_USER_DIR=self.env["FORGEMEM_USER_DIR"])
        try:
            snap = Workspace.open(cwd=self.root).load(cache=False)
        finally:
            for key, value in old.items():
                os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
        for memory_id, text in self.added.items():
            found = snap.graph.memories.get(memory_id)
            if found is None or (text is not None and found.body != text):
                self.tally.lost += 1
                self.tally.failures.append(f"lost: {memory_id} ({text!r})")
        for source, target, relationship in self.linked:
            found = snap.graph.memories.get(source)
            if found is None or not any(r.id == target and r.relationship == relationship for r in found.related):
                self.tally.lost += 1
                self.tally.failures.append(f"lost edge: {source} -> {target}")
        forks = snap.graph.forks()
        self.tally.forks += len(forks)
        if forks:
            self.tally.failures.append(f"forks: {forks}")
        if snap.problems:
            self.tally.failures.append(f"problems: {[p.message for p in snap.problems][:5]}")
        return self.tally

    # ------------------------------------------------------------ loops

    def add_loop(self, kills: int, longest: float = 0.5) -> None:
        """`add`, a third of them `add --supersedes` a memory already written, until `kills` kills."""
        target, n = self.tally.kills + kills, 0
        while self.tally.kills < target:
            n += 1
            text = f"Killed add number {n} (seed {self.rng.random():.6f}) about the build cache."
            args = ["add", text, "-c", CATEGORY]
            if self.added and n % 3 == 0:
                args += ["--supersedes", self.rng.choice(list(self.added))]
            killed, done = self.killed_at_random(args, longest)
            printed = re.match(r"(mem_[0-9a-f-]{36})\t.*\n", done.stdout)
            if printed:  # printed, even by a process killed right after: it must be there
                self.added[printed.group(1)] = text
            elif not killed and "already superseded" not in done.stderr:
                self.tally.failures.append(f"add refused: {done.stderr[-500:]}")
            if n % 25 == 0:
                self.after_next_command("add", f"Plain write after kills, {n}.", "-c", CATEGORY)

    def link_loop(self, kills: int, longest: float = 0.35) -> None:
        while len(self.added) < 12:
            text = f"Link target number {len(self.added)} about release tags."
            self.added[self.must("add", text, "-c", CATEGORY).stdout.split("\t")[0]] = text
        ids = list(self.added)
        target = self.tally.kills + kills
        while self.tally.kills < target:
            source, other = self.rng.sample(ids, 2)
            relationship = self.rng.choice(["refines", "relates-to", "contradicts"])
            killed, done = self.killed_at_random(["link", source, other, "--rel", relationship], longest)
            if not killed and done.returncode == 0:
                self.linked.add((source, other, relationship))
            elif not killed and "version" not in done.stderr:
                self.tally.failures.append(f"link refused: {done.stderr[-500:]}")

    def observe_loop(self, kills: int, longest: float = 1.5) -> None:
        """`observe --once --final` over a transcript that grows between runs."""
        transcript = self.home / "session.jsonl"
        target, n = self.tally.kills + kills, 0
        while self.tally.kills < target:
            n += 1
            with transcript.open("a", encoding="utf-8") as handle:
                handle.write(_exchange(n))
            killed, done = self.killed_at_random(["observe", "--once", "--final", "--json", str(transcript)], longest)
            if not killed and done.returncode == 0:
                for run in json.loads(done.stdout)["passes"]:
                    for memory in run["written"]:
                        self.added[memory["id"]] = None
        finished = self.run("observe", "--once", "--final", str(transcript))  # not stuck after the kills
        if finished.returncode != 0:
            self.tally.failures.append(f"observe after kills: {finished.stderr[-1500:]}")

    def index_loop(self, kills: int, longest: float = 2.0) -> None:
        target = self.tally.kills + kills
        while self.tally.kills < target:
            self.killed_at_random(["index", "--rebuild"], longest)
            if self.tally.kills % 5 == 0:
                recall = self.after_next_command("recall", "--json", "build cache")
                if recall.returncode != 0 or "Traceback" in recall.stderr:
                    self.tally.failures.append(f"recall after a killed rebuild: {recall.stderr[-1500:]}")

    def serve_loop(self, kills: int, longest: float = 2.0) -> None:
        target = self.tally.kills + kills
        while self.tally.kills < target:
            self.killed_at_random(["serve", "--idle-timeout", "30"], longest)
        server = self.start("serve", "--idle-timeout", "60")  # the next server starts: no stale socket or pid
        self.tally.operations += 1
        try:
            deadline = time.monotonic() + STUCK_AFTER
            while self.run("serve", "--status").returncode != 0:
                if server.poll() is not None or time.monotonic() > deadline:
                    self.tally.stuck += 1
                    self.tally.failures.append(f"serve after kills: {server.communicate()[1][-1500:]}")
                    return
                time.sleep(0.25)
            env = dict(self.env, FORGEMEM_SERVER="on")
            recall = subprocess.run([*FORGEMEM, "recall", "--json", "build cache"], cwd=self.root, env=env,
                                    capture_output=True, text=True, timeout=STUCK_AFTER)
            if recall.returncode != 0:
                self.tally.failures.append(f"recall through the server: {recall.stderr[-1500:]}")
            self.run("serve", "--stop")
            server.wait(STUCK_AFTER)
        finally:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGKILL)
                server.communicate()


def _exchange(n: int) -> str:
    user = {"type": "user", "sessionId": "kills", "message": {"role": "user", "content":
            f"From now on always run the linter number {n} before committing, never skip it."}}
    answer = {"type": "assistant", "sessionId": "kills", "message": {"id": f"m{n}", "role": "assistant",
              "content": [{"type": "text", "text": f"Understood, rule {n} noted."}]}}
    return json.dumps(user) + "\n" + json.dumps(answer) + "\n"
