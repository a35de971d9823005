"""LLMs. ``PROVIDERS`` maps a config provider name to its class, loaded lazily."""

from memkit.llms.base import LLM, LLMRequest, LLMResponse

PROVIDERS: dict[str, str] = {
    "litellm": "memkit.llms.litellm:LiteLLM",
}

__all__ = ["LLM", "PROVIDERS", "LLMRequest", "LLMResponse"]
