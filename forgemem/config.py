"""Configuration: `.forge/config.yaml` (repo) over `~/.forge/config.yaml` (user) over defaults."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

CONFIG_NAME = "config.yaml"


@dataclass(frozen=True)
class Config:
    cadence_turns: int = 5
    classifier_model: str = ""
    classifier_base_url: str = ""
    classifier_api_key_env: str = ""
    classifier_timeout: int = 30
    embedding_model: str = ""
    retrieval_top_k: int = 10
    retrieval_hop_depth: int = 1
    context_budget_tokens: int = 1500
    hook_timeout_ms: int = 2000
    capture_review: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: For each key: its type and the allowed range (inclusive) where one applies.
_RULES: dict[str, tuple[type, tuple[int, int] | None]] = {
    "cadence_turns": (int, (1, 10)),
    "classifier_model": (str, None),
    "classifier_base_url": (str, None),
    "classifier_api_key_env": (str, None),
    "classifier_timeout": (int, (1, 600)),
    "embedding_model": (str, None),
    "retrieval_top_k": (int, (1, 1000)),
    "retrieval_hop_depth": (int, (0, 5)),
    "context_budget_tokens": (int, (0, 100_000)),
    "hook_timeout_ms": (int, (50, 60_000)),
    "capture_review": (bool, None),
}
assert set(_RULES) == {f.name for f in fields(Config)}


def default_config_text() -> str:
    """The file `forgemem init` writes: every key with its default."""
    lines = ["# forgemem configuration; see docs/format.md#configuration", "memory:"]
    for key, value in Config().to_dict().items():
        if isinstance(value, bool):
            lines.append(f"  {key}: {str(value).lower()}")
        else:
            lines.append(f"  {key}: {value!r}" if isinstance(value, str) else f"  {key}: {value}")
    return "\n".join(lines).replace("''", '""') + "\n"


def read_config_file(path: Path) -> dict[str, Any]:
    """The `memory:` settings of one file, checked; {} when the file is absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must be a mapping with a 'memory' key")
    unknown = [key for key in data if key != "memory"]
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
    return {int: "a whole number", str: "a string", bool: "true or false"}[kind]


def load_config(*paths: Path | None) -> Config:
    """Merge config files; later paths win over earlier ones (pass user, then repo)."""
    settings: dict[str, Any] = {}
    for path in paths:
        if path is not None:
            settings.update(read_config_file(path))
    return Config(**settings)
