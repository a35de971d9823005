"""Messages that name the fix: the valid keys, and the one a typo was closest to."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Collection, Iterable
from typing import Any

from memkit._errors import ConfigError


def did_you_mean(key: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'path'?"`` for the closest choice, or ``""`` when none is close."""
    close = difflib.get_close_matches(key, sorted(choices), n=1, cutoff=0.6)
    if not close and "_" not in key:  # vectorstore -> vector_store
        close = [c for c in choices if c.replace("_", "") == key.replace("_", "").lower()][:1]
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key(where: str, key: str, valid: Collection[str]) -> str:
    """``"unknown key 'db_path' in vector_store.config (sqlite); did you mean 'path'? Valid keys: ..."``"""
    hint = did_you_mean(key, valid) or ";"
    return f"unknown key {key!r} in {where}{hint} valid keys: {', '.join(sorted(valid))}"


def keyword_parameters(factory: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword arguments ``factory`` takes, or None when it takes any (``**kwargs``)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters
                     if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))


def check_options(where: str, factory: Callable[..., Any], options: Iterable[str]) -> None:
    """Raise ConfigError naming the first option ``factory`` does not take, and the valid ones."""
    valid = keyword_parameters(factory)
    if valid is None:
        return
    for key in options:
        if key not in valid:
            raise ConfigError(unknown_key(where, key, valid))


def unknown_provider(kind: str, provider: str, choices: Iterable[str]) -> str:
    """The message for a provider name that is not registered; a model name says where it goes."""
    message = f"unknown {kind} provider {provider!r}{did_you_mean(provider, choices) or ';'} " \
              f"choose one of {sorted(choices)}"
    if kind in ("llm", "embedder"):
        section = "llm" if kind == "llm" else "embedder"
        message += (f". A model name goes in {section}.config.model, e.g. "
                    f'{{"{section}": {{"config": {{"model": "{provider}"}}}}}}')
    return message
