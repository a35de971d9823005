"""Rerankers: reorder search results by a second, finer reading of query and memory.

``PROVIDERS`` maps a config provider name to its class, loaded lazily.
"""

from memkit.rerankers.base import Ranking, Reranker

PROVIDERS: dict[str, str] = {
    "litellm": "memkit.rerankers.litellm:LiteLLMReranker",
    "llm": "memkit.rerankers.llm:LLMReranker",
    "onnx": "memkit.rerankers.onnx:OnnxCrossEncoder",
}

__all__ = ["PROVIDERS", "Ranking", "Reranker"]
