"""Lazy imports: optional dependencies load on first use, with an install hint."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from types import ModuleType
from typing import Any


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency or raise ImportError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module!r} is not installed; install it with: pip install 'memkit-ai[{extra}]'"
        ) from exc


def load_object(path: str) -> Any:
    """``"package.module:Name"`` -> the object."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def import_litellm() -> Any:
    """litellm, imported so that it does not fetch its price list from the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm: Any = require("litellm", "core")
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


async def aimport_litellm() -> Any:
    """:func:`import_litellm` for the async path: the first import takes a second or more,
    so it runs in a worker thread instead of stalling the event loop."""
    if "litellm" in sys.modules:
        return import_litellm()
    return await asyncio.to_thread(import_litellm)
