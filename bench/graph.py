"""Graph memory: multi-hop recall with and without graph expansion, LLM cost per add, and
depth-2 traversal latency at scale.

    python bench/graph.py multihop [--people 60] [--embedder local|hash]
    python bench/graph.py traversal [--entities 100000] [--relations 1000000]
                                    [--stores sqlite,postgres,bolt] [--queries 200]

``multihop`` generates people, employers, cities and managers; every fact is
stored through ``Memory.add`` with a scripted LLM that answers the extraction
call with the fact and its relation (and ADDs on the decision call), so the
graph is built exactly as a real add builds it. Questions ("Which city is
the company Person12 works for in?", "Who manages Person7's manager?", "Where
does Person3's manager live?") need two memories, one of which never names the
person; recall@k is measured
with ``search(graph=False)`` and ``search(graph=True)``. It also reports LLM
calls and prompt characters per add with the graph on and off.

``traversal`` bulk-loads one random graph of N entities and M distinct relations
(8 types, no self-loops) into each graph store (``MEMKIT_TEST_PG_DSN``,
``MEMKIT_TEST_BOLT_URL`` say where; ``bench/_graph_load.py``) and times
``neighbourhood(depth=2)`` through the store's API from random entities: p50
and p95. ``bash bench/graph_engines.sh traversal ...`` starts PostgreSQL and
FalkorDB for it (scripts/engines.sh) and stops them afterwards.

Results go to bench/results/graph.json.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import REPO, machine, percentile, table, write_results
from bench._graph_load import load, random_edges
from memkit import Memory
from memkit.graph.base import GraphScope, GraphStore
from memkit.llms.base import LLMRequest
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import FunctionLLM, HashEmbedder

RESULTS = REPO / "bench" / "results" / "graph.json"
CITIES = ["Lisbon", "Porto", "Berlin", "Munich", "Paris", "Lyon", "Madrid", "Vienna"]


def _world(people: int, rng: random.Random) -> tuple[list[tuple[str, str, str, str]],
                                                     list[tuple[str, set[str]]]]:
    """Facts (text, source, relation, target) and questions (text, evidence fact texts)."""
    companies = [f"Company{i}" for i in range(max(2, people // 5))]
    city_of = {c: rng.choice(CITIES) for c in companies}
    employer = {f"Person{i}": rng.choice(companies) for i in range(people)}
    names = list(employer)
    manager = {p: rng.choice([q for q in names if q != p]) for p in names}
    home = {p: rng.choice(CITIES) for p in names}
    facts: list[tuple[str, str, str, str]] = []
    for company, city in city_of.items():
        facts.append((f"{company} is based in {city}", company, "based in", city))
    for person in names:
        facts.append((f"{person} works for {employer[person]}", person, "works for",
                      employer[person]))
        facts.append((f"{person} is managed by {manager[person]}", person, "managed by",
                      manager[person]))
        facts.append((f"{person} lives in {home[person]}", person, "lives in", home[person]))
    questions: list[tuple[str, set[str]]] = []
    for person in names:
        company = employer[person]
        questions.append((f"Which city is the company {person} works for in?", {
            f"{person} works for {company}", f"{company} is based in {city_of[company]}"}))
        boss = manager[person]
        questions.append((f"Who manages {person}'s manager?", {
            f"{person} is managed by {boss}", f"{boss} is managed by {manager[boss]}"}))
        questions.append((f"Where does {person}'s manager live?", {
            f"{person} is managed by {boss}", f"{boss} lives in {home[boss]}"}))
    return facts, questions


def _llm(relations: dict[str, tuple[str, str, str]], graph: bool) -> FunctionLLM:
    """Extraction: the user's message is the fact (and its relation); decision: ADD it."""
    last: list[str] = []

    def answer(request: LLMRequest) -> Any:
        if request.purpose == "extraction":
            text = request.messages[-1]["content"].rsplit("\n", 1)[-1].split(": ", 1)[-1]
            last[:] = [text]
            if not graph:
                return {"facts": [text]}
            source, relation, target = relations[text]
            return {"facts": [text], "relations": [
                {"source": source, "source_type": "unknown", "relation": relation,
                 "target": target, "target_type": "unknown"}]}
        return {"memory": [{"event": "ADD", "text": t} for t in last]}

    return FunctionLLM(answer)


def multihop(people: int, embedder_name: str) -> dict[str, Any]:
    rng = random.Random(7)
    facts, questions = _world(people, rng)
    relations = {text: (s, r, t) for text, s, r, t in facts}
    out: dict[str, Any] = {"people": people, "facts": len(facts), "questions": len(questions),
                           "embedder": embedder_name}
    for graph in (False, True):
        llm = _llm(relations, graph)
        embedder = HashEmbedder() if embedder_name == "hash" else None
        store = SQLiteStore(":memory:")
        components: dict[str, Any] = {"llm": llm, "vector_store": store}
        if embedder is not None:
            components["embedder"] = embedder
        with Memory({"graph_store": "sqlite"} if graph else None, **components) as m:
            calls_before = len(llm.calls)
            for text, *_ in facts:
                m.add(text, user_id="bench")
            calls = llm.calls[calls_before:]
            prompt_chars = sum(len(msg["content"]) for c in calls for msg in c.messages)
            out[f"graph_{graph}_llm_calls_per_add"] = round(len(calls) / len(facts), 3)
            out[f"graph_{graph}_prompt_chars_per_add"] = round(prompt_chars / len(facts), 1)
            modes = [False, True] if graph else [False]
            for expand in modes:
                hits = {k: 0.0 for k in (1, 2, 5, 10)}
                for question, evidence in questions:
                    found = m.search(question, user_id="bench", limit=10, graph=expand)
                    texts = [item.memory for item in found.results]
                    for k in hits:
                        hits[k] += len(evidence & set(texts[:k])) / len(evidence)
                label = "graph" if expand else "flat"
                for k, total in hits.items():
                    out[f"recall@{k}_{label}"] = round(total / len(questions), 4)
    return out


def _stores(names: list[str], tag: str) -> dict[str, GraphStore]:
    stores: dict[str, GraphStore] = {}
    for name in names:
        if name == "sqlite":
            from memkit.graph.sqlite import SQLiteGraph

            path = Path(f"/tmp/memkit-bench-graph-{tag}.db")
            path.unlink(missing_ok=True)
            stores[name] = SQLiteGraph(str(path), f"bench_{tag}")
        elif name == "postgres" and os.environ.get("MEMKIT_TEST_PG_DSN"):
            from memkit.graph.postgres import PostgresGraph

            stores[name] = PostgresGraph(os.environ["MEMKIT_TEST_PG_DSN"], f"bench_{tag}")
        elif name == "bolt" and os.environ.get("MEMKIT_TEST_BOLT_URL"):
            from memkit.graph.neo4j import Neo4jGraph

            stores[name] = Neo4jGraph(os.environ["MEMKIT_TEST_BOLT_URL"], "falkordb", "",
                                      label=f"Bench_{tag}", indexes=False)
        else:
            print(f"skipping {name}: no engine configured")
    return stores


def traversal(entities: int, relations: int, names: list[str], queries: int) -> dict[str, Any]:
    """Bulk-load the same random graph into each store, then time ``neighbourhood(depth=2)``
    through the store's API from random entities."""
    scope = GraphScope(user_id="bench")
    edges = random_edges(entities, relations, seed=11)
    out: dict[str, Any] = {"entities": entities, "relations": len(edges), "queries": queries}
    for name, store in _stores(names, f"{entities}_{relations}").items():
        started = time.perf_counter()
        load(store, scope, entities, edges)
        out[f"{name}_load_s"] = round(time.perf_counter() - started, 1)
        rng = random.Random(13)
        latencies, sizes, relations_found = [], [], []
        for _ in range(queries):
            seed = f"e{rng.randrange(entities)}"
            began = time.perf_counter()
            sub = store.neighbourhood(scope, [seed], 2)
            latencies.append((time.perf_counter() - began) * 1000)
            sizes.append(len(sub.entities))
            relations_found.append(len(sub.relations))
        out[f"{name}_depth2_p50_ms"] = round(percentile(latencies, 50), 2)
        out[f"{name}_depth2_p95_ms"] = round(percentile(latencies, 95), 2)
        out[f"{name}_depth2_median_entities"] = sorted(sizes)[len(sizes) // 2]
        out[f"{name}_depth2_median_relations"] = sorted(relations_found)[len(sizes) // 2]
        print(name, {k: v for k, v in out.items() if k.startswith(name)}, flush=True)
        if name != "sqlite":  # the sqlite file is removed by the next run
            store.reset()
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    hop = sub.add_parser("multihop")
    hop.add_argument("--people", type=int, default=60)
    hop.add_argument("--embedder", choices=["local", "hash"], default="local")
    trav = sub.add_parser("traversal")
    trav.add_argument("--entities", type=int, default=100_000)
    trav.add_argument("--relations", type=int, default=1_000_000)
    trav.add_argument("--stores", default="sqlite,postgres,bolt")
    trav.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if args.command == "multihop":
        figures = multihop(args.people, args.embedder)
        rows = [(k, v) for k, v in figures.items()]
    else:
        figures = traversal(args.entities, args.relations, args.stores.split(","), args.queries)
        rows = [(k, v) for k, v in figures.items()]
    print(table(["figure", "value"], rows))
    results: dict[str, Any] = {}
    if RESULTS.exists():  # read now: another run may have written it meanwhile
        import json

        results = json.loads(RESULTS.read_text())
    key = args.command if args.command == "multihop" else f"traversal-{args.entities}-{args.relations}"
    results[key] = {"machine": machine(), **figures}
    write_results(RESULTS, results)


if __name__ == "__main__":
    main()
