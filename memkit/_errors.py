"""The exceptions memkit raises. Every one derives from :class:`MemkitError`."""

from __future__ import annotations

#: how to go on without an LLM, as Python says it; the CLI says ``--no-infer`` instead
NO_LLM_FIX = "call add with infer=False"
NO_LLM_FIX_CLI = "run memkit add with --no-infer"


class MemkitError(Exception):
    """Base class of every memkit error."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__ == __name__:  # tracebacks say memkit.LLMError, where users import it from
            cls.__module__ = "memkit"


MemkitError.__module__ = "memkit"


class ScopeError(MemkitError, ValueError):
    """No user_id, agent_id or run_id was given where one is required."""

    def __init__(self, message: str = "At least one of user_id, agent_id, or run_id must be provided"):
        super().__init__(message)


class FilterError(MemkitError, ValueError):
    """A filter is malformed, or a store cannot run it exactly."""


class ConfigError(MemkitError, ValueError):
    """The configuration is invalid or does not match what is stored."""


class VectorStoreError(MemkitError):
    """The vector store failed."""


class LLMError(MemkitError):
    """An LLM call failed (after retries, where retrying made sense)."""


class EmbeddingError(MemkitError):
    """An embedding call failed, or returned vectors of the wrong shape."""


class ConflictError(MemkitError, ValueError):
    """The change conflicts with what is stored: a version already superseded, an event
    already reverted."""


class NotFoundError(MemkitError, KeyError):
    """No memory has the given id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"
