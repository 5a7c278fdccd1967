"""The README's library example runs as written (on a copy of the sample store)."""

from __future__ import annotations

import re
import shutil

from .conftest import ROOT, SAMPLES


def test_the_readme_library_example_runs(tmp_path, monkeypatch, capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [code] = re.findall(r"## As a library.*?```python\n(.*?)```", readme, re.S)
    stores = tmp_path / "samples"
    shutil.copytree(SAMPLES, stores, ignore=shutil.ignore_patterns("cache"))
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"role": "user", "content": "From now on we always use uv."}\n')
    code = code.replace("Workspace.open()", f"Workspace.open(repo_dir={str(stores / 'repo/.forge/memory')!r}, "
                                              f"user_dir={str(stores / 'user/.forge/memory')!r})", 1)
    code = code.replace('"path/to/session.jsonl"', repr(str(transcript)))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    out = capsys.readouterr().out
    assert "ruff" in out.lower() and "[1]" in out
