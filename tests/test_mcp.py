"""`forgemem mcp`: the official SDK's own client talks to the server in-process."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from .conftest import SAMPLES

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client  # noqa: E402

from forgemem.agents.mcp import build_server  # noqa: E402
from forgemem.workspace import Workspace  # noqa: E402


@pytest.fixture
def workspace(tmp_path, model_cache) -> Workspace:
    shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns("cache"))
    return Workspace.open(
        repo_dir=tmp_path / "samples/repo/.forge/memory", user_dir=tmp_path / "samples/user/.forge/memory"
    )


def call(server, *calls):
    """Run tool calls in order through one client session; each answer parsed from its JSON text."""

    async def session():
        async with Client(server) as client:
            tools = await client.list_tools()
            answers = [sorted(t.name for t in tools.tools)]
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text
                answers.append(("error", text) if result.is_error else json.loads(text))
            return answers

    return asyncio.run(session())


def test_tools_answer_with_the_cli_json(workspace, cli):
    server = build_server(workspace)
    repo, user = (str(workspace.stores[s].memory_dir) for s in ("repo", "user"))
    tools, recalled, shown, history, conflicts = call(
        server,
        ("recall", {"query": "how do I run the tests?", "k": 3}),
        ("show", {"id": "9f7ab1bf"}),
        ("history", {"id": "9f7ab1bf"}),
        ("conflicts", {}),
    )
    assert tools == ["add", "conflicts", "context", "forget", "history", "link", "recall", "show"]
    from_cli = cli("--repo-dir", repo, "--user-dir", user, "recall", "--json", "-k", "3", "how do I run the tests?")
    expected = from_cli.json()
    assert [h["id"] for h in recalled["results"]] == [h["id"] for h in expected["results"]]
    assert recalled["results"][0]["content"] == expected["results"][0]["content"]
    assert set(recalled) == set(expected)
    assert shown == cli("--repo-dir", repo, "--user-dir", user, "show", "--json", "9f7ab1bf").json()
    assert [m["version"] for m in history] == [1, 2, 3]
    assert conflicts == cli("--repo-dir", repo, "--user-dir", user, "conflicts", "--json").json()
    assert len(conflicts["conflicts"]) == 1


def test_tools_that_write(workspace):
    server = build_server(workspace)
    _, added, context, no_budget, linked, forgotten, missing, bad = call(
        server,
        ("add", {"text": "Use ruff format, never black, token=abcdef123456", "category": "coding-preferences",
                 "scope": "repo"}),
        ("context", {"prompt": "how do we format Python code, ruff format or black?"}),
        ("context", {"prompt": "how do we format Python code, ruff format or black?", "budget": 0}),
        ("link", {"id": "9f7ab1bf", "target": "25f9dbc7", "relationship": "relates-to"}),
        ("forget", {"id": "9f7ab1bf", "reason": "moved to nox"}),
        ("show", {"id": "ffffffff"}),
        ("add", {"text": "x", "category": "feelings"}),
    )
    assert added["version"] == 1 and added["redacted"] == ["password"]
    memory_text = open(added["path"]).read()
    assert "abcdef123456" not in memory_text and "[REDACTED:password]" in memory_text
    assert "ruff" in context["context"] and context["tokens"] <= 1500
    assert no_budget["tokens"] == 0  # as `forgemem context --budget 0`: 0 is a budget, not "the default"
    assert linked["relationship"] == "relates-to"
    assert forgotten["purged"] is False and forgotten["retraction"].startswith("mem_")
    assert forgotten["id"].startswith("mem_9f7ab1bf")  # the memory forgotten, not its retraction
    assert missing[0] == "error" and "no memory has an id starting with 'ffffffff'" in missing[1]
    assert bad[0] == "error" and "feelings" in bad[1]


def test_mcp_command_needs_no_network(tmp_path, monkeypatch):
    # `forgemem mcp` builds the server and speaks on stdio; a client on the other end of a pipe
    import subprocess
    import sys

    shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns("cache"))
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    done = subprocess.run(
        [sys.executable, "-m", "forgemem", "--repo-dir", str(tmp_path / "samples/repo/.forge/memory"),
         "--user-dir", str(tmp_path / "samples/user/.forge/memory"), "mcp"],
        input=request + "\n", capture_output=True, text=True, timeout=60,
    )
    first = json.loads(done.stdout.splitlines()[0])
    assert first["id"] == 1 and first["result"]["serverInfo"]["name"] == "forgemem"
