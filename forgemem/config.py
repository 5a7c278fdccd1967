"""Configuration: `.forge/config.yaml` (repo) over `~/.forge/config.yaml` (user) over defaults.

One exception to the layering: settings that decide where data is sent, which
secret is used or what code is loaded (`USER_ONLY`: the classifier model, its
base URL and API-key variable, the embedding model folder, MCP writes to the
user store) come only from the user's own config, or from a repository config
the user has trusted (`forgemem trust`). A repository someone else wrote can
change how often capture runs, never where it sends what it reads.

Trust is recorded in the user's config, keyed by the repository config's path
and the SHA-256 of its bytes (as direnv's `allow` and mise's `trust` do): a
trusted config that changes is untrusted again until the user looks at it.

    trusted:
      - path: /home/me/project/.forge/config.yaml
        sha256: 3a7bd3e2…
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from forgemem.environment import (  # noqa: F401 - where things live, the environment: used from here
    CACHE_DIR,
    FORGE_DIR,
    MEMORY_DIR,
    classifier_run,
    debug,
    embeddings_disabled,
    forge_home,
    model_cache_override,
    repo_dir_override,
    server_enabled,
    server_socket_path,
    user_cache_dir,
    user_dir_override,
)
from forgemem.errors import ConfigError

CONFIG_NAME = "config.yaml"


@dataclass(frozen=True)
class Config:
    cadence_turns: int = 5
    classifier_model: str = ""
    classifier_base_url: str = ""
    classifier_api_key_env: str = ""
    classifier_timeout: int = 30
    deep_timeout_seconds: int = 20  # `recall --deep`: one request to the classifier model, no retry
    embedding_model: str = ""
    retrieval_top_k: int = 10
    retrieval_hop_depth: int = 1
    context_budget_tokens: int = 1500
    hook_timeout_ms: int = 2000
    hook_repeat_memories: bool = False
    #: hits scoring under this relevance (a probability, docs/recall.md) are not shown or injected
    recall_floor: float = 0.25
    capture_review: bool = False
    mcp_user_writes: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: For each key: its type and the allowed range (inclusive) where one applies.
_RULES: dict[str, tuple[type, tuple[float, float] | None]] = {
    "cadence_turns": (int, (1, 10)),
    "classifier_model": (str, None),
    "classifier_base_url": (str, None),
    "classifier_api_key_env": (str, None),
    "classifier_timeout": (int, (1, 600)),
    "deep_timeout_seconds": (int, (1, 600)),
    "embedding_model": (str, None),
    "retrieval_top_k": (int, (1, 1000)),
    "retrieval_hop_depth": (int, (0, 5)),
    "context_budget_tokens": (int, (0, 100_000)),
    "hook_timeout_ms": (int, (50, 60_000)),
    "hook_repeat_memories": (bool, None),
    "recall_floor": (float, (0.0, 1.0)),
    "capture_review": (bool, None),
    "mcp_user_writes": (bool, None),
}
assert set(_RULES) == {f.name for f in fields(Config)}

#: Settings a repository config may set only when the user trusts it.
USER_ONLY = ("classifier_model", "classifier_base_url", "classifier_api_key_env", "embedding_model",
             "mcp_user_writes")
assert set(USER_ONLY) <= set(_RULES)


def default_config_text(user: bool = False) -> str:
    """The file `forgemem init` writes: every key a repository may set, commented out at its default
    (a value written here would override the user's own config for that key in this repository); for the
    user's own `~/.forge/config.yaml` (`user`), every key."""
    lines = [
        "# forgemem configuration for this repository; see docs/format.md#configuration",
        "# Uncomment a setting to change it here (this file wins over ~/.forge/config.yaml).",
        "# The classifier, embedding model and MCP settings belong in ~/.forge/config.yaml.",
        "memory:",
    ] if not user else [
        "# your own forgemem configuration, for every repository; see docs/format.md#configuration",
        "# Uncomment a setting to change it (a repository's .forge/config.yaml wins over this file, except for",
        "# the classifier, embedding model and MCP settings, which a repository sets only once you trust it).",
        "memory:",
    ]
    for key, value in Config().to_dict().items():
        if key in USER_ONLY and not user:
            continue
        if isinstance(value, bool):
            lines.append(f"  # {key}: {str(value).lower()}")
        else:
            lines.append(f"  # {key}: {value!r}" if isinstance(value, str) else f"  # {key}: {value}")
    return "\n".join(lines).replace("''", '""') + "\n"


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


def read_config_file(path: Path, data: bytes | None = None, user: bool = False) -> dict[str, Any]:
    """The `memory:` settings of one file, checked; {} when the file is absent.

    `user`: the user's own config, which may also hold the `trusted:` list.
    """
    if data is None:
        data = _read_bytes(path)
        if data is None:
            return {}
    return _settings(path, _parse_yaml(path, data), user)


def _parse_yaml(path: Path, raw: bytes) -> Any:
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8") from None
    import yaml  # here, not at the top: a run without config files never loads PyYAML

    from forgemem.yamlsafe import unsafe_yaml_reason

    reason = unsafe_yaml_reason(text)
    if reason:
        raise ConfigError(f"config file {path}: {reason}")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}") from None
    except RecursionError:
        raise ConfigError(f"config file {path}: the YAML is nested too deeply") from None


def _settings(path: Path, data: Any, user: bool) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must be a mapping with a 'memory' key")
    allowed = ("memory", "trusted") if user else ("memory",)
    unknown = [key for key in data if key not in allowed]
    if unknown:
        raise ConfigError(f"config file {path}: unknown key '{unknown[0]}' (expected 'memory')")
    section = data.get("memory") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"config file {path}: 'memory' must be a mapping of settings")
    settings: dict[str, Any] = {}
    for key, value in section.items():
        if key not in _RULES:
            raise ConfigError(
                f"config file {path}: unknown key 'memory.{key}' "
                f"(known: {', '.join(_RULES)})"
            )
        kind, bounds = _RULES[key]
        if value is None and kind is str:
            value = ""
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise ConfigError(
                f"config file {path}: 'memory.{key}' must be {_kind_name(kind)}, not {value!r}"
            )
        if bounds and not bounds[0] <= value <= bounds[1]:
            raise ConfigError(
                f"config file {path}: 'memory.{key}' must be from {bounds[0]} to {bounds[1]}, "
                f"not {value}"
            )
        settings[key] = value
    return settings


def _kind_name(kind: type) -> str:
    return {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}[kind]


MAX_CONFIG_BYTES = 64 * 1024


def load_config(*paths: Path | None) -> Config:
    """Merge config files, later paths over earlier ones, every setting allowed (no trust rules).

    For a workspace, `load_layers` is what applies: it keeps a repository's
    config from choosing where data goes.
    """
    settings: dict[str, Any] = {}
    for path in paths:
        if path is not None:
            settings.update(read_config_file(path))
    return Config(**settings)


@dataclass(frozen=True)
class Layers:
    """The effective configuration of a workspace and what was left out of it."""

    config: Config
    warnings: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # USER_ONLY keys an untrusted repository config set


def load_layers(user_path: Path | None, repo_path: Path | None) -> Layers:
    """Defaults, then the user's config, then the repository's (its USER_ONLY keys only if trusted)."""
    settings: dict[str, Any] = {}
    trusted: list[dict] = []
    if user_path is not None:
        raw = _read_bytes(user_path)
        if raw is not None:
            data = _parse_yaml(user_path, raw)
            settings.update(_settings(user_path, data, user=True))
            trusted = _trusted_entries(user_path, data)
    if repo_path is None:
        return Layers(Config(**settings))
    raw = _read_bytes(repo_path)
    if raw is None:
        return Layers(Config(**settings))
    repo = read_config_file(repo_path, raw)
    wanted = {k: v for k, v in repo.items() if k in USER_ONLY and v != getattr(Config(), k)}
    if wanted and is_trusted(repo_path, raw, trusted):
        settings.update(repo)
        return Layers(Config(**settings))
    settings.update({k: v for k, v in repo.items() if k not in USER_ONLY})
    if not wanted:
        return Layers(Config(**settings))
    keys = ", ".join(sorted(wanted))
    changed = any(_same_path(entry.get("path"), repo_path) for entry in trusted)
    why = "it changed since you trusted it" if changed else "you have not trusted this repository"
    warning = (
        f"ignoring {keys} from {repo_path}: {why}. These settings decide where your conversations "
        f"and keys are sent; read that file, then run `forgemem trust` to use them"
    )
    return Layers(Config(**settings), (warning,), tuple(sorted(wanted)))


# ------------------------------------------------------------------ trust


def config_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _same_path(recorded: Any, path: Path) -> bool:
    if not isinstance(recorded, str):
        return False
    try:
        return Path(recorded) == path.resolve()
    except OSError:
        return False


def _trusted_entries(user_path: Path, data: Any) -> list[dict]:
    entries = data.get("trusted") if isinstance(data, dict) else None
    if entries is None:
        return []
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("sha256"), str)
        for e in entries
    ):
        raise ConfigError(f"config file {user_path}: 'trusted' must be a list of {{path, sha256}} entries")
    return entries


def is_trusted(repo_path: Path, raw: bytes, entries: list[dict]) -> bool:
    digest = config_digest(raw)
    return any(_same_path(e["path"], repo_path) and e["sha256"] == digest for e in entries)


def trusted_entries(user_path: Path) -> list[dict]:
    """The `trusted:` list of the user's config."""
    raw = _read_bytes(user_path)
    if raw is None:
        return []
    return _trusted_entries(user_path, _parse_yaml(user_path, raw))


def set_trust(user_path: Path, repo_path: Path, trust: bool) -> tuple[bool, str | None]:
    """Trust (or stop trusting) a repository config; returns (changed, its digest).

    Only the `trusted:` block of the user's config is rewritten; everything
    else in that file keeps its bytes (comments included).
    """
    from forgemem.permissions import atomic_write_text

    repo_path = repo_path.resolve()
    raw = _read_bytes(repo_path)
    if trust and raw is None:
        raise ConfigError(f"there is no config file at {repo_path} to trust")
    if raw is not None:
        read_config_file(repo_path, raw)  # never trust a file that does not load
    digest = config_digest(raw) if raw is not None else None
    entries = [e for e in trusted_entries(user_path) if not _same_path(e["path"], repo_path)]
    before = trusted_entries(user_path)
    if trust:
        entries.append({"path": str(repo_path), "sha256": digest})
    if entries == before:
        return False, digest
    text = (_read_bytes(user_path) or b"").decode("utf-8")
    atomic_write_text(user_path, _replace_trusted_block(text, entries))
    return True, digest


def _replace_trusted_block(text: str, entries: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith("trusted:")), None)
    if start is None:
        kept, rest = lines, []
    else:
        end = start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#-"):
            end += 1
        kept, rest = lines[:start], lines[end:]
    if kept and not kept[-1].endswith("\n"):
        kept[-1] += "\n"
    block = []
    if entries:
        block = ["trusted:  # repository configs allowed to choose the classifier and models (forgemem trust)\n"]
        for entry in entries:
            block.append(f"  - path: {json.dumps(entry['path'], ensure_ascii=False)}\n")
            block.append(f"    sha256: {entry['sha256']}\n")
    return "".join(kept + block + rest)
