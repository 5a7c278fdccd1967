"""Stores, discovery, init and config, in real git repositories."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from forgemem.config import Config, load_config
from forgemem.errors import ConfigError
from forgemem.workspace import Workspace

from .conftest import SAMPLES, git


def test_repo_store_is_found_by_walking_up_to_the_git_root(git_repo, cli):
    os.chdir(git_repo)
    result = cli("init")
    assert result.code == 0
    assert (git_repo / ".forge/memory").is_dir()
    assert (git_repo / ".forge/config.yaml").read_text().startswith("# forgemem configuration")
    assert (git_repo / ".forge/.gitignore").read_text().endswith("cache/\n")
    deep = git_repo / "src" / "pkg"
    deep.mkdir(parents=True)
    ws = Workspace.open(cwd=deep)
    assert ws.stores["repo"].memory_dir == (git_repo / ".forge/memory").resolve()
    assert ws.stores["repo"].cache_dir == (git_repo / ".forge/cache").resolve()


def test_init_is_idempotent_and_puts_forge_at_the_git_root(git_repo, cli):
    sub = git_repo / "sub"
    sub.mkdir()
    os.chdir(sub)
    assert cli("init").code == 0
    config = git_repo / ".forge/config.yaml"
    config.write_text("memory:\n  cadence_turns: 3\n")
    second = cli("init")
    assert second.code == 0 and "already set up" in second.out
    assert config.read_text() == "memory:\n  cadence_turns: 3\n"


def test_init_user_writes_a_config_that_speaks_of_itself_and_checks(isolated_home, cli):
    assert cli("init", "--user").code == 0
    text = (isolated_home / ".forge/config.yaml").read_text()
    assert text.startswith("# your own forgemem configuration, for every repository")
    assert "this file wins over ~/.forge/config.yaml" not in text and "# classifier_model:" in text
    assert load_config(isolated_home / ".forge/config.yaml") == Config()


def test_discovery_stops_at_the_git_root(tmp_path):
    outer = tmp_path / "outer"
    (outer / ".forge/memory").mkdir(parents=True)
    inner = outer / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    assert "repo" not in Workspace.open(cwd=inner).stores
    assert "repo" in Workspace.open(cwd=outer).stores


def test_home_store_is_not_mistaken_for_a_repo_store(isolated_home):
    (isolated_home / ".forge/memory").mkdir(parents=True)
    ws = Workspace.open(cwd=isolated_home)
    assert "repo" not in ws.stores
    assert ws.stores["user"].memory_dir == isolated_home / ".forge/memory"


def test_overrides_from_options_and_environment(tmp_path, monkeypatch, cli):
    repo_dir = tmp_path / "elsewhere/.forge/memory"
    cli("--repo-dir", str(repo_dir), "init")
    assert repo_dir.is_dir()
    added = cli("--repo-dir", str(repo_dir), "add", "Use tabs in Makefiles.", "-c", "project-conventions", "--json").json()
    assert added["path"].startswith(str(repo_dir))
    monkeypatch.setenv("FORGEMEM_REPO_DIR", str(repo_dir))
    listed = cli("list", "--json").json()
    assert [m["id"] for m in listed] == [added["id"]]
    user_dir = tmp_path / "me/memory"
    out = cli("--user-dir", str(user_dir), "add", "I like short answers.", "-s", "user", "-c", "user-facts", "--json").json()
    assert out["path"].startswith(str(user_dir))
    # the cache lives beside the memory folder, never inside it
    ws = Workspace.open(repo_dir=repo_dir, user_dir=user_dir)
    assert ws.stores["repo"].cache_dir == repo_dir.parent / "cache"
    assert ws.stores["user"].cache_dir == user_dir.parent / "cache"


def test_read_only_commands_leave_git_status_clean(git_repo, cli):
    os.chdir(git_repo)
    cli("init")
    first = cli("add", "Run migrations with make migrate.", "-c", "project-conventions", "--json").json()
    cli("add", "Never edit an applied migration.", "-c", "project-conventions", "--relates", f"{first['id']}:refines")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "memories")
    # a cache folder (as later issues fill it) is ignored
    (git_repo / ".forge/cache").mkdir(exist_ok=True)
    (git_repo / ".forge/cache/index.bin").write_bytes(b"derived")
    for args in (["list"], ["list", "--json"], ["show", first["id"][:10]], ["history", first["id"]],
                 ["graph"], ["graph", first["id"], "--format", "dot"], ["validate"], ["stats", "--json"]):
        assert cli(*args).code == 0, args
    assert git(git_repo, "status", "--porcelain") == ""


def test_config_layers_and_errors(tmp_path):
    user, repo = tmp_path / "user.yaml", tmp_path / "repo.yaml"
    user.write_text("memory:\n  cadence_turns: 7\n  retrieval_top_k: 20\n")
    repo.write_text("memory:\n  cadence_turns: 3\n")
    assert load_config(user, repo) == Config(cadence_turns=3, retrieval_top_k=20)
    assert load_config(tmp_path / "missing.yaml") == Config()
    cases = {
        "memory:\n  cadense_turns: 3\n": "unknown key 'memory.cadense_turns'",
        "memory:\n  cadence_turns: 11\n": "'memory.cadence_turns' must be from 1 to 10, not 11",
        "memory:\n  retrieval_top_k: ten\n": "'memory.retrieval_top_k' must be a whole number, not 'ten'",
        "memory: [\n": "is not valid YAML at line 2",
        "recall:\n  k: 1\n": "unknown key 'recall'",
    }
    for text, message in cases.items():
        repo.write_text(text)
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            load_config(repo)


def test_bad_config_is_one_clear_error_naming_the_key(git_repo, cli):
    os.chdir(git_repo)
    cli("init")
    (git_repo / ".forge/config.yaml").write_text("memory:\n  retrieval_hop_depth: -1\n")
    result = cli("list")
    assert result.code == 2
    assert "memory.retrieval_hop_depth" in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1


def test_default_config_file_matches_the_defaults(git_repo, cli):
    os.chdir(git_repo)
    cli("init")
    assert load_config(git_repo / ".forge/config.yaml") == Config()


def test_console_script_and_module_entry_point_run_on_the_samples():
    env = dict(os.environ)
    env["FORGEMEM_REPO_DIR"] = str(SAMPLES / "repo/.forge/memory")
    env["FORGEMEM_USER_DIR"] = str(SAMPLES / "user/.forge/memory")
    module = subprocess.run([sys.executable, "-m", "forgemem", "list", "--json"], capture_output=True, text=True, env=env)
    assert module.returncode == 0, module.stderr
    assert len(__import__("json").loads(module.stdout)) == 43
    usage = subprocess.run([sys.executable, "-m", "forgemem", "list", "--bogus"], capture_output=True, text=True, env=env)
    assert usage.returncode == 2
    assert "No such option" in usage.stderr


def test_large_store_is_parsed_by_worker_processes_through_the_module_entry_point(tmp_path):
    """2,000+ files take the multi-process path; `python -m forgemem` must survive it."""
    from forgemem.store import memfile
    from forgemem.store.folder import PARALLEL_FROM

    from .conftest import make_memory

    folder = tmp_path / "big/.forge/memory"
    (folder / "project-conventions").mkdir(parents=True)
    for i in range(PARALLEL_FROM + 50):
        memory = make_memory(body=f"Convention number {i}.")
        (folder / "project-conventions" / memfile.file_name(memory)).write_text(memfile.dumps(memory))
    (folder / "broken.md").write_text("no front matter\n")
    env = dict(os.environ, FORGEMEM_REPO_DIR=str(folder), FORGEMEM_USER_DIR=str(tmp_path / "u"))
    run = subprocess.run([sys.executable, "-m", "forgemem", "validate", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1, run.stderr
    data = __import__("json").loads(run.stdout)
    assert data["files_checked"] == PARALLEL_FROM + 51
    assert [p["reason"] for p in data["problems"]] == ["no YAML front matter (the file must start with a '---' line)"]


def test_add_in_a_repository_without_a_store_says_where_the_memory_went(git_repo, isolated_home, cli):
    os.chdir(git_repo)
    result = cli("add", "Use tabs in Makefiles", "-c", "project-conventions")
    assert result.code == 0
    path = result.out.strip().split("\t")[1]
    assert path.startswith(str(isolated_home / ".forge" / "memory"))  # where it went is unchanged
    [line] = [x for x in result.err.splitlines() if "repo store" in x]
    assert line == ("forgemem: project has no repo store, so this memory went to your user store: "
                    "`forgemem init` creates one (pass --scope user to write there without this note)")
    assert not (git_repo / ".forge").exists()
    # the user's own choice, a personal fact, or a store that exists: nothing to say
    assert "repo store" not in cli("add", "Use spaces in Python", "-c", "project-conventions", "-s", "user").err
    assert "repo store" not in cli("add", "I live in Berlin", "-c", "user-facts").err
    assert cli("init").code == 0
    again = cli("add", "Use tabs in Go files", "-c", "project-conventions")
    assert "repo store" not in again.err and str(git_repo / ".forge") in again.out
