"""Request and response bodies of the REST API (responses reuse memkit's result models)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from memkit._models import MemoryItem

SearchMode = Literal["hybrid", "vector", "keyword"]
ENTITY_FILTER = ("Only the memories about this entity (name, alias or id; needs a graph "
                 "store): behind its relations or linked on add.")


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(RequestBody):
    role: Literal["system", "user", "assistant", "tool", "function", "developer"] = "user"
    content: str
    name: str | None = None


class AddBody(RequestBody):
    """The parameters of ``Memory.add``."""

    messages: str | list[Message] = Field(
        description="A string (one user message) or a list of {role, content, name?}."
    )
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)
    metadata: dict[str, Any] | None = None
    infer: bool = Field(True, description="Let the LLM extract and curate facts; false stores "
                                          "each message verbatim.")
    timestamp: datetime | None = Field(
        None, description="When the conversation happened (ISO 8601 or epoch seconds).")
    prompt: str | None = Field(None, description="Overrides the fact-extraction prompt.")
    filters: dict[str, Any] | None = Field(
        None, description="Narrows which existing memories the LLM may update or delete.")
    on_error: Literal["raise", "degrade"] | None = Field(
        None, description='"degrade" reports LLM and embedding failures in errors and stores '
                          "what it can; default: the server's configuration (raise).")
    expires_at: datetime | None = Field(
        None, description="After this the memories are hidden unless asked for.")
    dry_run: bool = Field(False, description="Return the decided operations; apply nothing.")
    memory_type: str | None = Field(None, description='e.g. "task" (with a status, open at '
                                                      'first), "preference", "fact".')
    importance: float | None = Field(None, ge=0, le=1)
    confidence: float | None = Field(None, ge=0, le=1, description="Where the memories' "
                                     "confidence starts (default 1).")
    surface: Literal["startup"] | None = Field(
        None, description='"startup": shown in the startup briefing (GET /v1/startup/).')
    entities: list[str] | None = Field(
        None, max_length=100, description="Entities (names or ids) the memories are about: "
        "linked to them in the graph, created when new (needs a graph store).")


class ScopeBody(RequestBody):
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)


class SearchBody(RequestBody):
    query: str = Field(validation_alias=AliasChoices("query", "q"),
                       description="What to look for (``q`` is accepted too, as in the GET route).")
    user_id: str | None = Field(None, min_length=1)
    agent_id: str | None = Field(None, min_length=1)
    run_id: str | None = Field(None, min_length=1)
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=100_000, description="Skip this many results: keep "
                        "``limit`` and step ``offset`` by it to read the next page.")
    filters: dict[str, Any] | None = None
    threshold: float | None = Field(None, ge=0, le=1)
    min_confidence: float | None = Field(None, ge=0, le=1, description="Drop memories whose "
                                         "confidence is below this.")
    mode: SearchMode | None = None
    as_of: datetime | None = Field(None, description="Search what was valid then (default: now).")
    include_expired: bool = False
    graph: bool | None = None  # graph expansion; default: on when a graph store is configured
    rerank: bool = Field(False, description="Reorder the best results with the server's "
                                            "configured reranker.")
    entity: str | None = Field(None, min_length=1, description=ENTITY_FILTER)
    scopes: list[ScopeBody] | None = Field(
        default=None, min_length=1, max_length=20,
        description="Search these scopes at once (instead of user_id/agent_id/run_id); each "
                    "must be within the API key's scope.")


class SupersedeBody(RequestBody):
    """The text of the memory that replaces this one (a new id)."""

    text: str = Field(min_length=1, description="The memory's new text.")
    metadata: dict[str, Any] | None = Field(None, description="Merged into the metadata.")
    expires_at: datetime | None = Field(None, description="A new expiry.")


class UpdateBody(RequestBody):
    text: str | None = Field(None, min_length=1, description="The memory's new text (leave "
                             "out to change only the other fields, in place).")
    metadata: dict[str, Any] | None = Field(None, description="Merged into the metadata.")
    expires_at: datetime | None = Field(None, description="A new expiry.")
    memory_type: str | None = None
    importance: float | None = Field(None, ge=0, le=1)
    confidence: float | None = Field(None, ge=0, le=1)
    surface: Literal["startup"] | None = None


class MemoryPage(RequestBody):
    results: list[MemoryItem]
    offset: int
    limit: int
    next_offset: int | None = Field(description="Pass as ``offset`` for the next page; "
                                                "null on the last page.")


class Deleted(RequestBody):
    deleted: int


class ErrorDetail(RequestBody):
    type: str
    message: str


class ErrorBody(RequestBody):
    error: ErrorDetail
