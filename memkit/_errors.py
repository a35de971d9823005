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


class InvalidArgument(MemkitError, ValueError):
    """An argument is invalid: of the wrong type, out of range, malformed or too large.
    Nothing was changed; the same call fails the same way again."""


class ScopeError(InvalidArgument):
    """No user_id, agent_id or run_id was given where one is required."""

    def __init__(self, message: str = "At least one of user_id, agent_id, or run_id must be provided"):
        super().__init__(message)


class FilterError(InvalidArgument):
    """A filter is malformed, or a store cannot run it exactly."""


class ConfigError(MemkitError, ValueError):
    """The configuration is invalid or does not match what is stored."""


class StoreError(MemkitError):
    """A storage engine failed (unreachable, timed out, an I/O error): the same call may
    succeed later. REST answers 503 with ``Retry-After``."""


class VectorStoreError(StoreError):
    """The vector store failed."""


class GraphStoreError(StoreError):
    """The graph store's engine failed."""


class GraphError(InvalidArgument):
    """A graph operation that cannot be done as asked: a bad entity name or relation type,
    a relation from an entity to itself, a depth out of range."""


class LLMError(MemkitError):
    """An LLM call failed (after retries, where retrying made sense)."""


class EmbeddingError(MemkitError):
    """An embedding call failed, or returned vectors of the wrong shape."""


class ConflictError(MemkitError, ValueError):
    """The change conflicts with what is stored: a version already superseded, an event
    already reverted."""


class StaleVersionError(ConflictError):
    """``update(..., if_updated_at=...)`` found the memory changed since that version (another
    writer updated it meanwhile): nothing was changed. Read it again, then decide. REST
    answers 412 Precondition Failed to an ``If-Match`` that no longer matches."""


class ClosedError(MemkitError, RuntimeError):
    """The ``Memory`` or ``AsyncMemory`` was closed (``close()``, ``aclose()``, or the end of
    its ``with`` block): nothing was read or changed. Create a new one to go on; closing
    again is harmless."""

    def __init__(self, message: str = "this memory is closed (by close(), aclose() or the end of "
                                      "its with block); create a new one to go on") -> None:
        super().__init__(message)


class NotFoundError(MemkitError, KeyError):
    """No memory has the given id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"
