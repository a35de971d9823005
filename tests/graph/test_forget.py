"""A purge forgets: on every store and graph store, through Memory and AsyncMemory, a
user's strings written through every path (facts, past versions, metadata, relations,
entities, notes, the search log) are gone afterwards from every table, and from the raw
bytes of memkit's SQLite files (WAL included) and of LanceDB's and FAISS's directories. Another user's
strings, written the same way, stay: the scan finds what is there."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memkit import AsyncMemory, Memory
from memkit.graph.base import GraphStore
from memkit.history.base import HistoryStore
from memkit.history.sqlite import SQLiteHistory
from memkit.llms.base import LLMRequest
from memkit.stores.base import VectorStore
from memkit.testing import FunctionLLM, HashEmbedder
from tests.conftest import engine_address, unique_name
from tests.pipeline.conftest import Shell
from tests.stores.conftest import FACTORIES, _drop_chroma_collections, _drop_milvus_collections

#: lower-case prefixes of alice's words: stable under the keyword index's stemming
SECRETS = ("quillf", "zembla", "vorpal", "mirthw", "snarkh", "glimme", "xantho", "pennyr",
           "jabber")
CONTROL = "bobsled"  # bob's, kept
GRAPHS = ["sqlite", "postgres", "bolt"]
pytestmark = pytest.mark.every_store  # store_name: every registered store (tests/conftest.py)

CONVERSATIONS: dict[str, dict[str, Any]] = {
    "I have a parrot": {"facts": ["Alice keeps a parrot named Quillfeather"], "relations": [
        {"source": "Alice", "source_type": "person", "relation": "owns",
         "target": "Quillfeather", "target_type": "animal"}]},
    "I work at Zembla": {"facts": ["Alice works at Zembla Labs"], "relations": [
        {"source": "Alice", "source_type": "person", "relation": "works at",
         "target": "Zembla Labs", "target_type": "organization"}]},
    "I call her Alice Vexmoor": {"facts": ["Alice Vexmoor paints murals"], "relations": [
        {"source": "Alice Vexmoor", "source_type": "person", "relation": "paints",
         "target": "Murals", "target_type": "thing"}]},
    "I like bobsleds": {"facts": ["Bob likes his Bobsled"], "relations": [
        {"source": "Bob", "source_type": "person", "relation": "likes",
         "target": "Bobsled", "target_type": "thing"}]},
}


def _answer(request: LLMRequest) -> dict[str, Any]:
    """Extraction from the script; every decision adds the new facts."""
    text = request.messages[-1]["content"]
    if request.purpose == "decision":
        facts = json.loads(text.split("New facts:\n", 1)[1])
        return {"memory": [{"event": "ADD", "id": None, "text": f, "old_memory": None}
                           for f in facts]}
    return next(reply for said, reply in CONVERSATIONS.items() if said in text)


class Parts:
    """The components of one memory, and how to dump everything each one holds."""

    def __init__(self, store_name: str, graph_name: str, tmp: pytest.TempPathFactory,
                 drivers: tuple[Any, Any]) -> None:
        self.store_name, self.graph_name = store_name, graph_name
        self.store: VectorStore = FACTORIES[store_name](tmp, "forget")
        self.files: list[Path] = []  # SQLite files and directories whose bytes are scanned
        self.history: HistoryStore
        self.graph: GraphStore
        shared = self.store.colocated_history()
        if store_name == "pgvector" and graph_name == "postgres":
            from memkit.history.postgres import PostgresHistory

            dsn = engine_address("MEMKIT_TEST_PG_DSN")
            self.history = PostgresHistory(dsn, table=unique_name("fh"))
        elif shared is not None:
            self.history = shared
        else:
            path = tmp.mktemp("history") / "history.db"
            self.history = SQLiteHistory(str(path))
            self.files.append(path)
        if store_name == "sqlite":
            self.files.append(Path(self.store.path))  # type: ignore[attr-defined]
        if store_name in ("lancedb", "faiss"):  # directories memkit writes
            self.files.append(Path(self.store.path))  # type: ignore[attr-defined]
        colocated = self.store.colocated_graph()
        if graph_name == "sqlite":
            if colocated is not None:
                self.graph = colocated
            else:
                from memkit.graph.sqlite import SQLiteGraph

                path = tmp.mktemp("graph") / "graph.db"
                self.graph = SQLiteGraph(str(path))
                self.files.append(path)
        elif graph_name == "postgres":
            from memkit.graph.postgres import PostgresGraph

            self.graph = PostgresGraph(engine_address("MEMKIT_TEST_PG_DSN"),
                                       graph_name=unique_name("fg"))
        else:
            from memkit.graph.neo4j import Neo4jGraph

            url = engine_address("MEMKIT_TEST_BOLT_URL")
            self.graph = Neo4jGraph(url, label=unique_name("F"), indexes=False,
                                    driver=drivers[0], async_driver=drivers[1])

    def dumps(self) -> dict[str, str]:
        """Everything each part holds, as lower-case text."""
        records, cursor = [], None
        while True:
            page, cursor = self.store.list(None, 1000, cursor)
            records += [(r.memory, r.metadata) for r in page]
            if cursor is None:
                break
        out = {"records": json.dumps(records), "history": _dump_history(self.history),
               "graph": _dump_graph(self.graph)}
        if self.store_name == "pgvector":
            out["tables"] = _pg_tables(self.store.dsn, self.store.collection_name)  # type: ignore[attr-defined]
        for path in self.files:
            out[str(path)] = _file_bytes(path)
        return {name: text.lower() for name, text in out.items()}


def _dump_history(history: HistoryStore) -> str:
    if isinstance(history, SQLiteHistory):
        return _sqlite_tables(history._db.conn)
    from memkit.history.postgres import PostgresHistory

    assert isinstance(history, PostgresHistory)
    return _pg_tables(history.dsn, history.table)


def _dump_graph(graph: GraphStore) -> str:
    from memkit.graph.neo4j import Neo4jGraph
    from memkit.graph.postgres import PostgresGraph
    from memkit.graph.sqlite import SQLiteGraph

    if isinstance(graph, SQLiteGraph):
        return _sqlite_tables(graph._db.conn)
    if isinstance(graph, PostgresGraph):
        return _pg_tables(graph.dsn, graph.ops.e.strip('"').removesuffix("_entities"))
    assert isinstance(graph, Neo4jGraph)
    label = graph.ops.label
    with graph._driver.session() as session:  # type: ignore[union-attr]
        nodes = session.run(f"MATCH (e:{label}) RETURN properties(e) AS p").data()
        edges = session.run(f"MATCH (:{label})-[r]->(:{label}) RETURN properties(r) AS p").data()
    return json.dumps([nodes, edges], default=str)


def _sqlite_tables(conn: Any) -> str:
    """Every row of every table, and the words of every full-text index."""
    rows = []
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        rows += conn.execute(f'SELECT * FROM "{table}"').fetchall()
    for (fts,) in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE '%USING fts5%'"):
        conn.execute(f'CREATE VIRTUAL TABLE IF NOT EXISTS temp."{fts}_words"'
                     f" USING fts5vocab(main, '{fts}', 'row')")
        rows += conn.execute(f'SELECT term FROM temp."{fts}_words"').fetchall()
    return repr(rows)


def _pg_tables(dsn: str, prefix: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        tables = [t for (t,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", (prefix + "%",))]
        return repr([conn.execute(f'SELECT t::text FROM "{t}" t').fetchall() for t in tables])


def _file_bytes(path: Path) -> str:
    """The bytes of a file and its WAL, or of every file under a directory."""
    paths = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [
        p for p in (path, Path(f"{path}-wal")) if p.exists()]
    return b"".join(p.read_bytes() for p in paths).decode("latin-1")


@pytest.fixture(params=GRAPHS)
def graph_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def parts(store_name: str, graph_name: str, tmp_path_factory: pytest.TempPathFactory,
          bolt_drivers: tuple[Any, Any]) -> Iterator[Parts]:
    made = Parts(store_name, graph_name, tmp_path_factory, bolt_drivers)
    yield made
    _drop_chroma_collections([made.store])


@pytest.fixture(params=["sync", "async"])
def memory(request: pytest.FixtureRequest, parts: Parts,
           graph_loop: asyncio.AbstractEventLoop) -> Iterator[Shell]:
    cls = Memory if request.param == "sync" else AsyncMemory
    config = {"lifecycle": {"search_log": True, "search_log_text": True},
              "graph_store": {"entity_threshold": 0.7}}  # "Alice Vexmoor" is Alice
    shell = Shell(cls(config, llm=FunctionLLM(_answer), embedder=HashEmbedder(),
                      vector_store=parts.store, history=parts.history, graph_store=parts.graph),
                  graph_loop)
    yield shell
    parts.graph.reset()
    if shell.is_async:
        graph_loop.run_until_complete(shell.memory.aclose())  # type: ignore[union-attr]
    else:
        shell.memory.close()  # type: ignore[union-attr]
    _drop_milvus_collections([parts.store])


def _write_through_every_path(m: Shell, notes: Path) -> list[str]:
    [parrot] = m.add("I have a parrot", user_id="alice", metadata={"hobby": "Vorpalgrove"}).results
    [work] = m.add("I work at Zembla", user_id="alice").results
    m.update(work.id, "Alice works at Mirthwood Labs")  # the Zembla text: a past version
    m.delete(parrot.id)  # soft: the text stays as a deleted version, its relation closes
    m.add_entity("Snarkhunt", type="place", summary="Glimmerveil is near", user_id="alice")
    m.add_relation("Alice", "visits", "Xanthoria", user_id="alice")
    assert m.index_folder(notes, user_id="alice").added == 1
    m.search("where did Jabberwock go", user_id="alice")
    m.add("I like bobsleds", user_id="bob")
    m.search("bobsled rides", user_id="bob")
    return [parrot.id, work.id]


def test_a_purge_leaves_none_of_the_users_strings(memory: Shell, parts: Parts,
                                                  tmp_path: Path) -> None:
    notes = tmp_path / "notes of Pennyroyal"
    notes.mkdir()
    (notes / "journal.md").write_text("# Pennyroyal\nAlice buried treasure by the Pennyroyal.\n")
    ids = _write_through_every_path(memory, notes)
    before = parts.dumps()
    for secret in SECRETS:
        assert any(secret in text for text in before.values()), secret
    # past versions and the soft-deleted memory count: 2 facts, 1 past version, 1 note
    assert memory.purge(user_id="alice") == 4
    left = {name: [s for s in SECRETS if s in text] for name, text in parts.dumps().items()}
    assert {name: found for name, found in left.items() if found} == {}
    after = parts.dumps()
    for name in ("records", "history", "graph", *map(str, parts.files)):
        assert CONTROL in after[name], name
    assert memory.get_all(user_id="alice").results == []
    assert [(h.event, h.old_value, h.new_value) for h in memory.history(ids[0])] == [
        ("PURGE", None, None)]
    assert memory.get_entities(user_id="alice") == []
    assert memory.search_log(user_id="alice") == []
    [kept] = memory.get_all(user_id="bob").results
    assert kept.memory == "Bob likes his Bobsled"
    assert [e.name for e in memory.get_entities(user_id="bob")] == ["Bob", "Bobsled"]
    assert len(memory.search_log(user_id="bob")) == 1


@pytest.mark.parametrize("graph_name", ["sqlite"])  # each engine's reset: test_contract.py
def test_reset_leaves_nothing_also_after_reopening(memory: Shell, parts: Parts,
                                                   tmp_path: Path) -> None:
    notes = tmp_path / "notes of Pennyroyal"
    notes.mkdir()
    (notes / "journal.md").write_text("# Pennyroyal\nAlice buried treasure by the Pennyroyal.\n")
    _write_through_every_path(memory, notes)
    memory.reset()
    left = {name: [s for s in (*SECRETS, CONTROL) if s in text]
            for name, text in parts.dumps().items()}
    assert {name: found for name, found in left.items() if found} == {}
    assert memory.get_entities(user_id="alice") == []
    assert memory.search_log(user_id="bob") == []


def test_a_hard_delete_forgets_the_alias_its_memory_brought(memory: Shell, parts: Parts) -> None:
    """The entity stays (another memory supports it); the spelling only the deleted memory
    used goes, from every table and from the raw bytes."""
    memory.add("I work at Zembla", user_id="alice")
    [aliased] = memory.add("I call her Alice Vexmoor", user_id="alice").results
    assert memory.get_entity("alice vexmoor", user_id="alice").name == "Alice"
    assert "vexmoo" in parts.dumps()["graph"]
    memory.delete(aliased.id, hard=True)
    assert {name for name, text in parts.dumps().items() if "vexmoo" in text} == set()
    assert memory.get_entity("alice vexmoor", user_id="alice") is None
    assert [r.target for r in memory.get_entity_graph("Alice", user_id="alice").relations] == [
        "Zembla Labs"]
