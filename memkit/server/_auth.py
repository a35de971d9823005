"""API keys and the scope each one grants; pure functions, no HTTP."""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memkit._errors import ConfigError

SCOPE_FIELDS = ("user_id", "agent_id", "run_id")


class Grant(BaseModel):
    """What one API key may do. A scope field set here binds the key to that value;
    a grant with no scope field may use any scope; only ``admin`` may reset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    admin: bool = False

    @property
    def bound(self) -> dict[str, str]:
        return {f: v for f in SCOPE_FIELDS if (v := getattr(self, f)) is not None}

    def can_see(self, scope: Mapping[str, Any]) -> bool:
        """Whether a memory with this scope is within the grant."""
        return all(scope.get(f) == v for f, v in self.bound.items())


#: the grant of every request when no key is configured (loopback clients only)
LOCAL_GRANT = Grant(admin=True)


class ScopeForbidden(Exception):
    """A request names a scope outside its key's grant."""


def parse_keys(raw: object, source: str) -> dict[str, Grant]:
    """``{key: grant}`` from a mapping (or its JSON text), with errors naming ``source``."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source} must map each API key to its grant, got {type(raw).__name__}")
    keys: dict[str, Grant] = {}
    for key, grant in raw.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{source}: API keys must be non-empty strings")
        try:
            keys[key] = Grant.model_validate(grant or {})
        except ValidationError as exc:
            raise ConfigError(f"{source}: invalid grant for a key: {exc}") from None
    return keys


def load_keys(
    api_keys: Mapping[str, Any] | None, config: Mapping[str, Any] | None
) -> dict[str, Grant]:
    """Keys from the argument, else the config's ``server.api_keys``, else ``MEMKIT_API_KEYS``."""
    if api_keys is not None:
        return parse_keys(api_keys, "api_keys")
    server = (config or {}).get("server") or {}
    if isinstance(server, Mapping) and server.get("api_keys") is not None:
        return parse_keys(server["api_keys"], "server.api_keys")
    env = os.environ.get("MEMKIT_API_KEYS")
    if env:
        return parse_keys(env, "MEMKIT_API_KEYS")
    return {}


def find_grant(keys: Mapping[str, Grant], token: str) -> Grant | None:
    """The grant of ``token``, comparing in constant time against every key."""
    found: Grant | None = None
    for key, grant in keys.items():
        if hmac.compare_digest(key.encode(), token.encode()):
            found = grant
    return found


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def scope_for(grant: Grant, **requested: str | None) -> dict[str, str | None]:
    """The scope a request runs in: what it asked for, with the key's binding forced in.

    Asking for another value of a bound field raises :class:`ScopeForbidden`.
    """
    scope = {f: requested.get(f) for f in SCOPE_FIELDS}
    for field, value in grant.bound.items():
        if scope[field] is not None and scope[field] != value:
            raise ScopeForbidden(f"this API key may only use {field}={value!r}")
        scope[field] = value
    return scope
