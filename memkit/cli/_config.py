"""Where the CLI's configuration comes from: flags over a file over ``MEMKIT_CONFIG``."""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memkit._errors import ConfigError

#: top-level config sections the CLI reads that are not part of ``MemoryConfig``
EXTRA_SECTIONS = ("server", "mcp")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A JSON or YAML (``.yaml``/``.yml``) file holding a config object."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc}") from None
    if file.suffix.lower() in (".yaml", ".yml"):
        try:
            yaml = importlib.import_module("yaml")
        except ImportError:
            raise ConfigError("YAML config files need PyYAML: pip install pyyaml") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{file} is not valid YAML: {exc}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file} must hold an object at the top level")
    return data


def _from_env() -> dict[str, Any]:
    """``MEMKIT_CONFIG``: a path to a config file, or the JSON itself."""
    value = os.environ.get("MEMKIT_CONFIG", "").strip()
    if not value:
        return {}
    if value.startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"MEMKIT_CONFIG is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError("MEMKIT_CONFIG must hold a JSON object")
        return data
    return read_config_file(value)


@dataclass(slots=True)
class Settings:
    """The global options of ``memkit``."""

    config: str | None = None
    store: str | None = None
    path: str | None = None
    embedder: str | None = None
    llm_model: str | None = None
    verbose: int = 0
    """``-v``: servers log requests and library INFO lines; ``-vv``: DEBUG."""

    @property
    def log_level(self) -> Literal["DEBUG", "INFO", "WARNING"]:
        return "WARNING" if self.verbose <= 0 else "INFO" if self.verbose == 1 else "DEBUG"

    def resolve(self) -> dict[str, Any]:
        """The full config dict (including the ``server`` and ``mcp`` sections)."""
        data = read_config_file(self.config) if self.config else _from_env()
        data = dict(json.loads(json.dumps(data)))  # a deep copy we may change
        if self.store or self.path:
            section = _section(data, "vector_store")
            if self.store:
                if section.get("provider") != self.store:
                    section["config"] = {}
                section["provider"] = self.store
            if self.path:
                section.setdefault("config", {})["path"] = self.path
        if self.embedder:
            _section(data, "embedder")["provider"] = self.embedder
        if self.llm_model:
            _section(data, "llm").setdefault("config", {})["model"] = self.llm_model
        return data


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    if isinstance(value, str):
        value = {"provider": value}
    if not isinstance(value, dict):
        value = {}
    data[name] = value
    return value


def memory_config(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the sections that are not ``MemoryConfig``'s."""
    return {k: v for k, v in data.items() if k not in EXTRA_SECTIONS}
