"""Runs one phase of the mem0 side of ``vs_mem0.py`` inside mem0's own venv.

Reads a job (JSON) on stdin, writes one JSON result on stdout. mem0 talks to
the same stub LLM and embeddings server as memkit, through its ``openai``
providers. Only the standard library, NumPy and mem0 are imported here.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")
logging.disable(logging.WARNING)


def mem0_config(job: dict[str, Any]) -> dict[str, Any]:
    workdir = job["workdir"]
    config: dict[str, Any] = {
        "llm": {"provider": "openai", "config": {
            "model": "gpt-4o-mini", "api_key": "x", "openai_base_url": job["base_url"],
            "temperature": 0,
        }},
        "embedder": {"provider": "openai", "config": {
            "model": "all-MiniLM-L6-v2", "api_key": "x", "openai_base_url": job["base_url"],
        }},
        # mem0's default store, local Qdrant, with MiniLM's dimension.
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "mem0", "embedding_model_dims": 384,
            "path": os.path.join(workdir, "qdrant"),
        }},
        "history_db_path": os.path.join(workdir, "history.db"),
    }
    if job.get("graph"):  # Kuzu: the one mem0 graph store that runs embedded
        config["graph_store"] = {"provider": "kuzu", "config": {
            "db": os.path.join(workdir, "graph.kuzu")}}
        config["embedder"]["config"]["embedding_dims"] = 384  # Kuzu's vector column size
    return config


def _major() -> int:
    return int(version("mem0ai").split(".")[0])


def _search(memory: Any, query: str, user_id: str, limit: int) -> Any:
    if _major() >= 2:
        return memory.search(query, filters={"user_id": user_id}, top_k=limit)
    return memory.search(query, user_id=user_id, limit=limit)


def _store_search(memory: Any, query: str, vector: list[float], user_id: str, limit: int) -> Any:
    params = inspect.signature(memory.vector_store.search).parameters
    size = {"top_k": limit} if "top_k" in params else {"limit": limit}
    return memory.vector_store.search(
        query=query, vectors=vector, filters={"user_id": user_id}, **size
    )


def run_adds(job: dict[str, Any]) -> dict[str, Any]:
    from mem0 import Memory

    memory = Memory.from_config(mem0_config(job))
    memory.add(job["adds"][0]["messages"], user_id="warm-up", infer=True)  # clients, caches
    _reset_stub(job)
    times, events = [], []
    for add in job["adds"]:
        start = time.perf_counter()
        result = memory.add(add["messages"], user_id=add["user_id"], infer=True)
        times.append(time.perf_counter() - start)
        items = result.get("results", []) if isinstance(result, dict) else result
        events.append(len(items))
    return {"times": times, "events": events}


def _reset_stub(job: dict[str, Any]) -> None:
    from urllib.request import Request, urlopen

    url = job["base_url"].removesuffix("/v1") + "/reset"
    with urlopen(Request(url, data=b"{}", method="POST"), timeout=10) as response:
        response.read()


def run_concurrent(job: dict[str, Any]) -> dict[str, Any]:
    from mem0 import AsyncMemory

    async def main() -> dict[str, Any]:
        memory = AsyncMemory(config=_async_config(job))
        warm = job["warmup"]
        await memory.add(warm["messages"], user_id=warm["user_id"], infer=True)
        single = job["single"]
        start = time.perf_counter()
        await memory.add(single["messages"], user_id=single["user_id"], infer=True)
        single_s = time.perf_counter() - start
        start = time.perf_counter()
        await asyncio.gather(*(
            memory.add(a["messages"], user_id=a["user_id"], infer=True) for a in job["adds"]
        ))
        return {"single_s": single_s, "concurrent_s": time.perf_counter() - start,
                "n": len(job["adds"])}

    return asyncio.run(main())


def _async_config(job: dict[str, Any]) -> Any:
    from mem0.configs.base import MemoryConfig

    return MemoryConfig(**mem0_config(job))


def run_search(job: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    from mem0 import Memory

    memory = Memory.from_config(mem0_config(job))
    out: dict[str, Any] = {"sizes": {}}

    # the public API, infer=False, one add per user with all its messages
    start = time.perf_counter()
    count = 0
    for user_id, texts in job["api_records"].items():
        memory.add([{"role": "user", "content": t} for t in texts], user_id=user_id, infer=False)
        count += len(texts)
    out["api_ingest"] = {"count": count, "seconds": time.perf_counter() - start}

    queries = job["queries"]
    vectors = [memory.embedding_model.embed(q["text"], "search") for q in queries]
    bulk = job["bulk"]
    rng = np.random.default_rng(bulk["seed"])
    filled, now = count, datetime.now(UTC).isoformat()
    for size in job["sizes"]:
        # filler straight into the store: synthetic unit vectors, mem0's payload shape
        start = time.perf_counter()
        while filled < size:
            n = min(1000, size - filled)
            block = rng.standard_normal((n, bulk["dim"]), dtype=np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            payloads, ids = [], []
            for i in range(filled, filled + n):
                text = f"filler memory {i}"
                payloads.append({
                    "data": text, "hash": hashlib.md5(text.encode()).hexdigest(),
                    "user_id": f"bulk-{i // bulk['per_user']}", "created_at": now,
                })
                ids.append(str(uuid.uuid4()))
            memory.vector_store.insert(vectors=block.tolist(), payloads=payloads, ids=ids)
            filled += n
        bulk_s = time.perf_counter() - start
        _search(memory, queries[0]["text"], queries[0]["user_id"], job["limit"])  # warm-up
        api, store = [], []
        for q, vector in zip(queries, vectors, strict=True):
            start = time.perf_counter()
            _search(memory, q["text"], q["user_id"], job["limit"])
            api.append(time.perf_counter() - start)
            start = time.perf_counter()
            _store_search(memory, q["text"], vector, q["user_id"], job["limit"])
            store.append(time.perf_counter() - start)
        out["sizes"][str(size)] = {"bulk_seconds": bulk_s, "search_api": api,
                                   "search_store": store}
    return out


def main() -> None:
    job = json.load(sys.stdin)
    phases = {"adds": run_adds, "concurrent": run_concurrent, "search": run_search}
    result = phases[job["phase"]](job)
    result["mem0_version"] = version("mem0ai")
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
