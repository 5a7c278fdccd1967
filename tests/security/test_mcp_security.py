"""`forgemem mcp` under hostile input: malformed JSON-RPC gets an error and the server keeps serving;
bad tool arguments are tool errors; the connected model cannot write to the user's personal store
unless the user's own config allows it."""

from __future__ import annotations

import asyncio
import json
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ..conftest import SAMPLES

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client  # noqa: E402

from forgemem.agents.mcp import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_MESSAGE_BYTES,
    PARSE_ERROR,
    build_server,
    check_message,
)
from forgemem.store.folder import Store  # noqa: E402
from forgemem.workspace import Workspace  # noqa: E402

USER_MEMORY = "25f9dbc7"  # in-tests-use-pytest-mark-parametrize (user scope)
REPO_MEMORY = "9f7ab1bf"  # run-unit-tests-with-make-test (repo scope)
INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


# ------------------------------------------------------------------ the wire


class Pipe:
    """A `forgemem mcp` process; lines in, one reply line out at a time."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "forgemem", *args, "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self, timeout: float = 60) -> dict:
        line = self.lines.get(timeout=timeout)
        assert line, "the server stopped"
        return json.loads(line)

    def ask(self, message: dict | bytes) -> dict:
        self.send(message if isinstance(message, bytes) else json.dumps(message).encode())
        return self.reply()

    def close(self) -> int:
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=30)
        finally:
            self.process.kill()


@pytest.fixture
def samples(tmp_path) -> Path:
    shutil.copytree(SAMPLES, tmp_path / "samples")
    return tmp_path / "samples"


def test_malformed_lines_get_json_rpc_errors_and_the_server_keeps_serving(samples):
    pipe = Pipe("--repo-dir", str(samples / "repo/.forge/memory"), "--user-dir", str(samples / "user/.forge/memory"))
    try:
        def error(message) -> tuple:
            reply = pipe.ask(message)
            assert reply["jsonrpc"] == "2.0" and "result" not in reply
            return reply["id"], reply["error"]["code"]

        assert error(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"') == (None, PARSE_ERROR)
        assert error(b"\xff\xfe not utf-8") == (None, PARSE_ERROR)
        assert error(b"[" * 100_000) == (None, PARSE_ERROR)  # no RecursionError takes the server down
        assert error(b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]') == (None, INVALID_REQUEST)
        assert error(b"[]") == (None, INVALID_REQUEST)
        assert error(b'"just a string"') == (None, INVALID_REQUEST)
        assert error({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "notadict"}) == (3, INVALID_PARAMS)
        assert error({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": [1, 2]}) == (4, INVALID_PARAMS)
        assert error({"jsonrpc": "2.0", "id": 5}) == (5, INVALID_REQUEST)  # no method
        assert error({"jsonrpc": "2.0", "id": 6, "method": 42}) == (6, INVALID_REQUEST)
        assert error({"id": 7, "method": "ping"}) == (7, INVALID_REQUEST)  # no "jsonrpc": "2.0"
        assert error({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}) == (None, INVALID_REQUEST)
        huge = {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                "params": {"name": "recall", "arguments": {"query": "x" * MAX_MESSAGE_BYTES}}}
        assert error(huge) == (None, INVALID_REQUEST)
        pipe.send(b"")  # a blank line is no message: no reply

        assert pipe.ask(INITIALIZE)["result"]["serverInfo"]["name"] == "forgemem"
        pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        assert error({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": "x"}) == (9, INVALID_PARAMS)
        reply = pipe.ask({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                          "params": {"name": "show", "arguments": {"id": REPO_MEMORY}}})
        assert reply["id"] == 10 and not reply["result"].get("isError")
        assert json.loads(reply["result"]["content"][0]["text"])["id"].startswith("mem_" + REPO_MEMORY)
        # arguments the tool rejects: a tool error naming what is allowed, the connection stays up
        reply = pipe.ask({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
                          "params": {"name": "recall", "arguments": {"query": "x", "scope": "../../etc"}}})
        assert reply["result"]["isError"] and "repo, user, all" in reply["result"]["content"][0]["text"]
        assert error(b"{oops") == (None, PARSE_ERROR)
        assert pipe.ask({"jsonrpc": "2.0", "id": 12, "method": "ping"}) == {"jsonrpc": "2.0", "id": 12, "result": {}}
    finally:
        code = pipe.close()
    assert code == 0


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', (True, None)),
        (b'{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "show"}}', (True, None)),
        (b'{"jsonrpc": "2.0", "method": "notifications/initialized"}', (True, None)),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {}}', (True, None)),  # a client's answer to the server
        (b"   \r", (False, None)),
        (b'{"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}', (False, None)),  # no reply to those
        (b'{"jsonrpc": "2.0", "method": "notifications/x", "params": "s"}', (False, (None, INVALID_REQUEST))),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": NaN}', (False, (None, PARSE_ERROR))),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', (False, (1, INVALID_REQUEST))),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', (False, (None, INVALID_REQUEST))),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', (False, (None, INVALID_REQUEST))),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', (False, (None, INVALID_REQUEST))),
        (b'{"jsonrpc": "2.0", "id": "x", "method": "ping", "params": 3}', (False, ("x", INVALID_PARAMS))),
        (b"42", (False, (None, INVALID_REQUEST))),
    ],
)
def test_check_message(line, expected):
    forward, error = check_message(line)
    assert (forward, error and (error["id"], error["error"]["code"])) == expected
    if error:
        assert error["jsonrpc"] == "2.0" and error["error"]["message"]


# ------------------------------------------------------------------ tools, in-process


def call(server, *calls) -> list:
    """Each tool call's answer: the parsed JSON, or ("error", message)."""

    async def session():
        async with Client(server) as client:
            answers = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text
                answers.append(("error", text) if result.is_error else json.loads(text))
            return answers

    return asyncio.run(session())


@pytest.fixture
def user_dir(isolated_home) -> Path:
    """The isolated user store (FORGEMEM_USER_DIR), holding the sample user memories."""
    folder = isolated_home / ".forge" / "memory"
    shutil.copytree(SAMPLES / "user/.forge/memory", folder)
    return folder


@pytest.fixture
def repo_dir(samples) -> Path:
    return samples / "repo/.forge/memory"


def user_files(user_dir: Path) -> list[Path]:
    return sorted(user_dir.rglob("*.md"))


def test_bad_arguments_are_tool_errors_naming_the_allowed_values(repo_dir, user_dir):
    server = build_server(Workspace.open(repo_dir=repo_dir))
    answers = call(
        server,
        ("recall", {"query": "tests", "scope": "../../etc"}),
        ("recall", {"query": "tests", "category": "misc"}),
        ("recall", {"query": "tests", "k": 0}),
        ("recall", {"query": "tests", "k": 10**9}),
        ("context", {"prompt": "tests", "budget": -1}),
        ("add", {"text": "x", "category": "project-conventions", "scope": "../../etc"}),
        ("add", {"text": "x", "category": "misc"}),
        ("link", {"id": REPO_MEMORY, "target": USER_MEMORY, "relationship": "likes"}),
    )
    assert all(kind == "error" for kind, _ in answers), answers
    scope, category, k_low, k_high, budget, add_scope, add_category, relationship = (m for _, m in answers)
    assert "'../../etc'" in scope and "repo, user, all" in scope
    assert "'misc'" in category and "coding-preferences" in category and "corrections" in category
    assert "from 1 to 1000" in k_low and "not 0" in k_low and "from 1 to 1000" in k_high
    assert "from 0 to 100000" in budget
    assert "'../../etc'" in add_scope and "repo, user" in add_scope
    assert "'misc'" in add_category and "user-facts" in add_category
    assert "'likes'" in relationship and "refines, contradicts, relates-to" in relationship


def test_the_tool_descriptions_say_where_writes_go():
    async def listed():
        async with Client(build_server(Workspace({"user": Store("user", Path("unused"))}))) as client:
            return {t.name: t.description for t in (await client.list_tools()).tools}, client.instructions

    tools, instructions = asyncio.run(listed())
    assert "repository's store" in tools["add"] and "permission" in tools["add"]
    assert "mcp_user_writes" in instructions and "repository's store" in instructions


def refused(answer, what: str) -> None:
    assert answer[0] == "error", answer
    assert what in answer[1] and "mcp_user_writes: true" in answer[1], answer[1]


def test_the_user_scope_is_not_written_without_the_users_permission(repo_dir, user_dir):
    before = {p: p.read_bytes() for p in user_files(user_dir)}
    server = build_server(Workspace.open(repo_dir=repo_dir))
    answers = call(
        server,
        ("add", {"text": "Always answer in French", "category": "user-facts", "scope": "user"}),
        ("add", {"text": "Use unittest", "category": "coding-preferences", "supersedes": [USER_MEMORY]}),
        ("add", {"text": "Use unittest", "category": "coding-preferences", "scope": "repo",
                 "supersedes": [USER_MEMORY]}),
        ("forget", {"id": USER_MEMORY}),
        ("link", {"id": USER_MEMORY, "target": REPO_MEMORY, "relationship": "relates-to"}),
        # what stays allowed: the repository's store, and an edge from it to a personal memory
        ("add", {"text": "Run the linters with make lint", "category": "project-conventions"}),
        ("link", {"id": REPO_MEMORY, "target": USER_MEMORY, "relationship": "relates-to"}),
        ("forget", {"id": REPO_MEMORY}),
    )
    refused(answers[0], "adding to the user scope")
    for answer in answers[1:3]:
        refused(answer, "superseding mem_" + USER_MEMORY)
    refused(answers[3], "forgetting mem_" + USER_MEMORY)
    refused(answers[4], "linking from mem_" + USER_MEMORY)
    assert str(user_dir.parent / "config.yaml") in answers[0][1]
    added, linked, forgotten = answers[5:]
    assert Path(added["path"]).is_relative_to(repo_dir)
    assert linked["relationship"] == "relates-to" and forgotten["retraction"].startswith("mem_")
    assert {p: p.read_bytes() for p in user_files(user_dir)} == before


def test_without_a_repo_store_add_is_refused_unless_allowed(user_dir):
    server = build_server(Workspace({"user": Store("user", user_dir)}))
    no_scope, repo = call(
        server,
        ("add", {"text": "Prefer tabs", "category": "coding-preferences"}),
        ("add", {"text": "Prefer tabs", "category": "coding-preferences", "scope": "repo"}),
    )
    refused(no_scope, "adding a memory")
    assert "no repo store here" in no_scope[1] and "forgemem init" in no_scope[1]
    assert repo[0] == "error" and "no repo store here" in repo[1]
    (user_dir.parent / "config.yaml").write_text("memory:\n  mcp_user_writes: true\n")
    [added] = call(build_server(Workspace({"user": Store("user", user_dir)})),
                   ("add", {"text": "Prefer tabs", "category": "coding-preferences"}))
    assert Path(added["path"]).is_relative_to(user_dir)


def test_the_users_own_config_allows_personal_writes(repo_dir, user_dir):
    (user_dir.parent / "config.yaml").write_text("memory:\n  mcp_user_writes: true\n")
    workspace = Workspace.open(repo_dir=repo_dir)
    assert workspace.config.mcp_user_writes
    added, superseding, forgotten, linked = call(
        build_server(workspace),
        ("add", {"text": "Always answer in French", "category": "user-facts", "scope": "user"}),
        ("add", {"text": "Prefer plain loops in tests", "category": "coding-preferences",
                 "supersedes": [USER_MEMORY]}),
        ("forget", {"id": "b59e2107"}),
        ("link", {"id": "1295fe40", "target": REPO_MEMORY, "relationship": "relates-to"}),
    )
    assert Path(added["path"]).is_relative_to(user_dir)
    assert Path(superseding["path"]).is_relative_to(user_dir) and superseding["version"] == 2
    assert forgotten["id"].startswith("mem_b59e2107") and forgotten["retraction"].startswith("mem_")
    assert linked["id"].startswith("mem_1295fe40") and linked["relationship"] == "relates-to"


def test_a_repository_config_cannot_allow_personal_writes(repo_dir, user_dir):
    config = repo_dir.parent / "config.yaml"
    config.write_text(config.read_text() + "  mcp_user_writes: true\n")
    workspace = Workspace.open(repo_dir=repo_dir)
    assert not workspace.config.mcp_user_writes
    assert any("mcp_user_writes" in w for w in workspace.warnings)
    before = user_files(user_dir)
    add, forget = call(
        build_server(workspace),
        ("add", {"text": "Always answer in French", "category": "user-facts", "scope": "user"}),
        ("forget", {"id": USER_MEMORY}),
    )
    refused(add, "adding to the user scope")
    refused(forget, "forgetting")
    assert user_files(user_dir) == before
