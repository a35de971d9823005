"""The LLM interface: chat messages in, text and usage out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from memkit._models import Usage

Message = dict[str, str]


@dataclass(slots=True)
class LLMResponse:
    text: str
    usage: Usage = field(default_factory=lambda: Usage(llm_calls=1))


@dataclass(slots=True)
class LLMRequest:
    """One completion: the messages and, optionally, the JSON schema the answer must follow."""

    messages: list[Message]
    json_schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    purpose: str = ""  # "extraction" | "decision" | "repair"


class LLM(ABC):
    """Implement both methods; the async one must not block the event loop."""

    @abstractmethod
    def complete(self, request: LLMRequest) -> LLMResponse: ...

    @abstractmethod
    async def acomplete(self, request: LLMRequest) -> LLMResponse: ...

    def close(self) -> None:  # noqa: B027 - optional
        """Release resources."""
