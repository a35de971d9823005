"""Entities <-> memories through Memory and AsyncMemory on every graph store: an add names
the entities it is about, search and get_all narrow to an entity's memories (by name,
alias or id) with stable pages, and forgetting takes the links and the aliases a memory
brought."""

from __future__ import annotations

from typing import Any

import pytest

from memkit import ConfigError, InvalidArgument
from memkit.testing import ScriptedLLM
from tests.graph.test_memory import MERGING, extraction, rel


def _names(items: Any) -> list[str]:
    return sorted(e.name for e in items)


def _texts(result: Any) -> list[str]:
    return sorted(item.memory for item in result.results)


def test_an_add_links_the_entities_it_names_by_name_or_id(make: Any) -> None:
    m = make(ScriptedLLM([]))
    first = m.add("Lunch with the Acme team on Friday", user_id="u", infer=False,
                  entities=["Alice", "Acme"])
    [event] = first.results
    assert _names(first.entities) == ["Acme", "Alice"]  # both were new
    assert {e.type for e in first.entities} == {"unknown"}
    acme = m.get_entity("acme", user_id="u")
    second = m.add("Acme ships anvils", user_id="u", infer=False, entities=[acme.id, "ACME"])
    assert second.entities == []  # known already: none created
    memories = m.get_entity_graph("Acme", user_id="u", include_memories=True).memories
    assert sorted(i.memory for i in memories) == ["Acme ships anvils",
                                                  "Lunch with the Acme team on Friday"]
    alice = m.get_entity_graph("alice", user_id="u", include_memories=True)
    assert [i.id for i in alice.memories] == [event.id]
    assert m.get_entity("Alice", user_id="v") is None  # the scope's own graph


def test_named_entities_join_what_extraction_finds(make: Any) -> None:
    llm = ScriptedLLM([extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")])])
    m = make(llm)
    result = m.add("I started at Acme", user_id="u", entities=["Project Falcon", "alice"])
    [event] = result.results
    assert _names(result.entities) == ["Acme", "Alice", "Project Falcon"]
    assert [e.type for e in result.entities if e.name == "Alice"] == ["person"]
    falcon = m.get_entity_graph("Project Falcon", user_id="u", include_memories=True)
    assert [i.id for i in falcon.memories] == [event.id] and falcon.relations == []


def test_entities_need_a_graph_store_and_a_known_id(make: Any) -> None:
    plain = make(ScriptedLLM([]), graph=False)
    with pytest.raises(ConfigError, match="graph store"):
        plain.add("Lunch with Alice", user_id="u", infer=False, entities=["Alice"])
    assert plain.get_all(user_id="u").results == []
    m = make(ScriptedLLM([]))
    with pytest.raises(InvalidArgument, match="no entity with id"):
        m.add("Lunch", user_id="u", infer=False,
              entities=["0b1f5c0e-3d7a-4c1e-9a55-2f1f5d0c9e41"])
    for bad in ("Alice", [""], [3], ["x" * 201]):
        with pytest.raises(InvalidArgument):
            m.add("Lunch", user_id="u", infer=False, entities=bad)
    assert m.get_all(user_id="u").results == [] and m.get_entities(user_id="u") == []


def test_a_hard_delete_forgets_the_links_and_entities_only_it_named(make: Any) -> None:
    m = make(ScriptedLLM([]))
    [kept] = m.add("Acme ships anvils", user_id="u", infer=False, entities=["Acme"]).results
    [gone] = m.add("Zorblat met Acme", user_id="u", infer=False,
                   entities=["Acme", "Zorblat"]).results
    m.delete(gone.id, hard=True)
    assert _names(m.get_entities(user_id="u")) == ["Acme"]
    memories = m.get_entity_graph("Acme", user_id="u", include_memories=True).memories
    assert [i.id for i in memories] == [kept.id]
    m.purge(user_id="u")
    assert m.get_entities(user_id="u") == []


def test_a_purge_forgets_the_aliases_only_its_memories_used(make: Any) -> None:
    m = make(ScriptedLLM(list(MERGING)), threshold=0.7)  # "alice smith" merges into "Alice"
    m.add("Alice works at Acme", user_id="u")
    [berlin] = m.add("Alice Smith lives in Berlin", user_id="u").results
    assert m.get_entity("alice smith", user_id="u").name == "Alice"
    m.delete(berlin.id, hard=True)
    assert m.get_entity("alice smith", user_id="u") is None  # only that memory used it
    assert m.get_entity("Alice", user_id="u") is not None  # Acme's memory still supports it


def _alice_and_bob(m: Any) -> dict[str, str]:
    """Alice's memories (one through a relation, two linked on add) and Bob's; their ids."""
    [acme] = m.add("I work at Acme", user_id="u").results  # the script's one extraction
    ids = {"acme": acme.id}
    for key, text, named in (("tea", "Alice likes green tea", ["Alice"]),
                             ("rome", "Alice visited Rome", ["alice", "Rome"]),
                             ("bob", "Bob likes green tea", ["Bob"])):
        [event] = m.add(text, user_id="u", infer=False, entities=named).results
        ids[key] = event.id
    return ids


def test_search_and_get_all_narrow_to_an_entity_by_name_alias_or_id(make: Any) -> None:
    m = make(ScriptedLLM([extraction(["Alice works at Acme"],
                                     [rel("Alice", "works at", "Acme")])]))
    ids = _alice_and_bob(m)
    alices = {ids["acme"], ids["tea"], ids["rome"]}
    alice = m.get_entity("Alice", user_id="u")
    for ref in ("Alice", " ALICE ", alice.id):
        assert {i.id for i in m.search("green tea", user_id="u", entity=ref).results} == alices
        assert {i.id for i in m.get_all(user_id="u", entity=ref).results} == alices
    assert [i.id for i in m.search("tea", user_id="u", entity="Acme").results] == [ids["acme"]]
    assert [i.id for i in m.get_all(user_id="u", entity="rome").results] == [ids["rome"]]
    assert m.search("tea", user_id="u", entity="Nobody").results == []
    assert m.get_all(user_id="v", entity="Alice").results == []  # another scope's graph
    assert m.get_all(user_id="u", entity="Bob", filters={"memory": {"contains": "Alice"}}
                     ).results == []  # one more condition of the filter


def test_pages_of_an_entity_filter_are_stable(make: Any) -> None:
    m = make(ScriptedLLM([extraction(["Alice works at Acme"],
                                     [rel("Alice", "works at", "Acme")])]))
    _alice_and_bob(m)
    whole = [i.id for i in m.get_all(user_id="u", entity="Alice").results]
    pages = [i.id for offset in (0, 2, 4)
             for i in m.get_all(user_id="u", entity="Alice", limit=2, offset=offset).results]
    assert pages == whole and len(whole) == 3
    paged = [i.id for offset in range(4) for i in m.search(
        "Alice tea", user_id="u", entity="Alice", limit=1, offset=offset).results]
    assert sorted(paged) == sorted(whole)  # none twice, none skipped, only Alice's
    first = m.search("Alice tea", user_id="u", entity="Alice", limit=1).results
    assert [i.id for i in first] == paged[:1]
    every = [i.id for i in m.get_all(user_id="u").results]
    assert [i.id for i in m.get_all(user_id="u", offset=1, limit=2).results] == every[1:3]
    with pytest.raises(InvalidArgument):
        m.get_all(user_id="u", offset=-1)


def test_an_entity_filter_as_of_reads_the_versions_of_its_memories(make: Any) -> None:
    m = make(ScriptedLLM([extraction(["Alice works at Acme"],
                                     [rel("Alice", "works at", "Acme")])]))
    ids = _alice_and_bob(m)
    before = m.get(ids["rome"]).updated_at
    m.update(ids["rome"], "Alice visited Paris")
    assert [i.memory for i in m.get_all(user_id="u", entity="Rome").results] == [
        "Alice visited Paris"]  # linked to the memory, whatever its text says now
    then = m.get_all(user_id="u", entity="Rome", as_of=before)
    assert [i.memory for i in then.results] == ["Alice visited Rome"]


def test_an_entity_filter_needs_a_graph_store_and_one_scope(make: Any) -> None:
    plain = make(ScriptedLLM([]), graph=False)
    with pytest.raises(ConfigError, match="graph store"):
        plain.search("tea", user_id="u", entity="Alice")
    with pytest.raises(ConfigError, match="graph store"):
        plain.get_all(user_id="u", entity="Alice")
    m = make(ScriptedLLM([]))
    with pytest.raises(InvalidArgument, match="scopes"):
        m.search("tea", scopes=[{"user_id": "u"}], entity="Alice")
    with pytest.raises(InvalidArgument):
        m.get_all(user_id="u", entity="")


@pytest.mark.every_store  # store_name: every registered vector store (tests/conftest.py)
def test_an_entity_filter_narrows_on_every_store(store_name: str, tmp_path_factory: Any,
                                                  tmp_path: Any) -> None:
    from memkit import Memory
    from memkit.graph.sqlite import SQLiteGraph
    from memkit.testing import HashEmbedder
    from tests.stores.conftest import (
        FACTORIES,
        _drop_chroma_collections,
        _drop_milvus_collections,
    )

    store = FACTORIES[store_name](tmp_path_factory, "entity")
    graph = SQLiteGraph(str(tmp_path / "graph.db"))
    try:
        with Memory(llm=ScriptedLLM([]), embedder=HashEmbedder(), vector_store=store,
                    graph_store=graph) as m:
            for text, named in (("Lunch at Acme", ["Alice", "Acme"]), ("Alice likes tea", []),
                                ("Acme sells tea", ["Acme"]), ("Tea at noon", ["Alice"])):
                m.add(text, user_id="u", infer=False, entities=named)
            # every memory shares a word with the query: an ANN index (pgvector's HNSW) need
            # not find one that shares none, and the point here is the entity's narrowing
            assert sorted(i.memory for i in m.search("tea at Acme", user_id="u",
                                                     entity="acme")) == [
                "Acme sells tea", "Lunch at Acme"]
            pages = [i.memory for offset in (0, 1, 2) for i in m.get_all(
                user_id="u", entity="Alice", limit=1, offset=offset).results]
            assert sorted(pages) == ["Lunch at Acme", "Tea at noon"]
    finally:
        _drop_chroma_collections([store])
        _drop_milvus_collections([store])
