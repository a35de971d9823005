"""Environment fallbacks for where a server is (``QDRANT_URL``, ``CHROMA_HOST``, ...).

A store or graph reads them only for what its config leaves out: an explicit
value always wins, and a store given any address of its own (a ``path``, a
``url``, a ``host``) reads none of them.
"""

from __future__ import annotations

import os

from memkit._errors import ConfigError


def env(*names: str) -> str | None:
    """The first of ``names`` set to a non-empty value in the environment, or ``None``."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def env_port(name: str) -> int | None:
    """A port number from ``name``, or ``None``; anything but a port raises ``ConfigError``."""
    value = env(name)
    if value is None:
        return None
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ConfigError(f"{name}={value!r} is not a port number")
    return int(value)
