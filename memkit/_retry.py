"""Retry transient provider failures; fail at once on the rest."""

from __future__ import annotations

from typing import Any

from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from memkit._errors import MemkitError

_TRANSIENT_NAMES = {
    "RateLimitError", "Timeout", "APITimeoutError", "APIConnectionError",
    "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
}


def is_transient(exc: BaseException) -> bool:
    """Rate limits, timeouts, connection errors and 5xx answers."""
    if isinstance(exc, MemkitError):
        return False
    if any(c.__name__ in _TRANSIENT_NAMES for c in type(exc).__mro__):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def _policy(retries: int, wait: float) -> dict[str, Any]:
    return {
        "retry": retry_if_exception(is_transient),
        "stop": stop_after_attempt(retries + 1),
        "wait": wait_random_exponential(multiplier=wait, max=max(wait * 16, wait)),
        "reraise": True,
    }


def retrying(retries: int = 3, wait: float = 0.5) -> Retrying:
    return Retrying(**_policy(retries, wait))


def async_retrying(retries: int = 3, wait: float = 0.5) -> AsyncRetrying:
    return AsyncRetrying(**_policy(retries, wait))


def describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    prefix = f"{type(exc).__name__}" + (f" ({status})" if status else "")
    return f"{prefix}: {exc}"
