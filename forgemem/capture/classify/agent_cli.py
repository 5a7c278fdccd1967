"""The user's own agent as the classifier: `claude -p` (Claude Code) or `codex exec` (Codex).

`classifier_model: claude-cli` (or `claude-cli:MODEL`, e.g. `claude-cli:sonnet`)
runs Claude Code in print mode; `classifier_model: codex-cli` (or
`codex-cli:MODEL`) runs `codex exec`. Neither needs an API key of forgemem's:
the CLI uses the login it already has. Everything else is shared with the HTTP
classifier (`llm.ModelClassifier`): the prompt (every text redacted), the M1…Mn
references, the answer schema, the checks on every item, and the fall-back to
the offline classifier.

How the CLI is run, and kept apart from the user's own sessions (the
conversation on stdin only, a private folder outside the project,
`FORGEMEM_CLASSIFIER_RUN=1` so forgemem's hooks do nothing, hooks, tools, MCP
servers and session files off, the whole process group killed after
`classifier_timeout` seconds) is `forgemem.llm.agent_cli`'s, shared with deep
recall. A missing executable, a timeout, a non-zero exit or an answer that is
not the schema: the offline classifier decides the pass, and a note says why.
What the CLI reports it cost (Claude Code: `total_cost_usd` and tokens; Codex:
tokens) becomes a `cost: …` note, which `forgemem observe --status` prints with
the pass.
"""

from __future__ import annotations

from pathlib import Path

from forgemem.capture.classify.llm import ANSWER_SCHEMA, SYSTEM_PROMPT, ModelClassifier
from forgemem.llm import agent_cli as transport
from forgemem.llm.agent_cli import CLASSIFIER_RUN_ENV as CLASSIFIER_RUN_ENV
from forgemem.llm.agent_cli import claude_cost as claude_cost
from forgemem.llm.agent_cli import claude_envelope as claude_envelope
from forgemem.llm.agent_cli import codex_cost as codex_cost
from forgemem.llm.agent_cli import is_agent_cli as is_agent_cli
from forgemem.llm.agent_cli import parse_spec


def from_config(config, fallback) -> "AgentCLIClassifier":
    """The classifier `classifier_model: claude-cli[:MODEL]` or `codex-cli[:MODEL]` names."""
    provider, model = parse_spec(config.classifier_model)
    kind = ClaudeCLIClassifier if provider == "claude-cli" else CodexCLIClassifier
    return kind(model, float(config.classifier_timeout), fallback)


class AgentCLIClassifier(ModelClassifier):
    """A model-backed classifier whose model is an agent CLI run once per pass."""

    provider = ""
    command = ""

    def __init__(self, model: str, timeout: float, fallback):
        self.model = model
        self.timeout = timeout
        self.fallback = fallback
        self.name = f"{self.provider}:{model}" if model else self.provider

    def _call(self, prompt: str) -> tuple[object, list[str]]:
        return transport.ask(self.provider, self.model, system=SYSTEM_PROMPT, schema=ANSWER_SCHEMA, prompt=prompt,
                             data_label="The conversation", timeout=self.timeout)


class ClaudeCLIClassifier(AgentCLIClassifier):
    """`claude -p --output-format json --json-schema …`: Claude Code decides, with the user's login."""

    provider = "claude-cli"
    command = "claude"


class CodexCLIClassifier(AgentCLIClassifier):
    """`codex exec --output-schema FILE -o FILE -`: Codex decides, with the user's login."""

    provider = "codex-cli"
    command = "codex"


# ------------------------------------------------------------------ what `forgemem install` says


def install_note(agent: str, open_workspace) -> str:
    """One line after `forgemem install claude-code|codex`: which classifier capture uses, and how to switch.

    `open_workspace`: returns the workspace whose configuration applies (its
    failure only makes the note less specific).
    """
    wanted, tool = ("claude-cli", "Claude Code") if agent == "claude-code" else ("codex-cli", "Codex")
    where = "~/.forge/config.yaml"
    try:
        workspace = open_workspace()
        spec = workspace.config.classifier_model.strip()
        if "user" in workspace.stores:
            path = workspace.stores["user"].config_path
            try:
                where = "~/" + path.relative_to(Path.home()).as_posix()
            except ValueError:
                where = str(path)
    except Exception:  # noqa: BLE001 - the note is advice; install has already done its work
        spec = ""
    if not spec:
        return (f"capture uses the offline classifier; set memory.classifier_model: {wanted} in {where} "
                f"to have {tool} itself decide what to remember (docs/capture.md)")
    if spec.partition(":")[0] == wanted:
        return (f"capture uses {tool} itself (classifier_model: {spec}); "
                f"remove that setting from {where} to go back to the offline classifier")
    return (f"capture uses classifier_model: {spec}; set it to {wanted} in {where} to have {tool} itself "
            f"decide, or remove it for the offline classifier")
