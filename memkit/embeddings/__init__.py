"""Embedders. ``PROVIDERS`` maps a config provider name to its class, loaded lazily."""

from memkit.embeddings.base import Embedder

PROVIDERS: dict[str, str] = {
    "local": "memkit.embeddings.local:LocalEmbedder",
    "e5": "memkit.embeddings.e5:E5Embedder",
    "litellm": "memkit.embeddings.litellm:LiteLLMEmbedder",
    "hash": "memkit.testing:HashEmbedder",
}

__all__ = ["PROVIDERS", "Embedder"]
