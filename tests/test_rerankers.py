"""Rerankers, each through its real path: litellm against a scripted rerank and chat server on
127.0.0.1, and an ONNX cross-encoder this test builds (with its tokenizer) in a folder."""

from __future__ import annotations

import asyncio
import json
import math
import re
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memkit import AsyncMemory, ConfigError, LLMError, Memory
from memkit.rerankers.litellm import LiteLLMReranker
from memkit.rerankers.llm import LLMReranker
from memkit.rerankers.onnx import OnnxCrossEncoder
from memkit.testing import HashEmbedder, ScriptedLLM

WORD = re.compile(r"[a-z]+")


def _overlap(query: str, text: str) -> int:
    return len(set(WORD.findall(query.lower())) & set(WORD.findall(text.lower())))


class RerankServer:
    """Cohere's /v1/rerank (scores: words shared with the query) and an OpenAI-compatible
    /v1/chat/completions that ranks the labelled passages of a prompt the same way."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, **body})
                payload = server.rerank(body) if self.path.endswith("/rerank") else server.chat(body)
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @staticmethod
    def rerank(body: dict[str, Any]) -> dict[str, Any]:
        scores = [_overlap(body["query"], d) / 10 for d in body["documents"]]
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[: body.get("top_n")]
        return {"id": "r", "results": [{"index": i, "relevance_score": scores[i]} for i in order],
                "meta": {"billed_units": {"search_units": 1}}}

    @staticmethod
    def chat(body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["messages"][-1]["content"]
        query = prompt.split("\n", 1)[0].removeprefix("Query: ")
        passages = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)
        ranked = sorted(passages, key=lambda p: -_overlap(query, p[1]))
        content = json.dumps({"ranking": [label for label, _ in ranked]})
        return {"id": "c", "object": "chat.completion", "created": 0, "model": "stub",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


@pytest.fixture
def server() -> Iterator[RerankServer]:
    running = RerankServer()
    yield running
    running.http.shutdown()


MEMORIES = ["Alice drinks coffee every morning", "Alice likes green tea with honey",
            "Bob plays tennis on Sundays", "Alice's tea cups are blue"]


def _memory(config: dict[str, Any], sync: bool) -> Memory | AsyncMemory:
    options = {"vector_store": {"provider": "memory"}, **config}
    cls = Memory if sync else AsyncMemory
    return cls(options, llm=ScriptedLLM(), embedder=HashEmbedder())


def _search(config: dict[str, Any], sync: bool, query: str, **kwargs: Any) -> list[tuple[str, float]]:
    """Store MEMORIES, then search with ``kwargs``; (memory, score) best first."""
    memory = _memory(config, sync)

    async def run() -> Any:
        assert isinstance(memory, AsyncMemory)
        async with memory:
            for text in MEMORIES:
                await memory.add(text, user_id="u", infer=False)
            return await memory.search(query, user_id="u", **kwargs)

    if isinstance(memory, Memory):
        with memory:
            for text in MEMORIES:
                memory.add(text, user_id="u", infer=False)
            found = memory.search(query, user_id="u", **kwargs)
    else:
        found = asyncio.run(run())
    return [(item.memory, item.score or 0.0) for item in found.results]


def _by_overlap(query: str) -> list[str]:
    return sorted(MEMORIES, key=lambda m: (-_overlap(query, m), MEMORIES.index(m)))


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_a_litellm_reranker_reorders_search_results(server: RerankServer, sync: bool) -> None:
    config = {"reranker": {"provider": "litellm", "candidates": 4, "config": {
        "model": "cohere/rerank-english-v3.0", "api_base": server.url, "api_key": "k"}}}
    query = "does alice like tea with honey"
    plain = _search(config, sync, query, limit=2)
    assert server.requests == []  # rerank is asked for, never implied
    reranked = _search(config, sync, query, limit=2, rerank=True)
    [request] = server.requests
    assert request["path"] in ("/v1/rerank", "/v2/rerank")  # litellm's Cohere route
    assert request["model"] == "rerank-english-v3.0"
    assert request["query"] == query and sorted(request["documents"]) == sorted(MEMORIES)
    assert [m for m, _ in reranked] == _by_overlap(query)[:2]
    assert [s for _, s in reranked] == [_overlap(query, m) / 10 for m, _ in reranked]
    assert plain != reranked


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_the_llm_reranker_ranks_labels_in_one_bounded_call(server: RerankServer, sync: bool) -> None:
    config = {"reranker": {"provider": "llm", "config": {
        "model": "openai/stub", "api_base": f"{server.url}/v1", "api_key": "k", "max_chars": 24}}}
    query = "green tea honey"
    reranked = _search(config, sync, query, limit=3, rerank=True)
    [request] = server.requests
    prompt = request["messages"][-1]["content"]
    assert re.findall(r"^\[(\d+)\]", prompt, re.MULTILINE) == ["1", "2", "3", "4"]
    assert "Alice likes green tea ..." in prompt  # cut at a word within max_chars
    assert "honey" not in prompt.split("Passages:")[1]
    assert request["max_tokens"] == 6 * 50 + 32
    assert reranked[0][0] == "Alice likes green tea with honey"
    assert [s for _, s in reranked] == [1.0, 0.75, 0.5]


def test_the_llm_reranker_uses_the_memorys_llm_without_a_model_and_keeps_unranked_order() -> None:
    llm = ScriptedLLM(['{"ranking": ["3", "3", "9"]}'])  # a repeat and an unknown label
    memory = Memory({"vector_store": {"provider": "memory"}, "reranker": {"provider": "llm"}},
                    llm=llm, embedder=HashEmbedder())
    with memory:
        for text in MEMORIES:
            memory.add(text, user_id="u", infer=False)
        plain = [i.memory for i in memory.search("alice tea", user_id="u", limit=4).results]
        reranked = [i.memory for i in memory.search("alice tea", user_id="u", limit=4,
                                                     rerank=True).results]
    assert llm.calls[0].purpose == "rerank"
    assert reranked == [plain[2], *[m for m in plain if m != plain[2]]]
    with pytest.raises(LLMError, match="not a ranking"):
        LLMReranker(ScriptedLLM(["I think the second one"])).rerank("q", ["a", "b"])


def test_search_with_rerank_but_no_reranker_says_what_to_configure() -> None:
    with Memory({"vector_store": {"provider": "memory"}}, llm=ScriptedLLM(),
                embedder=HashEmbedder()) as memory:
        memory.add("Alice likes tea", user_id="u", infer=False)
        with pytest.raises(ConfigError, match="needs a reranker"):
            memory.search("tea", user_id="u", rerank=True)


# -- a tiny ONNX cross-encoder, written as protobuf by hand ---------------------------------

def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: int | str | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _tensor_type(elem: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_field(1, _field(2, d) if isinstance(d, str) else _field(1, d)) for d in dims)
    return _field(1, _field(1, elem) + _field(2, shape))


def _value(name: str, elem: int, dims: list[int | str]) -> bytes:
    return _field(1, name) + _field(2, _tensor_type(elem, dims))


def _node(op: str, inputs: list[str], output: str, **ints: int) -> bytes:
    attributes = b"".join(_field(5, _field(1, k) + _field(3, v) + _field(20, 2))
                          for k, v in ints.items())
    return b"".join(_field(1, i) for i in inputs) + _field(2, output) + _field(4, op) + attributes


FLOAT, INT64 = 1, 7
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "alice", "tea", "green", "honey", "coffee", "bob",
         "tennis", "cups", "blue"]
WEIGHTS = {"tea": 2.0, "green": 1.0, "honey": 1.5, "cups": -1.0, "coffee": -2.0}


def build_cross_encoder(folder: Path) -> None:
    """score(query, doc) = sum of WEIGHTS over the document's words (segment 1 only), a
    logit per pair; with the tokenizer whose pair template marks that segment."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    weights = [WEIGHTS.get(word, 0.0) for word in VOCAB]
    table = (_field(1, len(VOCAB)) + _field(2, FLOAT) + _field(8, "weights")
             + _field(9, struct.pack(f"<{len(weights)}f", *weights)))
    axes = _field(1, 1) + _field(2, INT64) + _field(8, "axes") + _field(9, struct.pack("<q", 1))
    nodes = [_node("Gather", ["weights", "input_ids"], "w"),
             _node("Cast", ["token_type_ids"], "segment", to=FLOAT),
             _node("Cast", ["attention_mask"], "mask", to=FLOAT),
             _node("Mul", ["w", "segment"], "ws"), _node("Mul", ["ws", "mask"], "wsm"),
             _node("ReduceSum", ["wsm", "axes"], "logits", keepdims=1)]
    graph = (b"".join(_field(1, n) for n in nodes) + _field(2, "tiny-cross-encoder")
             + _field(5, table) + _field(5, axes)
             + b"".join(_field(11, _value(name, INT64, ["batch", "tokens"]))
                        for name in ("input_ids", "attention_mask", "token_type_ids"))
             + _field(12, _value("logits", FLOAT, ["batch", 1])))
    model = _field(1, 7) + _field(8, _field(1, "") + _field(2, 13)) + _field(7, graph)
    (folder / "model.onnx").write_bytes(model)

    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(folder / "tokenizer.json"))


def _expected(text: str) -> float:
    logit = sum(WEIGHTS.get(w, 0.0) for w in WORD.findall(text.lower()))
    return 1 / (1 + math.exp(-logit))


@pytest.fixture
def cross_encoder(tmp_path: Path) -> Path:
    folder = tmp_path / "cross-encoder"
    folder.mkdir()
    build_cross_encoder(folder)
    return folder


def test_the_onnx_cross_encoder_scores_the_document_segment(cross_encoder: Path) -> None:
    reranker = OnnxCrossEncoder(str(cross_encoder), batch_size=3)
    documents = [*MEMORIES, "coffee", "tea tea"]
    # the query's own words are segment 0: "coffee" there changes nothing
    ranking = reranker.rerank("coffee", documents)
    assert [documents[i] for i, _ in ranking] == sorted(documents, key=lambda d: -_expected(d))
    assert [s for _, s in ranking] == pytest.approx(sorted((_expected(d) for d in documents),
                                                           reverse=True))
    assert asyncio.run(reranker.arerank("coffee", documents)) == ranking


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_search_reranks_with_a_local_cross_encoder(cross_encoder: Path, sync: bool) -> None:
    config = {"reranker": {"provider": "onnx", "config": {"path": str(cross_encoder)}}}
    reranked = _search(config, sync, "what does alice drink", limit=3, rerank=True)
    ordered = sorted(MEMORIES, key=lambda m: -_expected(m))[:3]
    assert [m for m, _ in reranked] == ordered
    assert [s for _, s in reranked] == pytest.approx([round(_expected(m), 6) for m in ordered])


def test_pages_of_a_reranked_search_continue_its_order(cross_encoder: Path) -> None:
    config = {"reranker": {"provider": "onnx", "config": {"path": str(cross_encoder)}}}
    first = _search(config, True, "tea", limit=2, rerank=True)
    second = _search(config, True, "tea", limit=2, offset=2, rerank=True)
    assert [m for m, _ in first + second] == sorted(MEMORIES, key=lambda m: -_expected(m))


def test_a_cross_encoder_folder_missing_a_file_is_a_clear_error(tmp_path: Path,
                                                                 cross_encoder: Path) -> None:
    (cross_encoder / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match=r"no tokenizer\.json"):
        OnnxCrossEncoder(str(cross_encoder))
    with pytest.raises(ConfigError, match="not a folder"):
        OnnxCrossEncoder(str(tmp_path / "nowhere"))


def test_the_litellm_reranker_direct_calls(server: RerankServer) -> None:
    reranker = LiteLLMReranker("cohere/rerank-english-v3.0", api_base=server.url, api_key="k",
                               retries=0)
    assert reranker.rerank("tea", []) == []
    ranking = reranker.rerank("tennis bob", MEMORIES)
    assert ranking[0] == (2, 0.2) and sorted(i for i, _ in ranking) == [0, 1, 2, 3]
    assert asyncio.run(reranker.arerank("tennis bob", MEMORIES)) == ranking
