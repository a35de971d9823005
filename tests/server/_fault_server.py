"""The REST server in a process of its own, over real engines and scripted models.

``python -m tests.server._fault_server PORT KIND ADDRESS NAME``: KIND is ``pgvector`` (store,
history and graph in the PostgreSQL at ADDRESS), ``chroma`` (the Chroma server at ADDRESS,
history and graph in a SQLite file NAME.db) or ``bolt`` (a SQLite store and history in
NAME.db, the graph on the Bolt server at ADDRESS). Every add extracts one fact, the text
of its message, and one relation: ``<first word> MENTIONS <last word>``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn

from memkit import AsyncMemory
from memkit.graph.base import GraphStore
from memkit.history.base import HistoryStore
from memkit.llms.base import LLMRequest
from memkit.server import create_app
from memkit.stores.base import VectorStore
from memkit.testing import FunctionLLM, HashEmbedder


def fact_and_relation(request: LLMRequest) -> Any:
    """Extraction: the message is the fact, its first and last words a relation; the
    decision: ADD it."""
    prompt = request.messages[-1]["content"]
    if request.purpose == "extraction":
        text = prompt.rsplit("\n", 1)[-1].split(": ", 1)[-1].strip()
        words = text.split()
        return {"facts": [text], "relations": [
            {"source": words[0], "source_type": "thing", "relation": "mentions",
             "target": words[-1], "target_type": "thing"}]}
    facts = json.loads(prompt.rsplit("New facts:\n", 1)[1])
    return {"memory": [{"event": "ADD", "text": fact} for fact in facts]}


def parts(kind: str, address: str, name: str) -> tuple[VectorStore, HistoryStore, GraphStore]:
    if kind == "pgvector":
        from memkit.graph.postgres import PostgresGraph
        from memkit.history.postgres import PostgresHistory
        from memkit.stores.pgvector import PgVectorStore

        return (PgVectorStore(address, collection_name="faults"),
                PostgresHistory(address, table="faults_h"), PostgresGraph(address, "faults_g"))
    from memkit.graph.sqlite import SQLiteGraph
    from memkit.stores.sqlite import SQLiteStore

    if kind == "chroma":
        from memkit.history.sqlite import SQLiteHistory
        from memkit.stores.chroma import ChromaStore

        return (ChromaStore(url=address, collection_name="faults"), SQLiteHistory(f"{name}.db"),
                SQLiteGraph(f"{name}-graph.db"))
    from memkit.graph.neo4j import Neo4jGraph

    store = SQLiteStore(f"{name}.db")
    return store, store.history(), Neo4jGraph(address, label="Faults", indexes=False)


def main(port: str, kind: str, address: str, name: str) -> None:
    store, history, graph = parts(kind, address, name)
    memory = AsyncMemory(llm=FunctionLLM(fact_and_relation), embedder=HashEmbedder(),
                         vector_store=store, history=history, graph_store=graph)
    uvicorn.run(create_app(memory), host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main(*sys.argv[1:])
