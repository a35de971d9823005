"""A deterministic OpenAI-compatible LLM and embedding server on 127.0.0.1.

Both memkit and mem0 call it through their normal provider configuration, so
the benchmark sees the requests each system really makes. It recognises two
kinds of chat request from the prompt:

- extraction ("give me the facts in this conversation"): the facts are the
  conversation's own lines, speaker prefix removed, one fact per line;
- decision (existing memories plus new facts, choose ADD/UPDATE/DELETE/NONE):
  a new fact whose text is already a memory is NONE, every other fact is ADD.

Each system gets its own answer format: ``{"facts": [...]}`` for extraction,
and ``{"memory": [{"id", "text", "event", "old_memory"}]}`` for decisions. memkit's
one-call add (memories shown, then the conversation, in one prompt) gets the decisions
for the conversation's lines.

Questions from ``memkit eval locomo --qa`` (memories, then ``Question:``) are
answered with the listed memory sharing most words with the question; a judge
request (``Gold answer:``) is CORRECT when the answer shares a word with the gold
answer.

Graph requests get one rule for both systems: the conversation's capitalised
words that are not common sentence words (:func:`mentioned`, at most four)
are entities, each in a relation ``user -[mentions]-> name``. memkit gets them
as ``"relations"`` beside the facts when its extraction prompt asks for
relations; mem0's graph calls are OpenAI tool calls (``extract_entities``,
``establish_relationships``; ``delete_graph_memory`` and any other tool are
answered with no call). Tool definitions and response schemas are counted
apart, as ``schema_tokens``.
Prompt tokens are counted the same way for every request (cl100k_base when
tiktoken can load it offline, else characters / 4), and every response reports
that count as its ``usage``.

Run standalone: ``python bench/stub_llm.py --port 8089 --latency-ms 300``.
Control: ``GET /stats``, ``POST /reset``, ``POST /config {"latency_ms": 300}``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

EmbedFn = Callable[[Sequence[str]], list[list[float]]]


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: 32 clients connecting at once overflow
    # it, and each dropped connection waits for the client's SYN retransmit (1 s).
    request_queue_size = 256


def _token_counter() -> tuple[str, Callable[[str], int]]:
    """cl100k_base from the copy litellm ships (no download), else characters / 4."""
    try:
        spec = importlib.util.find_spec("litellm")
        if spec and spec.origin:
            bundled = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base")
        return "tiktoken cl100k_base", lambda t: len(encoding.encode(t, disallowed_special=()))
    except Exception:
        return "chars/4", lambda text: max(1, len(text) // 4)


TOKENIZER, count_tokens = _token_counter()


# -- understanding the prompts -------------------------------------------

_DECISION_WORDS = ("ADD", "UPDATE", "DELETE", "NONE")
_LINE = re.compile(r"^\s*(?:[-*]\s*)?([A-Za-z][\w .'()-]{0,60}?)\s*:\s*(\S.*)$")
_ROLES = {"user", "assistant", "human", "ai"}


def classify(messages: list[dict[str, Any]]) -> str:
    text = "\n".join(_content(m) for m in messages)
    if "\nGold answer: " in text:
        return "judge"
    if "Memories:\n" in text and "\n\nQuestion: " in text:
        return "answer"
    last = _content(messages[-1])
    if last.startswith(_NUMBERED_HEADER) and _CONVERSATION_HEADER in last:
        return "add"
    if all(word in text for word in _DECISION_WORDS):
        return "decision"
    if "fact" in text.lower():
        return "extraction"
    return "other"


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def conversation_lines(messages: list[dict[str, Any]]) -> list[str]:
    """The conversation an extraction request carries, one fact per line.

    The conversation is in the last user message (after an ``Input:`` marker
    when there is one). Lines look like ``speaker: text`` or ``role: text``.
    """
    user_messages = [m for m in messages if m.get("role") == "user"] or messages
    body = _content(user_messages[-1])
    for marker in ("Input:\n", "Conversation:\n", "<conversation>"):
        if marker in body:
            body = body.rsplit(marker, 1)[1]
    body = body.split("</conversation>", 1)[0]
    facts = []
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith(("```", "#", "{", "}", "[", "]")):
            continue
        match = _LINE.match(line)
        text = match.group(2) if match else line
        if match and match.group(1).lower() in {"system"}:
            continue
        text = text.strip().strip('"').strip()
        if text:
            facts.append(text)
    return facts


def _literals(text: str) -> list[Any]:
    """Every JSON or Python literal list/object found in ``text`` (outermost first)."""
    found: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] in "[{":
            end = _matching(text, i)
            if end is not None:
                chunk = text[i : end + 1]
                value = _parse_literal(chunk)
                if value is not None:
                    found.append(value)
                    i = end + 1
                    continue
        i += 1
    return found


def _matching(text: str, start: int) -> int | None:
    pairs = {"[": "]", "{": "}"}
    stack = [pairs[text[start]]]
    quote: str | None = None
    i = start + 1
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in "]}":
            if not stack or ch != stack[-1]:
                return None
            stack.pop()
            if not stack:
                return i
        i += 1
    return None


def _parse_literal(chunk: str) -> Any:
    try:
        return json.loads(chunk)
    except ValueError:
        pass
    try:
        return ast.literal_eval(chunk)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


_NUMBERED_HEADER, _FACTS_HEADER = "Existing memories:\n", "\n\nNew facts:"
_CONVERSATION_HEADER = "\n\nConversation:\n"
_NUMBERED = re.compile(r"^(\d+): (.*)$", re.MULTILINE)


def decision_inputs(messages: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[str]]:
    """(existing memories as ``{"id", "text"}``, new facts) shown in a decision prompt.

    Existing memories are the lists of objects with an id and a text, or memkit's
    ``label: text`` lines under ``Existing memories:``; new facts are lists of
    strings (or objects wrapping them under ``facts``).
    """
    user_messages = [m for m in messages if m.get("role") == "user"] or messages
    text = _content(user_messages[-1])
    if text.count("```") >= 2:  # the data is fenced; few-shot examples around it are not
        text = "\n".join(text.split("```")[1::2])
    existing: list[dict[str, str]] = []
    if text.startswith(_NUMBERED_HEADER) and _FACTS_HEADER in text:
        shown, text = text.split(_FACTS_HEADER, 1)
        existing = [{"id": m[1], "text": m[2]} for m in _NUMBERED.finditer(shown)]
    facts: list[str] = []
    for value in _literals(text):
        if isinstance(value, dict):
            if isinstance(value.get("facts"), list):
                value = value["facts"]
            elif isinstance(value.get("memory"), list):
                value = value["memory"]
            else:
                value = [value]
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, str):
                facts.append(item)
            elif isinstance(item, dict) and "id" in item and ("text" in item or "memory" in item):
                memory = {"id": str(item["id"]), "text": str(item.get("text", item.get("memory")))}
                if not memory["id"].startswith("<"):  # a format placeholder
                    existing.append(memory)
    return existing, facts


def decide(existing: list[dict[str, str]], facts: list[str]) -> list[dict[str, Any]]:
    known = {m["text"]: m["id"] for m in existing}
    events: list[dict[str, Any]] = []
    for memory in existing:
        events.append({"id": memory["id"], "text": memory["text"], "event": "NONE"})
    added: set[str] = set()
    for fact in facts:
        if fact in known or fact in added:
            continue
        added.add(fact)
        events.append({"id": str(len(events)), "text": fact, "event": "ADD"})
    return events


def one_call(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """memkit's one-call add: the conversation's lines are the facts, decided as
    :func:`decide` does against the numbered memories shown (relations when asked)."""
    shown, conversation = _content(messages[-1]).split(_CONVERSATION_HEADER, 1)
    existing = [{"id": m[1], "text": m[2]} for m in _NUMBERED.finditer(shown)]
    lines = conversation_lines([{"role": "user", "content": conversation}])
    answer: dict[str, Any] = {"memory": decide(existing, lines)}
    if '"relations"' in _content(messages[0]):
        answer["relations"] = graph_relations(lines)
    return answer


_ADDITIVE = "## New Messages\n"


def additive(prompt: str) -> list[dict[str, str]]:
    """mem0 2.x's single ADD-only pass: every new line not already a memory."""

    def section(title: str) -> str:
        if title not in prompt:
            return ""
        return prompt.split(title, 1)[1].split("\n\n## ", 1)[0]

    existing = section("## Existing Memories\n")
    lines = conversation_lines([{"role": "user", "content": section(_ADDITIVE)}])
    new = [t for t in dict.fromkeys(lines) if json.dumps(t) not in existing]
    return [{"id": str(i), "text": text} for i, text in enumerate(new)]


# -- questions about a conversation (memkit eval locomo --qa) -------------

_WORD = re.compile(r"[a-z0-9]+")
_MEMORY_LINE = re.compile(r"^- [^:]*\d\d:\d\d: (.*)$")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 or w.isdigit()}


def answer_question(messages: list[dict[str, Any]]) -> str:
    """The listed memory sharing most words with the question (the first on a tie)."""
    body = _content(messages[-1])
    listed, question = body.rsplit("\n\nQuestion: ", 1)
    memories = [m[1] for line in listed.splitlines() if (m := _MEMORY_LINE.match(line))]
    wanted = _words(question)
    return max(memories, key=lambda m: len(_words(m) & wanted), default="I do not know")


def verdict(messages: list[dict[str, Any]]) -> dict[str, str]:
    """CORRECT when the answer shares a word with the gold answer."""
    body = _content(messages[-1])
    gold = body.split("\nGold answer: ", 1)[1].split("\nAnswer: ", 1)[0]
    given = body.rsplit("\nAnswer: ", 1)[1]
    return {"label": "CORRECT" if _words(gold) & _words(given) else "WRONG"}


# -- graph requests ------------------------------------------------------

_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_COMMON_WORDS = (
    "The This That What When Where Who Why How And But Yes Thanks Thank Wow Hey Hi Hello It"
    " Its You Your Did Does Have Has Are Was Were Will Can Sure Great Nice Awesome Also Just"
    " Well Not Sounds Glad Good Really She They Our Let Any Yeah Definitely Totally Absolutely"
    " Haha Cool Sorry Congrats Congratulations Love Thats Right Oh Mine List Text")
_NOT_NAMES = frozenset(_COMMON_WORDS.split())
MAX_MENTIONS = 4


def mentioned(text: str) -> list[str]:
    """The entities of a text, for every system alike: capitalised words that are not
    common sentence words, in order, at most :data:`MAX_MENTIONS`."""
    names: list[str] = []
    for word in _NAME.findall(text):
        if word not in _NOT_NAMES and word not in names:
            names.append(word)
    return names[:MAX_MENTIONS]


def tool_answer(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """mem0's graph tool call: the entities, or ``user -[mentions]-> entity``; None: no call."""
    name = str((tools[0].get("function") or {}).get("name", "")) if tools else ""
    text = _content([m for m in messages if m.get("role") == "user"][-1])
    names = mentioned(text.rsplit("Text:", 1)[-1])
    if name == "extract_entities":
        return {"name": name, "arguments": {"entities": [
            {"entity": n, "entity_type": "person"} for n in ["user", *names]]}}
    if name in ("establish_relationships", "establish_relations"):
        return {"name": name, "arguments": {"entities": [
            {"source": "user", "relationship": "mentions", "destination": n} for n in names]}}
    return None


def graph_relations(lines: list[str]) -> list[dict[str, str]]:
    """memkit's relations for an extraction that asks for them: the same rule as mem0's."""
    return [{"source": "user", "source_type": "person", "relation": "mentions", "target": n,
             "target_type": "person"} for n in mentioned("\n".join(lines))]


# -- the server -----------------------------------------------------------


@dataclass
class Stats:
    calls: dict[str, int] = field(default_factory=dict)
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)
    schema_tokens: dict[str, int] = field(default_factory=dict)
    embedding_requests: int = 0
    embedding_inputs: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)

    def record(self, kind: str, prompt: int, completion: int, schema: int = 0) -> None:
        self.calls[kind] = self.calls.get(kind, 0) + 1
        self.schema_tokens[kind] = self.schema_tokens.get(kind, 0) + schema
        self.prompt_tokens[kind] = self.prompt_tokens.get(kind, 0) + prompt
        self.completion_tokens[kind] = self.completion_tokens.get(kind, 0) + completion

    def snapshot(self) -> dict[str, Any]:
        return {
            "llm_calls": sum(self.calls.values()),
            "prompt_tokens": sum(self.prompt_tokens.values()),
            "completion_tokens": sum(self.completion_tokens.values()),
            "schema_tokens": sum(self.schema_tokens.values()),
            "calls": dict(self.calls),
            "prompt_tokens_by_kind": dict(self.prompt_tokens),
            "embedding_requests": self.embedding_requests,
            "embedding_inputs": self.embedding_inputs,
            "tokenizer": TOKENIZER,
        }


class StubLLM:
    """The server and its state; use as a context manager."""

    def __init__(
        self, *, port: int = 0, latency_ms: float = 0.0, embed: EmbedFn | None = None,
        keep_prompts: bool = False,
    ) -> None:
        self.latency_ms = latency_ms
        self.embed = embed
        self.keep_prompts = keep_prompts
        self.stats = Stats()
        self._lock = threading.Lock()
        self._embed_lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StubLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> dict[str, Any]:
        with self._lock:
            snapshot = self.stats.snapshot()
            self.stats = Stats()
        return snapshot

    # -- endpoints --------------------------------------------------------
    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = list(body.get("messages") or [])
        tools = list(body.get("tools") or [])
        kind = "graph-tool" if tools else classify(messages)
        call = tool_answer(messages, tools) if tools else None
        if tools:
            answer: Any = call["arguments"] if call else {}
        elif kind == "extraction" and _ADDITIVE in _content(messages[-1]):
            answer = {"memory": additive(_content(messages[-1]))}
        elif kind == "extraction" and '"relations"' in "\n".join(map(_content, messages)):
            lines = conversation_lines(messages)
            answer = {"facts": lines, "relations": graph_relations(lines)}
        elif kind == "extraction":
            answer = {"facts": conversation_lines(messages)}
        elif kind == "decision":
            answer = {"memory": decide(*decision_inputs(messages))}
        elif kind == "add":
            answer = one_call(messages)
        elif kind == "judge":
            answer = verdict(messages)
        elif kind == "answer":
            answer = answer_question(messages)
        else:
            answer = {"answer": "ok"}
        content = answer if isinstance(answer, str) else json.dumps(answer)
        prompt = sum(count_tokens(_content(m)) for m in messages)
        completion = count_tokens(content)
        schema = count_tokens(json.dumps(tools or body.get("response_format") or "")) if (
            tools or body.get("response_format")) else 0
        with self._lock:
            self.stats.record(kind, prompt, completion, schema)
            if self.keep_prompts:
                self.stats.log.append({"kind": kind, "messages": messages, "answer": answer})
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        return {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{
                "index": 0, "finish_reason": "tool_calls" if call else "stop",
                "message": {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_0", "type": "function", "function": {
                        "name": call["name"], "arguments": content}}]} if call else {
                    "role": "assistant", "content": "" if tools else content},
            }],
            "usage": {
                "prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.embed is None:
            raise LookupError("this stub was started without an embedder")
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        with self._embed_lock:  # one model, one batch at a time
            vectors = self.embed(texts)
        with self._lock:
            self.stats.embedding_requests += 1
            self.stats.embedding_inputs += len(texts)
        tokens = sum(count_tokens(t) for t in texts)
        return {
            "object": "list", "model": body.get("model", "stub"),
            "data": [
                {"object": "embedding", "index": i, "embedding": list(map(float, v))}
                for i, v in enumerate(vectors)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _handler(stub: StubLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in two writes; with Nagle's algorithm the body waits for
        # the client's delayed ACK, about 40 ms a response on Linux
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            value = json.loads(raw or b"{}")
            return value if isinstance(value, dict) else {}

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/stats":
                with stub._lock:
                    self._reply(200, stub.stats.snapshot())
            elif self.path.rstrip("/") in ("/v1/models", "/models"):
                self._reply(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
            else:
                self._reply(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            path = self.path.rstrip("/")
            try:
                body = self._body()
                if path.endswith("/chat/completions"):
                    self._reply(200, stub.chat(body))
                elif path.endswith("/embeddings"):
                    self._reply(200, stub.embeddings(body))
                elif path == "/reset":
                    self._reply(200, stub.reset())
                elif path == "/config":
                    if "latency_ms" in body:
                        stub.latency_ms = float(body["latency_ms"])
                    self._reply(200, {"latency_ms": stub.latency_ms})
                else:
                    self._reply(404, {"error": {"message": f"no route {self.path}"}})
            except Exception as exc:  # a stub reports, it never dies
                self._reply(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})

    return Handler


def local_embed() -> EmbedFn:
    """memkit's offline MiniLM embedder, loaded once."""
    from memkit.embeddings.local import LocalEmbedder

    embedder = LocalEmbedder()
    return lambda texts: embedder.embed(list(texts)).tolist()


class StubProcess:
    """The stub in a process of its own (so it shares no GIL with the system measured),
    with the same ``base_url``, ``latency_ms`` and ``reset()`` as :class:`StubLLM`."""

    def __init__(self, *, latency_ms: float = 0.0, embeddings: bool = True) -> None:
        import subprocess
        import sys

        repo = Path(__file__).resolve().parents[1]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(repo), os.environ.get("PYTHONPATH", "")) if p)}
        command = [sys.executable, __file__, "--port", "0", "--latency-ms", str(latency_ms)]
        if not embeddings:
            command.append("--no-embeddings")
        self._proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
        if not match:
            self._proc.kill()
            raise RuntimeError(f"the stub did not start: {line!r}")
        self.base_url = match.group(1)
        self._latency_ms = latency_ms

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        from urllib.request import Request, urlopen

        url = self.base_url.removesuffix("/v1") + path
        request = Request(url, data=json.dumps(body).encode(), method="POST",
                          headers={"Content-Type": "application/json"})
        with urlopen(request, timeout=30) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    @property
    def latency_ms(self) -> float:
        return self._latency_ms

    @latency_ms.setter
    def latency_ms(self, value: float) -> None:
        self._post("/config", {"latency_ms": value})
        self._latency_ms = value

    def reset(self) -> dict[str, Any]:
        return self._post("/reset", {})

    def __enter__(self) -> StubProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--no-embeddings", action="store_true", help="serve chat only")
    args = parser.parse_args()
    embed = None if args.no_embeddings else local_embed()
    with StubLLM(port=args.port, latency_ms=args.latency_ms, embed=embed) as stub:
        print(f"stub LLM on {stub.base_url} (latency {args.latency_ms} ms, tokens: {TOKENIZER})",
              flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
