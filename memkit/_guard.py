"""The switch that makes real model requests fail (used by test suites)."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlparse

from memkit._errors import LLMError

_blocked = False


def set_blocked(value: bool) -> bool:
    global _blocked
    previous, _blocked = _blocked, value
    return previous


def _is_loopback(api_base: str | None) -> bool:
    if not api_base:
        return False
    host = urlparse(api_base).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_request(kwargs: dict[str, Any]) -> None:
    """Raise when requests are blocked and this one would leave the machine."""
    if _blocked and "mock_response" not in kwargs and not _is_loopback(kwargs.get("api_base")):
        raise LLMError(
            f"a real model request to {kwargs.get('model')!r} was blocked: "
            "memkit.testing.block_real_requests() is active (use memkit.testing doubles, "
            "litellm's mock_response, or a server on 127.0.0.1)"
        )
