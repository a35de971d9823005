"""What a pipeline asks its driver to do. Pure data; no I/O happens here."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from memkit._filters import Filter
from memkit.llms.base import LLMRequest
from memkit.stores.base import Vector, WriteBatch


@dataclass(frozen=True, slots=True)
class Complete:
    """-> LLMResponse"""

    request: LLMRequest


@dataclass(frozen=True, slots=True)
class Embed:
    """-> float32 matrix, one normalised row per text"""

    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Search:
    """-> list[Hit]"""

    vector: Vector
    limit: int
    filter: Filter | None


@dataclass(frozen=True, slots=True)
class KeywordSearch:
    """-> list[Hit]"""

    text: str
    limit: int
    filter: Filter | None


@dataclass(frozen=True, slots=True)
class Get:
    """-> Record | None"""

    id: str


@dataclass(frozen=True, slots=True)
class ListRecords:
    """-> (list[Record], next cursor)"""

    filter: Filter | None
    limit: int
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class Apply:
    """-> set of add ids skipped as duplicates"""

    batch: WriteBatch


@dataclass(frozen=True, slots=True)
class ReadHistory:
    """-> list[HistoryRecord]"""

    memory_id: str


@dataclass(frozen=True, slots=True)
class Reset:
    """-> None"""


Effect: TypeAlias = (
    Complete | Embed | Search | KeywordSearch | Get | ListRecords | Apply | ReadHistory | Reset
)
T = TypeVar("T")
Flow: TypeAlias = Generator[Effect, Any, T]
