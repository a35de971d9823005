"""Retry transient provider failures; fail at once on the rest."""

from __future__ import annotations

import re
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


_AUTH_NAMES = {"AuthenticationError", "PermissionDeniedError"}
# litellm reports a missing OpenAI key as a 500 "InternalServerError"; its text says what it is.
_AUTH_TEXT = re.compile(
    r"missing credentials|api_key client option must be set"
    r"|(missing|no|invalid|incorrect) api[ _-]?key",
    re.IGNORECASE,
)


def is_auth_error(exc: BaseException) -> bool:
    """A missing, invalid or unauthorised key: retrying cannot help."""
    if any(c.__name__ in _AUTH_NAMES for c in type(exc).__mro__):
        return True
    if getattr(exc, "status_code", None) in (401, 403):
        return True
    return _AUTH_TEXT.search(str(exc)[:4000]) is not None


_REFUSED = re.compile(r"connection refused|errno 111|name or service not known|nodename nor servname",
                      re.IGNORECASE)


def is_refused(exc: BaseException) -> bool:
    """Nothing listens at the address (or the host name does not resolve): retrying cannot help.
    Providers often wrap the socket's error ("Connection error."), so the chain is read too."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or _REFUSED.search(str(seen)[:4000]):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def is_transient(exc: BaseException) -> bool:
    """Rate limits, timeouts, connection errors and 5xx answers; never an auth error, nor a
    connection that nothing at the address accepts."""
    if isinstance(exc, MemkitError) or is_auth_error(exc) or is_refused(exc):
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


def failure(what: str, exc: BaseException, fix: str) -> str:
    """The message for a failed provider call; an auth failure leads with ``fix``."""
    if is_auth_error(exc):
        return f"{what} failed: no valid API key. {fix} ({describe(exc)})"
    return f"{what} failed: {describe(exc)}"


def describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    prefix = f"{type(exc).__name__}" + (f" ({status})" if status else "")
    return f"{prefix}: {exc}"


def provider_failure(litellm: Any, what: str, model: str, api_base: str | None, exc: BaseException,
                     fallback: tuple[str, str]) -> str:
    """The message for a failed litellm call, naming the fix: the provider's own key variable
    (``fallback``: the config key for a key, and what works without one), or the address
    that refused the connection."""
    if is_refused(exc) and not is_auth_error(exc):
        try:
            url = api_base or litellm.get_llm_provider(model)[3]
        except Exception:  # litellm cannot tell where this model lives
            url = api_base
        where = f" at {url}" if url else ""
        return f"{what} failed: nothing accepted the connection{where}. Is the server running? ({describe(exc)})"
    try:
        missing = list(litellm.validate_environment(model).get("missing_keys") or [])
    except Exception:  # litellm cannot tell for this model
        missing = []
    variable = " or ".join(missing) if missing else "its provider's API key variable"
    key_setting, alternative = fallback
    return failure(what, exc, f"Set {variable} (or {key_setting}), or {alternative}.")
