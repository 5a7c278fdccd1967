"""The LLM classifier against a real HTTP server on 127.0.0.1 (no remote API is called)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from forgemem.capture.capturer import Capturer, make_classifier
from forgemem.capture.classify import llm
from forgemem.capture.classify.llm import LLMClassifier
from forgemem.errors import ConfigError
from forgemem.recall.engine import RecallEngine
from forgemem.store import memfile
from forgemem.workspace import Workspace, init_forge_dir

from .test_capture import batch


class FakeModelServer:
    """An HTTP server speaking the two APIs; each test scripts its replies.

    `replies` is a list of (status, body, delay seconds) used in order (the last
    one repeats); every request is recorded with its path, headers and JSON body.
    """

    def __init__(self):
        self.replies: list[tuple[int, object, float]] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                index = min(len(server.requests), len(server.replies)) - 1
                status, reply, delay = server.replies[index]
                time.sleep(delay)
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    fake = FakeModelServer()
    yield fake
    fake.close()


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    monkeypatch.setattr(llm, "BACKOFF_SECONDS", 0.01)


def openai_reply(memories: list[dict]) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": json.dumps({"memories": memories})}}]}


def anthropic_reply(memories: list[dict]) -> dict:
    return {"content": [{"type": "tool_use", "id": "t1", "name": "record_memories",
                         "input": {"memories": memories}}], "stop_reason": "tool_use"}


def item(text, category="coding-preferences", scope="user", relation="new", target=None, turn=1, quote=""):
    return {"text": text, "category": category, "scope": scope, "relation": relation,
            "target": target, "turn": turn, "quote": quote, "confidence": 0.9}


def configure(tmp_path: Path, model: str, url: str, timeout: int = 5) -> Workspace:
    init_forge_dir(tmp_path / "project" / ".forge")
    init_forge_dir(tmp_path / "home" / ".forge")
    (tmp_path / "home/.forge/config.yaml").write_text(  # the user's own config: a repo's is not obeyed
        f"memory:\n  classifier_model: {model}\n  classifier_base_url: {url}\n"
        f"  classifier_api_key_env: FORGEMEM_TEST_KEY\n  classifier_timeout: {timeout}\n"
    )
    return Workspace.open(
        cwd=tmp_path, repo_dir=tmp_path / "project/.forge/memory", user_dir=tmp_path / "home/.forge/memory"
    )


def capturer_for(ws: Workspace, embedder) -> Capturer:
    return Capturer(ws, RecallEngine(ws, embedder=embedder))


def test_openai_compatible_end_to_end(server, tmp_path, monkeypatch, real_embedder):
    monkeypatch.setenv("FORGEMEM_TEST_KEY", "sk-test-not-a-real-key-000000")
    ws = configure(tmp_path, "openai:gpt-test", server.url + "/v1")
    old, _ = ws.add("The user prefers black for formatting.", scope="user", category="coding-preferences")
    server.replies = [(200, openai_reply([
        item("The user formats Python with ruff format, not black.", relation="supersedes", target="M1",
             quote="switch to ruff"),
    ]), 0)]
    result = capturer_for(ws, real_embedder).run(batch("From now on use ruff format instead of black.", "Okay."))
    [memory] = result.written
    assert result.classifier == "openai:gpt-test" and result.notes == []
    assert memory.supersedes == (old.id,) and memory.version == 2
    assert memfile.read_file(memory.path).extra["source"] == {
        "transcript": "/tmp/t.jsonl", "lines": "1", "quote": "From now on use ruff format instead of black."
    }  # the model's quote was not verbatim in turn 1: forgemem quotes the turn itself
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test-not-a-real-key-000000"
    body = request["body"]
    assert body["model"] == "gpt-test" and body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == llm.ANSWER_SCHEMA
    prompt = json.loads(body["messages"][1]["content"])
    assert prompt["existing_memories"] == [
        {"ref": "M1", "category": "coding-preferences", "scope": "user", "text": old.body}
    ]  # the model sees references, never ids or paths
    assert old.id not in body["messages"][1]["content"] and str(old.path) not in body["messages"][1]["content"]
    assert result.chars_sent == len(llm.SYSTEM_PROMPT) + len(body["messages"][1]["content"])


def test_anthropic_messages_api_with_a_forced_tool(server, tmp_path, monkeypatch, real_embedder):
    monkeypatch.setenv("FORGEMEM_TEST_KEY", "ant-test-key")
    ws = configure(tmp_path, "anthropic:claude-test", server.url)
    server.replies = [(200, anthropic_reply([
        item("The user is a backend developer who mostly writes Go.", category="user-facts", scope="repo"),
    ]), 0)]
    result = capturer_for(ws, real_embedder).run(batch("I'm a backend developer, mostly Go.", "Noted."))
    [memory] = result.written
    assert memory.category == "user-facts" and memory.scope == "user"  # personal facts never go to the repo
    [request] = server.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["X-Api-Key"] == "ant-test-key"
    assert request["headers"]["Anthropic-Version"] == llm.ANTHROPIC_VERSION
    assert request["body"]["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert request["body"]["tools"][0]["input_schema"] == llm.ANSWER_SCHEMA


def test_a_failing_server_is_retried_with_backoff(server, tmp_path, real_embedder):
    ws = configure(tmp_path, "openai-compatible:local", server.url + "/v1")
    server.replies = [
        (500, {"error": "boom"}, 0),
        (429, {"error": "slow down"}, 0),
        (200, openai_reply([item("Always run the linter before committing.")]), 0),
    ]
    result = capturer_for(ws, real_embedder).run(batch("Always run the linter before committing.", "ok"))
    assert len(server.requests) == 3 and len(result.written) == 1
    assert result.classifier == "openai:local"


@pytest.mark.slow
def test_a_slow_server_times_out_and_the_offline_classifier_decides(server, tmp_path, real_embedder):
    ws = configure(tmp_path, "ollama:llama-test", server.url + "/v1", timeout=1)
    server.replies = [(200, openai_reply([]), 3.0)]
    started = time.monotonic()
    result = capturer_for(ws, real_embedder).run(batch("Never leave print statements in committed code.", "ok"))
    assert time.monotonic() - started < 1 * (llm.RETRIES + 1) + 2  # bounded by timeout × attempts
    assert len(server.requests) == llm.RETRIES + 1
    assert result.classifier == "offline" and "timed out" in result.notes[0]
    [memory] = result.written  # the offline classifier's decision (its category is its own business here)
    assert "print statements" in memory.body


def test_unreachable_model_falls_back(tmp_path, real_embedder):
    ws = configure(tmp_path, "openai-compatible:x", "http://127.0.0.1:9/v1", timeout=1)  # discard port
    result = capturer_for(ws, real_embedder).run(batch("Please always add type hints.", "ok"))
    assert result.classifier == "offline" and "unavailable" in result.notes[0]
    assert len(result.written) == 1


@pytest.mark.parametrize(
    "reply",
    [
        b"<html>gateway error</html>",
        {"choices": [{"message": {"content": "Sure! Here are the memories: none"}}]},
        {"choices": []},
        {"choices": [{"message": {"content": json.dumps({"memory": "wrong key"})}}]},
    ],
)
def test_garbage_answers_fall_back_to_the_offline_classifier(server, tmp_path, real_embedder, reply):
    ws = configure(tmp_path, "openai-compatible:x", server.url + "/v1")
    server.replies = [(200, reply, 0)]
    result = capturer_for(ws, real_embedder).run(batch("Please always add type hints.", "ok"))
    assert result.classifier == "offline" and len(server.requests) == 1  # garbage is not retried
    assert len(result.written) == 1


def test_invalid_items_are_dropped_and_the_rest_kept(server, tmp_path, real_embedder):
    ws = configure(tmp_path, "openai-compatible:x", server.url + "/v1")
    existing, _ = ws.add("We deploy on Fridays.", scope="repo", category="project-conventions")
    before = existing.path.read_bytes()
    server.replies = [(200, openai_reply([
        item("Valid: the user prefers small commits."),
        item("bad category", category="secrets"),
        item("bad scope", scope="/etc"),
        item("bad relation", relation="overwrite"),
        item("", category="corrections"),
        item("Deploys happen on Mondays.", category="project-conventions", scope="repo",
             relation="supersedes", target=existing.id),  # a real id the model was never shown
        item("dup of nothing", relation="duplicate", target="M7"),
        {"text": 42},
        "not even an object",
    ]), 0)]
    result = capturer_for(ws, real_embedder).run(batch("I prefer small commits.", "ok"))
    texts = sorted(m.body for m in result.written)
    assert texts == ["Deploys happen on Mondays.", "Valid: the user prefers small commits."]
    monday = next(m for m in result.written if "Mondays" in m.body)
    assert monday.supersedes == ()  # only M-references resolve; nothing else is edited
    assert existing.path.read_bytes() == before
    assert sum(int(n.split(" ")[1]) for n in result.notes) == 7


def test_config_errors_name_the_problem(tmp_path):
    ws = configure(tmp_path, "bogus:model", "http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="unknown provider 'bogus'"):
        make_classifier(ws)
    (tmp_path / "home/.forge/config.yaml").write_text("memory:\n  classifier_model: openai-compatible:x\n")
    ws = Workspace.open(cwd=tmp_path, repo_dir=tmp_path / "project/.forge/memory",
                        user_dir=tmp_path / "home/.forge/memory")
    with pytest.raises(ConfigError, match="needs classifier_base_url"):
        make_classifier(ws)
    (tmp_path / "project/.forge/config.yaml").write_text("memory:\n  classifier_timeout: 0\n")
    with pytest.raises(ConfigError, match="classifier_timeout"):
        Workspace.open(cwd=tmp_path, repo_dir=tmp_path / "project/.forge/memory",
                       user_dir=tmp_path / "home/.forge/memory")


def test_observe_uses_the_configured_model_end_to_end(server, tmp_path, cli, monkeypatch):
    ws = configure(tmp_path, "openai:gpt-test", server.url + "/v1")
    server.replies = [(200, openai_reply([
        item("In this repo, releases are tagged vX.Y.Z.", category="project-conventions", scope="repo"),
    ]), 0)]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "we tag releases as vX.Y.Z"}) + "\n")
    monkeypatch.chdir(tmp_path / "project")
    result = cli("--repo-dir", str(ws.stores["repo"].memory_dir), "observe", "--once", "--final", "--json",
                 str(transcript))
    assert result.code == 0, result.err
    [p] = result.json()["passes"]
    assert p["classifier"] == "openai:gpt-test" and p["written"][0]["content"].startswith("In this repo")
    assert isinstance(make_classifier(ws), LLMClassifier)


def test_observe_fails_fast_on_a_bad_classifier_setting(tmp_path, cli, monkeypatch):
    ws = configure(tmp_path, "bogus:model", "http://127.0.0.1:1")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    result = cli("--repo-dir", str(ws.stores["repo"].memory_dir), "observe", "--once", str(transcript))
    assert result.code == 2 and "unknown provider 'bogus'" in result.err
