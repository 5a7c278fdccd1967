"""Uninstall removes exactly what install added: real settings files that mix the user's hooks into
forgemem's entries, install → the user's edits → uninstall → diff."""

from __future__ import annotations

import difflib
import json
import shutil
import tomllib
from pathlib import Path

import pytest

from forgemem.agents import claude_code, install, jsonedit

AUDIT = "/usr/local/bin/audit-log.sh"
MENTION = "echo 'forgemem hook claude-code ran' >> /tmp/hook-audit.log"  # merely mentions forgemem's hook
GUARD = {"type": "command", "command": "/usr/local/bin/prompt-guard.sh", "timeout": 5}

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(make test)", "Bash(git status)"], "deny": []},
    "env": {"LANG": "C.UTF-8"},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": AUDIT}, {"type": "command", "command": MENTION}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/check-bash"}]}],
    },
    "model": "opus",
}


def claude_settings(text: str) -> str:
    """Settings as Claude Code writes them (two spaces, non-ASCII kept)."""
    return json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"


def forgemem_hooks(data: dict) -> list[tuple[str, str]]:
    return [(event, h["command"]) for event, entries in data.get("hooks", {}).items() for e in entries
            for h in e["hooks"] if claude_code._is_forgemem_command(h["command"])]


def only_removals(before: str, after: str) -> list[str]:
    """The lines taken out; fails when any line was added or changed (but for the comma that JSON
    needs after an item that is no longer, or now no more, the last)."""
    def lines(text: str) -> list[str]:
        return [line.removesuffix(",") for line in text.splitlines()]

    diff = list(difflib.unified_diff(lines(before), lines(after), lineterm="", n=0))
    added = [line for line in diff[2:] if line.startswith("+")]
    assert added == [], "\n".join(diff)
    return [line[1:] for line in diff[2:] if line.startswith("-")]


@pytest.fixture
def claude(project, monkeypatch) -> Path:
    monkeypatch.chdir(project)
    (project / ".claude").mkdir()
    return project / ".claude"


def test_user_hooks_inside_and_beside_forgemem_entries_survive_uninstall(cli, claude):
    settings = claude / "settings.local.json"
    settings.write_text(claude_settings(json.dumps(USER_SETTINGS)))
    assert cli("install", "claude-code").code == 0
    installed = json.loads(settings.read_text())
    # the user's Stop entry is left as it was, and forgemem has its own entry beside it
    assert installed["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert sorted(e for e, _ in forgemem_hooks(installed)) == sorted(claude_code.HOOK_EVENTS)
    # the user edits through Claude Code's /hooks screen: a hook inside forgemem's UserPromptSubmit
    # entry, a key of their own; the file is written back by Claude Code (two spaces)
    [entry] = installed["hooks"]["UserPromptSubmit"]
    entry["hooks"].append(GUARD)
    installed["statusLine"] = {"type": "command", "command": "~/bin/status"}
    settings.write_text(claude_settings(json.dumps(installed)))
    edited = settings.read_text()
    result = cli("uninstall", "claude-code")
    assert result.code == 0, result.err
    after = settings.read_text()
    data = json.loads(after)
    assert forgemem_hooks(data) == []
    assert data["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]  # the mention of forgemem is the user's
    assert data["hooks"]["UserPromptSubmit"] == [{"hooks": [GUARD]}]  # only forgemem's own command went
    assert data["statusLine"] == {"type": "command", "command": "~/bin/status"}
    assert list(data) == list(json.loads(edited))  # key order kept
    removed = only_removals(edited, after)
    assert sum("forgemem hook claude-code" in line for line in removed) == len(claude_code.HOOK_EVENTS)
    assert not any(AUDIT in line or "prompt-guard" in line or "ran' >>" in line for line in removed)
    # what is left is exactly the user's file with their edits: as if forgemem had never been there
    expected = json.loads(json.dumps(USER_SETTINGS))
    expected["hooks"]["UserPromptSubmit"] = [{"hooks": [GUARD]}]
    expected["statusLine"] = {"type": "command", "command": "~/bin/status"}
    assert data == expected


def test_hand_formatted_settings_keep_every_byte_but_forgemem_lines(cli, claude):
    settings = claude / "settings.local.json"
    original = ('{\n    "permissions" : { "allow" : [ "Bash(ls)" ] },\n    "hooks": {\n'
                '        "Stop": [\n            {"hooks": [{"type": "command", "command": "' + AUDIT + '"}]}\n'
                '        ]\n    },\n    "note": "caf\\u00e9 — ünïcode"\n}\n')
    settings.write_text(original)
    assert cli("install", "claude-code").code == 0
    installed = settings.read_text()
    assert only_removals(installed, original)  # install only added lines, in the file's own layout
    assert "\n            {\n                \"hooks\": [" in installed  # four spaces, like the rest
    # the user appends a line of their own in forgemem's Stop entry, by hand, four spaces
    ours = '"command": "' + claude_code.forgemem_command().replace('"', '\\"') + ' hook claude-code"'
    start = installed.index(ours, installed.index('"Stop"'))
    brace = installed.index("}", start)
    edited = installed[:brace + 1] + ',\n                    {"type": "command", "command": "/bin/true"}' + installed[brace + 1:]
    settings.write_text(edited)
    assert json.loads(edited)["hooks"]["Stop"][1]["hooks"][1]["command"] == "/bin/true"
    assert cli("uninstall", "claude-code").code == 0
    after = settings.read_text()
    removed = only_removals(edited, after)
    allowed = {"{", "}", "[", "]", '"hooks": [', '"type": "command"', '"timeout": 10', '"matcher": "compact"',
               *(f'"{event}": [' for event in claude_code.HOOK_EVENTS)}
    assert {line.strip() for line in removed if "forgemem hook claude-code" not in line} <= allowed, removed
    assert sum("forgemem hook claude-code" in line for line in removed) == len(claude_code.HOOK_EVENTS)
    assert json.loads(after)["hooks"]["Stop"] == [json.loads(original)["hooks"]["Stop"][0],
                                                  {"hooks": [{"type": "command", "command": "/bin/true"}]}]
    assert '"permissions" : { "allow" : [ "Bash(ls)" ] }' in after and "caf\\u00e9 — ünïcode" in after


def test_a_changed_forgemem_hook_and_a_customised_command_file_are_kept_and_reported(cli, claude):
    commands = claude / "commands"
    commands.mkdir()
    (commands / "forgemem.md").write_text("---\ndescription: my own /forgemem\n---\nDo my thing.\n")
    result = cli("install", "claude-code")
    assert result.code == 0 and "not forgemem's; left alone" in result.err
    settings = claude / "settings.local.json"
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 60  # the user changed forgemem's hook
    settings.write_text(claude_settings(json.dumps(data)))
    result = cli("uninstall", "claude-code")
    assert result.code == 0
    assert "hooks.Stop hook was changed since install; left in place" in result.err
    assert "forgemem.md is not forgemem's; kept" in result.err
    assert (commands / "forgemem.md").read_text() == "---\ndescription: my own /forgemem\n---\nDo my thing.\n"
    left = json.loads(settings.read_text())
    assert [e for e, _ in forgemem_hooks(left)] == ["Stop"] and left["hooks"]["Stop"][0]["hooks"][0]["timeout"] == 60


def test_a_command_file_edited_after_install_is_kept(cli, claude):
    assert cli("install", "claude-code").code == 0
    command_file = claude / "commands" / "forgemem.md"
    command_file.write_text(command_file.read_text() + "\nAlso: be brief.\n")
    result = cli("uninstall", "claude-code")
    assert result.code == 0 and "forgemem.md was changed since install; kept" in result.err
    assert command_file.read_text().endswith("Also: be brief.\n")
    assert not (claude / "settings.local.json").exists()  # install created it, nothing else is in it


def test_without_a_record_only_hooks_in_forgemems_exact_form_go(cli, claude, isolated_home):
    settings = claude / "settings.local.json"
    settings.write_text(claude_settings(json.dumps(USER_SETTINGS)))
    assert cli("install", "claude-code").code == 0
    shutil.rmtree(isolated_home / ".forge" / "install")  # the record is lost
    data = json.loads(settings.read_text())
    data["hooks"]["UserPromptSubmit"][0]["hooks"].append(GUARD)
    settings.write_text(claude_settings(json.dumps(data)))
    assert cli("uninstall", "claude-code").code == 0
    left = json.loads(settings.read_text())
    assert forgemem_hooks(left) == []
    assert left["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]
    assert left["hooks"]["UserPromptSubmit"] == [{"hooks": [GUARD]}]


def test_forgemems_command_that_the_user_wrote_into_their_own_entry_stays(cli, claude):
    settings = claude / "settings.local.json"
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": AUDIT},
                                          {"type": "command", "command": f"{claude_code.forgemem_command()} hook claude-code",
                                           "timeout": 10}]}]}}
    settings.write_text(claude_settings(json.dumps(mine)))
    assert cli("install", "claude-code").code == 0
    assert json.loads(settings.read_text())["hooks"]["Stop"] == mine["hooks"]["Stop"]  # Stop runs forgemem already
    result = cli("uninstall", "claude-code")
    assert result.code == 0 and "hooks.Stop runs forgemem's hook, but install did not add it; left in place" in result.err
    assert json.loads(settings.read_text()) == mine
    assert settings.read_text() == claude_settings(json.dumps(mine))


def test_a_record_in_the_old_cache_place_is_still_used(cli, claude, isolated_home):
    assert cli("install", "claude-code").code == 0
    record = install._record_path("claude-code", claude)
    assert record.parent == isolated_home / ".forge" / "install" and oct(record.stat().st_mode)[-3:] == "600"
    legacy = isolated_home / ".forge" / "cache" / "install" / record.name
    legacy.parent.mkdir(parents=True)
    record.rename(legacy)
    assert cli("uninstall", "claude-code").code == 0
    assert not legacy.exists() and not (claude / "settings.local.json").exists() and not (claude / "commands").exists()


def test_an_older_forgemems_command_file_is_replaced_and_removed(cli, claude):
    old = ('---\ndescription: forgemem long-term memory (/forgemem help)\n'
           'argument-hint: "[list|search|show|history|graph|conflicts|forget|add|stats|help] ..."\n'
           "allowed-tools: Bash('/opt/fm/bin/forgemem' slash:*)\n---\n"
           "!`'/opt/fm/bin/forgemem' slash \"/memory $ARGUMENTS\"`\n\n"
           "Show the forgemem answer above to the user as it is, without commentary.\n")
    assert claude_code.is_old_slash_command(old)
    assert not claude_code.is_old_slash_command(old + "My own line.\n")
    (claude / "commands").mkdir()
    (claude / "commands" / "forgemem.md").write_text(old)
    assert cli("install", "claude-code").code == 0
    assert (claude / "commands" / "forgemem.md").read_text() == claude_code.SLASH_COMMAND_TEXT
    (claude / "commands" / "forgemem.md").write_text(old + "My own line.\n")
    assert cli("uninstall", "claude-code").code == 0
    assert (claude / "commands" / "forgemem.md").read_text().endswith("My own line.\n")


@pytest.mark.parametrize("text, path", [
    ('{}', []),
    ('{"a": []}', ["a"]),
    ('{\n\t"a": [\n\t\t1\n\t]\n}\n', ["a"]),
    ('{"a": [1,2]}', ["a"]),
    ('{ "x" : {"y": [ {"z": 1} ]} }', ["x", "y"]),
    ('{\n  "a": {\n    "b": 1\n  }\n}\n', ["a"]),
])
def test_jsonedit_append_then_remove_gives_the_same_bytes(text, path):
    data = json.loads(text)
    container = data
    for step in path:
        container = container[step]
    if isinstance(container, list):
        added = jsonedit.append(text, path, {"k": ["v", 1]})
        container.append({"k": ["v", 1]})
        back = jsonedit.remove(added, [*path, len(container) - 1])
    else:
        added = jsonedit.append(text, path, {"k": 1}, key="new")
        container["new"] = {"k": 1}
        back = jsonedit.remove(added, [*path, "new"])
    assert json.loads(added) == data, added
    assert back == text, (added, back)


# ------------------------------------------------------------------ Codex


def test_codex_blocks_the_user_changed_are_kept_and_reported(cli, isolated_home, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = '# my Codex settings\nmodel = "gpt-5"   # fast\n\n[mcp_servers.other]\ncommand = "other"\n'
    config.write_text(original)
    assert cli("install", "codex").code == 0
    assert cli("uninstall", "codex").code == 0 and config.read_text() == original  # untouched: byte for byte
    assert cli("install", "codex").code == 0
    installed = config.read_text()
    # the user points notify at their own program inside forgemem's block, and gives forgemem's MCP
    # server an env table of their own right after the block (so it belongs to forgemem's table)
    edited = installed.replace('notify = [', 'notify = ["/usr/local/bin/my-notify", ', 1)
    edited += '[mcp_servers.forgemem.env]\nFOO = "1"\n'
    config.write_text(edited)
    result = cli("uninstall", "codex")
    assert result.code == 0
    assert "changed since install; kept" in result.err and "belong to it; kept" in result.err
    assert config.read_text() == edited
    data = tomllib.loads(config.read_text())
    assert data["notify"][0] == "/usr/local/bin/my-notify" and data["mcp_servers"]["forgemem"]["env"] == {"FOO": "1"}
    # a block changed nowhere goes, the user's lines around it stay
    config.write_text(installed + '\n[profiles.work]\nmodel = "o3"\n')
    assert cli("uninstall", "codex").code == 0
    assert config.read_text() == original + '\n[profiles.work]\nmodel = "o3"\n'
