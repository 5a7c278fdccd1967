"""Scores users can read: a probability of relevance, the same scale in both stores, and a floor.

On the sample store with the real embedding model: chatter returns and injects nothing (recall, context, the
installed prompt hook, MCP), a question still gets its memory first, `--all` shows what the floor hid, and the
floor comes from the config.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forgemem.config import Config
from forgemem.recall import rank as rank_module
from forgemem.recall.engine import RecallEngine
from forgemem.recall.rank import Query
from forgemem.workspace import Workspace

from .conftest import SAMPLES, make_memory, write_memory

CHATTER = ["thanks", "continue", "make the button blue", "ok"]
QUESTION = "how do I run the tests?"
TESTS_MEMORY = "mem_9f7ab1bf"  # "Run unit tests with `make test` …", the head of three versions


@pytest.fixture
def stores(tmp_path, model_cache) -> list[str]:
    """`--repo-dir` / `--user-dir` for a copy of the sample store (without any cache of it)."""
    shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns("cache"))
    return ["--repo-dir", str(tmp_path / "samples/repo/.forge/memory"),
            "--user-dir", str(tmp_path / "samples/user/.forge/memory")]


def test_chatter_returns_nothing_and_says_why(cli, stores):
    for prompt in CHATTER:
        data = cli(*stores, "recall", "--json", prompt).json()
        assert data["results"] == [], prompt
        assert data["floor"] == 0.25 and data["below_floor"] == 10, prompt
        text = cli(*stores, "recall", prompt)
        assert text.code == 0
        assert text.out.strip() == "nothing relevant: no memory scores 0.25 or more for this (--all to see the closest)"
        block = cli(*stores, "context", "--json", prompt).json()
        assert block["context"] == "" and block["ids"] == [] and block["floor"] == 0.25, prompt


def test_a_question_still_gets_its_memory_first(cli, stores):
    data = cli(*stores, "recall", "--json", QUESTION).json()
    assert data["results"][0]["id"].startswith(TESTS_MEMORY)
    assert all(data["floor"] <= r["score"] <= 1 for r in data["results"])
    assert data["below_floor"] == 10 - len(data["results"]) > 0
    text = cli(*stores, "recall", QUESTION).out
    assert "make test" in text.splitlines()[1]
    assert text.rstrip().endswith(f"{len(data['results'])} relevant; nothing else above 0.25 (--all to see the rest)")
    block = cli(*stores, "context", "--json", QUESTION).json()
    assert block["ids"][0] == data["results"][0]["id"] and "make test" in block["context"]


def test_all_shows_what_the_floor_left_out(cli, stores):
    shown = cli(*stores, "recall", "--json", QUESTION).json()
    everything = cli(*stores, "recall", "--json", "--all", QUESTION).json()
    assert len(everything["results"]) == 10
    assert [r["id"] for r in everything["results"][: len(shown["results"])]] == [r["id"] for r in shown["results"]]
    under = [r for r in everything["results"] if r["score"] < everything["floor"]]
    assert len(under) == everything["below_floor"] == shown["below_floor"]
    thanks = cli(*stores, "recall", "--json", "--all", "thanks").json()
    # the top 10, and the other side of a contradiction among them when it is not
    assert len(thanks["results"]) >= 10 and max(r["score"] for r in thanks["results"]) < 0.2
    assert thanks["below_floor"] == len(thanks["results"])
    assert f"0 relevant (score 0.25 or more), {len(thanks['results'])} under it" in cli(
        *stores, "recall", "--all", "thanks").out


def test_batches_return_the_top_k_with_the_floor_on_each_line(cli, stores, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "a", "query": "thanks"}) + "\n" + json.dumps({"id": "b", "query": QUESTION}))
    lines = [json.loads(line) for line in cli(*stores, "recall", "--queries", str(queries), "-k", "5").out.splitlines()]
    assert [(line["id"], line["floor"]) for line in lines] == [("a", 0.25), ("b", 0.25)]
    for line in lines:  # the top 5 whatever they score, and the other side of any contradiction among them
        shown_for_a_conflict = [r for r in line["results"] if [s["relationship"] for s in r["via"]] == ["contradicts"]]
        assert len(line["results"]) - len(shown_for_a_conflict) == 5, line
    assert lines[1]["results"][0]["id"].startswith(TESTS_MEMORY)


def test_the_floor_comes_from_the_config(cli, stores, tmp_path):
    config = Path(stores[1]).parent / "config.yaml"
    config.write_text("memory:\n  recall_floor: 0.05\n")
    low = cli(*stores, "recall", "--json", QUESTION).json()
    assert low["floor"] == 0.05 and len(low["results"]) > 1
    config.write_text("memory:\n  recall_floor: 1\n")
    assert cli(*stores, "recall", "--json", QUESTION).json()["results"] == []
    assert cli(*stores, "context", QUESTION).out == ""
    config.write_text("memory:\n  recall_floor: 1.5\n")
    bad = cli(*stores, "recall", QUESTION)
    assert bad.code != 0 and "'memory.recall_floor' must be from 0.0 to 1.0, not 1.5" in bad.err


def test_the_prompt_hook_injects_nothing_for_chatter(cli, project, isolated_home, monkeypatch, tmp_path):
    shutil.copytree(SAMPLES / "user" / ".forge", isolated_home / ".forge", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("cache"))
    (isolated_home / ".forge" / "config.yaml").write_text("memory:\n  hook_timeout_ms: 60000\n")
    monkeypatch.chdir(project)
    assert cli("install", "claude-code").code == 0
    assert cli("index").code == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def prompt(text: str, session: str) -> str:
        payload = {"session_id": session, "transcript_path": str(tmp_path / f"{session}.jsonl"), "cwd": str(project),
                   "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": text}
        done = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                              cwd=project, env=env, timeout=120)
        assert done.returncode == 0 and done.stderr == ""
        return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout else ""

    for n, text in enumerate(CHATTER):
        assert prompt(text, f"chatter-{n}") == "", text
    block = prompt(QUESTION, "question")
    assert block.splitlines()[2].startswith("- [9f7ab1bf project-conventions] Run unit tests with `make test`")


def test_mcp_tools_use_the_floor(stores, cli):
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from forgemem.agents.mcp import build_server

    from .test_mcp import call

    workspace = Workspace.open(repo_dir=stores[1], user_dir=stores[3])
    _tools, thanks, everything, block, question = call(
        build_server(workspace),
        ("recall", {"query": "thanks"}),
        ("recall", {"query": "thanks", "show_all": True}),
        ("context", {"prompt": "thanks"}),
        ("recall", {"query": QUESTION}),
    )
    assert thanks["results"] == [] and thanks["floor"] == 0.25 and thanks["below_floor"] == 10
    assert len(everything["results"]) >= 10 and everything["below_floor"] == len(everything["results"])
    assert block["context"] == "" and block["floor"] == 0.25
    assert question["results"][0]["id"].startswith(TESTS_MEMORY)


def test_a_one_memory_store_scores_like_the_same_memory_in_a_big_store(tmp_path, real_embedder):
    """Before, each store's BM25 was min-max normalised on its own and a store of one memory scored 0 lexically."""
    memory = make_memory(body="Deploys go out through Argo CD after the staging smoke tests pass.", scope="user",
                         category="user-facts")
    alone = tmp_path / "alone/.forge/memory"
    write_memory(alone, memory)
    samples = tmp_path / "samples/.forge/memory"
    shutil.copytree(SAMPLES / "repo/.forge/memory", samples, ignore=shutil.ignore_patterns("cache"))
    big = tmp_path / "big/.forge/memory"
    shutil.copytree(samples, big)
    write_memory(big, make_memory(body=memory.body, category="user-facts"))
    query = Query("how do deploys go out through Argo CD?", k=5)

    def best(repo_dir: Path, user_dir: Path):
        engine = RecallEngine(Workspace.open(repo_dir=repo_dir, user_dir=user_dir), embedder=real_embedder)
        return engine.recall(query).hits[0]

    in_user_store = best(samples, alone)  # the sample repo store beside it
    in_big_store = best(big, tmp_path / "nobody/.forge/memory")
    assert in_user_store.memory.body == in_big_store.memory.body == memory.body
    assert in_user_store.memory.scope == "user"
    # every query word once, in a store where every idf is equal: the share is 1 / (k1 + 1) of the ceiling
    assert in_user_store.lexical_share == pytest.approx(1 / 2.2)
    assert 0.25 < in_user_store.score <= 1 and 0.25 < in_big_store.score <= 1
    assert abs(in_user_store.score - in_big_store.score) < 0.1


def test_the_shipped_model_keeps_the_order_and_the_floor_matches_the_config():
    model = rank_module.calibration()
    for mode in ("dense", "lexical_only"):
        a, b, c = model[mode]["weights"]
        assert b > 0 and c < 0 and model[mode]["lambda"] > 0
    assert model["floor"] == Config().recall_floor


def test_a_contradiction_shown_under_the_floor_is_said_and_its_score_explained(cli, stores):
    # the sample store's two admin-page decisions contradict each other: the weaker one is shown beside the
    # relevant one, over the edge, at half its score; the printout says why it is there and why it scores so
    data = cli(*stores, "recall", "--json", "admin pages").json()
    first, second = data["results"][:2]
    assert first["score"] >= 0.25 > second["score"] and second["conflicts"] == [first["id"]]
    text = cli(*stores, "recall", "--explain", "admin pages").out
    assert text.rstrip().endswith("1 relevant, shown with 1 contradicting it; nothing else above 0.25 "
                                  "(--all to see the rest)")
    assert second["score"] > second["explain"]["fused"]  # half the relevant one's score, over the edge
    assert f"score {second['score']:.3f} over the edge from the match it is linked to" in text


def test_a_conflict_names_the_other_side_shortly_and_the_command_that_settles_it(cli, stores):
    data = cli(*stores, "recall", "--json", "admin pages").json()
    first, second = data["results"][:2]
    text = cli(*stores, "recall", "admin pages").out
    assert (f"contradicted by {second['id'][4:12]}: `forgemem resolve {first['id'][4:12]}` writes one version in "
            "place of both") in text
