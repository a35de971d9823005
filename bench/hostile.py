"""Hostile input, hostile LLM output and hostile requests: crashes, hangs, wrong results,
5xx answers, and how long another key's REST request stalls behind a hostile one.

Families (seeded, so every run tries the same payloads):

- ``decisions``: decision answers from a scripted (stand-in for a compromised or broken)
  LLM: Unicode-digit labels, other scopes' ids, lone surrogates, NUL, mismatched
  ``old_memory``, junk. Wrong = a write outside the add's scope, a change without an
  event, or a non-NONE operation neither applied nor reported.
- ``answers``: extraction answers built to be slow or deep (nesting, huge integers,
  braces, 1 MB, fences, ``<think>``). Wrong = anything but a reported skip.
- ``inputs``: messages, metadata, queries and filters with NUL, lone surrogates, deep
  nesting and oversize. Crash = any exception that is not a memkit error.
- ``filters``: random filters on SQLite and on the reference evaluator (in-memory
  store) over the same memories. Wrong = different answers.
- ``rest``: the hostile inputs as REST requests to a uvicorn server (SQLite file, the
  local embedder), and the stall: bob's search latency while alice sends hostile
  requests, against bob alone.

A payload is a hang when it takes over ``--hang`` seconds. Run::

    python bench/hostile.py                    # about 2 minutes here
    python bench/hostile.py --decisions 200    # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, median, percentile, table, write_results
from memkit import AsyncMemory, FilterError, MemkitError, Memory
from memkit.stores.memory import InMemoryStore
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM

OUT = Path(__file__).resolve().parent / "results" / "hostile.json"
LABELS = ["0", "1", "2", "9", "-1", "²", "①", "٣", "𝟘", "1²", " 1 ", "1e3", "0x1", "", None, 1,
          True, 2.5, "0; DROP TABLE x"]
TEXTS = ["User has a dog named Rex", "User lives in Paris", "", "  ", "\ud800", "a\x00b",
         "x" * 100_000, "{{", "User has two dogs", None, 7, ["list"], {"d": 1}]
EVENTS = ["ADD", "UPDATE", "DELETE", "NONE", "add", " delete ", "MERGE", "", None, 3]
ANSWERS = {
    "nested 5000 [": "[" * 5000,
    "nested 5000 []": "[" * 5000 + "]" * 5000,
    "objects 3000 deep": '{"facts": ' * 3000 + "[]" + "}" * 3000,
    "int 5000 digits": '{"facts": [' + "9" * 5000 + "]}",
    "5000 {": "{" * 5000,
    "10000 {": "{" * 10_000,
    "200 KB {": "{" * 200_000,
    "1 MB {": "{" * 1_000_000,
    "100k [\"": '["' * 100_000,
    "80k fences": "```" * 80_000,
    "30k <think>": "<think>" * 30_000,
    "NaN": '{"facts": [NaN]}',
    "facts null": '{"facts": null}',
    "surrogate fact": '{"facts": ["User likes \\ud800 tea"]}',
}


class Tally:
    def __init__(self) -> None:
        self.tried = self.crashes = self.hangs = self.wrong = 0
        self.seconds: list[float] = []
        self.examples: list[str] = []

    def note(self, kind: str, what: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples) < 5:
            self.examples.append(f"{kind}: {what}"[:300])

    def run(self, payload: str, call: Callable[[], bool], hang: float) -> None:
        """``call`` returns False for a wrong result; memkit errors are right answers."""
        self.tried += 1
        start = time.perf_counter()
        try:
            right = call()
        except MemkitError:
            right = True
        except Exception as exc:
            self.note("crashes", f"{payload}: {type(exc).__name__}: {exc}")
            right = True
        elapsed = time.perf_counter() - start
        self.seconds.append(elapsed)
        if elapsed > hang:
            self.note("hangs", f"{payload}: {elapsed:.1f} s")
        if not right:
            self.note("wrong", payload)

    def row(self, name: str) -> dict[str, Any]:
        return {"family": name, "tried": self.tried, "crashes": self.crashes, "hangs": self.hangs,
                "wrong": self.wrong, "p50_ms": median(self.seconds) * 1000,
                "max_ms": max(self.seconds, default=0.0) * 1000, "examples": self.examples}


def _operation(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return rng.choice(["DELETE everything", 42, None, ["x"]])
    op: dict[str, Any] = {"event": rng.choice(EVENTS)}
    for key, pool in (("id", LABELS), ("text", TEXTS), ("old_memory", TEXTS)):
        if rng.random() < 0.7:
            op[key] = rng.choice(pool)
    return op


def _state(m: Memory, user_id: str) -> set[tuple[str, str]]:
    return {(i.id, i.memory) for i in m.get_all(user_id=user_id, limit=10_000).results}


def decisions(count: int, hang: float, rng: random.Random, workdir: str) -> Tally:
    tally = Tally()
    llm = ScriptedLLM()
    store = SQLiteStore(os.path.join(workdir, "decisions.db"))
    with Memory(llm=llm, embedder=HashEmbedder(), vector_store=store) as m:
        bob_id = m.add("Bob has a dog", user_id="bob", infer=False).results[0].id
        for n in range(count):
            m.delete_all(user_id="alice")
            llm.push({"facts": ["User has a dog", "User lives in Paris"]})
            m.add("dog, Paris", user_id="alice")
            operations = [_operation(rng) for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.2:
                operations.append({"event": "DELETE", "id": bob_id})
            before, bob = _state(m, "alice"), _state(m, "bob")
            llm.push({"facts": ["User has a dog named Rex"]}, {"memory": operations})

            def check(ops: list[Any] = operations, before: Any = before, bob: Any = bob) -> bool:
                result = m.add("My dog is Rex", user_id="alice")
                changed = {e.id for e in result.results if e.event != "NONE"}
                moved = {i for i, _ in before ^ _state(m, "alice")}
                acted = [o for o in ops if not (isinstance(o, dict) and isinstance(
                    o.get("event"), str) and o["event"].strip().upper() == "NONE")]
                unreported = bool(acted) and not result.results and not result.errors
                return _state(m, "bob") == bob and moved == changed and not unreported

            tally.run(f"decision {n}: {json.dumps(operations, default=repr)[:200]}", check, hang)
            llm.replies.clear()
    return tally


def answers(hang: float) -> Tally:
    tally = Tally()
    for shell in ("sync", "async"):
        for name, answer in ANSWERS.items():
            llm = ScriptedLLM([answer, answer])
            memory = Memory if shell == "sync" else AsyncMemory
            m = memory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore())

            def check(m: Any = m, name: str = name, shell: str = shell) -> bool:
                add = m.add("I like tea", user_id="u")
                result = asyncio.run(add) if shell == "async" else add
                if name == "surrogate fact":
                    return [e.memory for e in result.results] == ["User likes \ufffd tea"]
                return result.results == [] and [e.stage for e in result.errors] == ["extraction"]

            tally.run(f"{shell} {name}", check, hang)
    return tally


def _hostile_inputs() -> Iterator[tuple[str, dict[str, Any]]]:
    deep: Any = 1
    for _ in range(5000):
        deep = {"NOT": deep} if isinstance(deep, dict) else {"a": deep}
    meta_deep: Any = "leaf"
    for _ in range(5000):
        meta_deep = {"k": meta_deep}
    for bad in ("\ud800", "\x00", "\udfff"):
        yield f"message {bad!r}", {"messages": f"I like {bad} tea"}
        yield f"metadata {bad!r}", {"messages": "tea", "metadata": {"k": f"a{bad}"}}
        yield f"user_id {bad!r}", {"messages": "tea", "user_id": f"u{bad}"}
        yield f"query {bad!r}", {"query": f"tea {bad}"}
        yield f"filter {bad!r}", {"query": "tea", "filters": {"k": {"contains": bad}}}
    yield "filter 5000 deep", {"query": "tea", "filters": deep}
    yield "filter 300 conditions", {"query": "tea", "filters": {"OR": [{"a": i} for i in range(300)]}}
    yield "filter int 2**70", {"query": "tea", "filters": {"a": 2**70}}
    yield "metadata 5000 deep", {"messages": "tea", "metadata": {"d": meta_deep}}
    yield "metadata int 2**70", {"messages": "tea", "metadata": {"n": 2**70}}
    yield "message 1 MB", {"messages": "x" * 1_000_000}
    yield "query 100 KB tea", {"query": "tea " * 25_000}
    yield "query 300 KB", {"query": "tea " * 75_000}


def inputs(hang: float, workdir: str) -> Tally:
    tally = Tally()
    store = SQLiteStore(os.path.join(workdir, "inputs.db"))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store) as m:
        m.add("I like green tea", user_id="u", infer=False)
        for name, call in _hostile_inputs():
            def check(call: dict[str, Any] = call) -> bool:
                kwargs = {"user_id": "u", **call}
                if "query" in kwargs:
                    for mode in ("hybrid", "keyword"):
                        m.search(kwargs["query"], user_id=kwargs["user_id"], mode=mode,
                                 filters=kwargs.get("filters"))
                else:
                    m.add(kwargs["messages"], user_id=kwargs["user_id"], infer=False,
                          metadata=kwargs.get("metadata"))
                return True

            tally.run(name, check, hang)
    return tally


def _random_filter(rng: random.Random, depth: int = 0) -> Any:
    if depth < 3 and rng.random() < 0.4:
        kind = rng.choice(["AND", "OR", "NOT"])
        if kind == "NOT":
            return {"NOT": _random_filter(rng, depth + 1)}
        return {kind: [_random_filter(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    values = [0, 1, -3, 2.5, True, False, "green", "GREEN", "", "é", "1", "x", "\x00", "\ud800"]
    value: Any = rng.choice(values)
    operator = rng.choice(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains",
                           "icontains"])
    if operator in ("in", "nin"):
        value = rng.sample(values, rng.randint(0, 3))
    return {rng.choice(["a", "tag", "n", "memory", "missing"]): {operator: value}}


def filters(count: int, hang: float, rng: random.Random, workdir: str) -> Tally:
    tally = Tally()
    records = [("green tea", {"a": 1, "tag": "green"}), ("black tea", {"a": 2.5, "tag": "GREEN"}),
               ("coffee", {"a": "1", "tag": ["x", "é"], "n": True}), ("water", {"a": None}),
               ("milk", {"a": -3, "tag": ["green", 1, False], "n": 0})]
    sqlite = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                    vector_store=SQLiteStore(os.path.join(workdir, "filters.db")))
    reference = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())
    for m in (sqlite, reference):
        for text, metadata in records:
            m.add(text, user_id="u", infer=False, metadata=metadata)

    def answer(m: Memory, expr: Any) -> Any:
        try:
            return sorted(i.memory for i in m.get_all(user_id="u", filters=expr).results)
        except FilterError:
            return "FilterError"

    for n in range(count):
        expr = _random_filter(rng)
        tally.run(f"filter {n}: {json.dumps(expr)[:200]}",
                  lambda expr=expr: answer(sqlite, expr) == answer(reference, expr), hang)
    sqlite.close()
    reference.close()
    return tally


# -- REST --------------------------------------------------------------------------------


@contextmanager
def serving(app: Any) -> Iterator[str]:
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _dumps(value: Any) -> bytes:
    """JSON of the 5000-deep payloads too (json recurses once per level)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return json.dumps(value).encode()
    finally:
        sys.setrecursionlimit(limit)


def rest(hang: float, workdir: str, probes: int) -> tuple[Tally, dict[str, Any]]:
    import httpx

    from memkit.server import create_app

    tally = Tally()
    memory = AsyncMemory({"vector_store": {"provider": "sqlite", "config": {
        "path": os.path.join(workdir, "rest.db")}}}, llm=ScriptedLLM())
    keys = {"alice-key": {"user_id": "alice"}, "bob-key": {"user_id": "bob"}}
    with serving(create_app(memory, api_keys=keys)) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer alice-key"},
                             timeout=600)
        bob = httpx.Client(base_url=url, headers={"Authorization": "Bearer bob-key"}, timeout=600)
        for who in (alice, bob):
            for text in ("I like green tea", "I like coffee"):
                who.post("/v1/memories/", json={"messages": text, "infer": False}
                         ).raise_for_status()
        requests = [(name, call) for name, call in _hostile_inputs() if "user_id" not in call]
        for name, call in requests:
            path = "/v1/memories/search/" if "query" in call else "/v1/memories/"
            body = {**call, "infer": False} if path == "/v1/memories/" else call
            raw = _dumps(body)

            def check(path: str = path, raw: bytes = raw) -> bool:  # wrong = a 5xx answer
                return alice.post(path, content=raw,
                                  headers={"Content-Type": "application/json"}).status_code < 500

            tally.run(f"REST {name}", check, hang)

        def bob_search() -> float:
            start = time.perf_counter()
            bob.post("/v1/memories/search/", json={"query": "tea"}).raise_for_status()
            return time.perf_counter() - start

        alone = [bob_search() for _ in range(probes)]
        hostile = [json.dumps({"query": "tea " * 25_000, "mode": mode}).encode()
                   for mode in ("keyword", "hybrid")]
        stop = threading.Event()

        def attack() -> None:
            while not stop.is_set():
                for raw in hostile:
                    alice.post("/v1/memories/search/", content=raw,
                               headers={"Content-Type": "application/json"})

        attackers = [threading.Thread(target=attack) for _ in range(2)]
        for thread in attackers:
            thread.start()
        time.sleep(0.5)
        behind = [bob_search() for _ in range(probes)]
        stop.set()
        for thread in attackers:
            thread.join()
        alice.close()
        bob.close()
    stall = {
        "bob_alone_p50_ms": median(alone) * 1000, "bob_alone_max_ms": max(alone) * 1000,
        "bob_behind_hostile_p50_ms": median(behind) * 1000,
        "bob_behind_hostile_p95_ms": percentile(behind, 95) * 1000,
        "bob_behind_hostile_max_ms": max(behind) * 1000, "probes": probes,
        "hostile": "2 threads of alice sending 100 KB 'tea tea ...' searches (keyword, hybrid)",
    }
    return tally, stall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1000)
    parser.add_argument("--filters", type=int, default=1000)
    parser.add_argument("--probes", type=int, default=50, help="bob's searches per condition")
    parser.add_argument("--hang", type=float, default=5.0, help="seconds that count as a hang")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        families = {
            "decisions": decisions(args.decisions, args.hang, rng, workdir),
            "answers": answers(args.hang),
            "inputs": inputs(args.hang, workdir),
            "filters": filters(args.filters, args.hang, rng, workdir),
        }
        families["rest"], stall = rest(args.hang, workdir, args.probes)
    rows = [t.row(name) for name, t in families.items()]
    print(table(["family", "tried", "crashes", "hangs", "wrong", "p50 ms", "max ms"],
                [[r["family"], r["tried"], r["crashes"], r["hangs"], r["wrong"], r["p50_ms"],
                  r["max_ms"]] for r in rows]))
    print(table(["bob's search", "p50 ms", "max ms"], [
        ["alone", stall["bob_alone_p50_ms"], stall["bob_alone_max_ms"]],
        ["behind hostile", stall["bob_behind_hostile_p50_ms"],
         stall["bob_behind_hostile_max_ms"]]]))
    for row in rows:
        for example in row["examples"]:
            print(f"  {row['family']}: {example}")
    write_results(args.out, {
        "machine": machine(), "seconds": time.perf_counter() - started,
        "settings": vars(args) | {"out": str(args.out)}, "families": rows, "stall": stall,
        "totals": {k: sum(r[k] for r in rows) for k in ("tried", "crashes", "hangs", "wrong")},
        "rest_5xx": families["rest"].wrong,
    })


if __name__ == "__main__":
    main()
