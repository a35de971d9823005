"""A local cross-encoder in ONNX, loaded from a folder the user gives (nothing is
downloaded): ``model.onnx`` (or the folder's one ``.onnx`` file) and ``tokenizer.json``
(a Hugging Face ``tokenizers`` file, whose pair template sets the segments).

The model reads ``input_ids``, ``attention_mask`` and, when it has that input,
``token_type_ids``; its first output is one logit per pair (a score is its sigmoid) or
two per pair (the second class's softmax). Exported cross-encoders such as
ms-marco-MiniLM-L-6-v2 or bge-reranker-base have that shape.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memkit._errors import ConfigError
from memkit._imports import require
from memkit.rerankers.base import Ranking, Reranker


def model_files(path: str | Path) -> tuple[Path, Path]:
    """(the model, the tokenizer) of a folder, or of a model file with its tokenizer beside it."""
    given = Path(path).expanduser()
    folder = given.parent if given.is_file() else given
    if not folder.is_dir():
        raise ConfigError(f"reranker path {str(given)!r} is not a folder holding model.onnx "
                          "and tokenizer.json")
    if given.is_file():
        model = given
    elif (folder / "model.onnx").is_file():
        model = folder / "model.onnx"
    else:
        found = sorted(folder.glob("*.onnx"))
        if len(found) != 1:
            raise ConfigError(f"{folder} holds {len(found)} .onnx files; name the model file "
                              "or call it model.onnx")
        model = found[0]
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise ConfigError(f"{folder} has no tokenizer.json beside the model")
    return model, tokenizer


class OnnxCrossEncoder(Reranker):
    """``OnnxCrossEncoder("~/models/ms-marco-MiniLM-L-6-v2")``: pairs are cut to
    ``max_length`` tokens and scored ``batch_size`` at a time on ``threads`` threads."""

    def __init__(self, path: str, *, max_length: int = 512, batch_size: int = 16,
                 threads: int | None = None) -> None:
        if max_length < 8 or batch_size < 1:
            raise ValueError("max_length must be at least 8 and batch_size at least 1")
        model, tokenizer_file = model_files(path)
        tokenizers: Any = require("tokenizers", "local")
        ort: Any = require("onnxruntime", "local")
        self.tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_length=max_length)
        if self.tokenizer.padding is None:
            self.tokenizer.enable_padding()
        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        try:
            self.session = ort.InferenceSession(str(model), options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own types for a bad file
            raise ConfigError(f"cannot load the reranker model {model}: {exc}") from None
        self.inputs = {i.name for i in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.inputs
        if missing:
            raise ConfigError(f"{model} is not a cross-encoder: it has no {sorted(missing)} input")
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def scores(self, query: str, documents: Sequence[str]) -> np.ndarray:
        out: list[np.ndarray] = []
        for start in range(0, len(documents), self.batch_size):
            pairs = [(query, d) for d in documents[start:start + self.batch_size]]
            encoded = self.tokenizer.encode_batch(pairs)
            feed = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64)}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.array([e.type_ids for e in encoded], dtype=np.int64)
            with self._lock:
                logits = np.asarray(self.session.run(None, feed)[0], dtype=np.float64)
            out.append(_probability(logits.reshape(len(pairs), -1)))
        return np.concatenate(out) if out else np.zeros(0)

    def rerank(self, query: str, documents: Sequence[str]) -> Ranking:
        scores = self.scores(query, documents)
        order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
        return [(i, float(scores[i])) for i in order]

    async def arerank(self, query: str, documents: Sequence[str]) -> Ranking:
        # onnxruntime has no async API: a worker thread keeps the event loop free.
        return await asyncio.to_thread(self.rerank, query, documents)


def _probability(logits: np.ndarray) -> np.ndarray:
    if logits.shape[1] == 1:
        return np.asarray(1.0 / (1.0 + np.exp(-logits[:, 0])))
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return np.asarray(shifted[:, -1] / shifted.sum(axis=1))
