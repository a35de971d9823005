"""Public results of indexing notes and of the startup briefing."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memkit._models import MemoryItem, ResultModel


class SkippedFile(ResultModel):
    """A markdown file the indexer left out, and why (too large, not UTF-8, unreadable)."""

    path: str
    reason: str


class IndexResult(ResultModel):
    """The outcome of ``Memory.index_folder``, in chunks (sections of notes): ``added`` new
    or changed ones (embedded), ``moved`` ones whose text is unchanged but whose lines or
    heading changed (not re-embedded), ``removed`` ones no longer in the folder (their
    memories ended, as ``delete`` ends one), ``unchanged`` ones; ``files`` indexed and
    ``skipped`` with the reason."""

    folder: str
    files: int = 0
    added: int = 0
    moved: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: list[SkippedFile] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the index changed."""
        return bool(self.added or self.moved or self.removed)


Section = Literal["task", "startup", "important"]


class StartupItem(ResultModel):
    """One memory of a startup briefing and the section it is in: an open ``task``, a
    memory marked ``surface="startup"``, or one of the most ``important``."""

    section: Section
    memory: MemoryItem
    tokens: int


class StartupContext(ResultModel):
    """What ``Memory.startup_context`` returns: ``text`` ready for a system prompt and the
    ``items`` it shows, within ``budget_tokens`` (``tokens`` used, counted as characters
    / 4); ``omitted``: memories that did not fit."""

    text: str
    items: list[StartupItem] = Field(default_factory=list)
    tokens: int = 0
    budget_tokens: int
    omitted: int = 0

    def __str__(self) -> str:
        return self.text
