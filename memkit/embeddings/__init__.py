"""Embedders. ``PROVIDERS`` maps a config provider name to its class, loaded lazily."""

from memkit.embeddings.base import Embedder

PROVIDERS: dict[str, str] = {
    "local": "memkit.embeddings.local:LocalEmbedder",
    "litellm": "memkit.embeddings.litellm:LiteLLMEmbedder",
    "hash": "memkit.testing:HashEmbedder",
}

__all__ = ["PROVIDERS", "Embedder"]
