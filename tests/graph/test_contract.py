"""What every graph store does, checked on each real engine, sync and async."""

from __future__ import annotations

import pytest

from memkit.graph.base import GraphError, GraphScope, NewEntity, NewRelation
from tests.graph.conftest import Graph

ALICE = GraphScope(user_id="alice")
BOB = GraphScope(user_id="bob")
T1, T2, T3 = "2026-01-01T00:00:00.000000+00:00", "2026-02-01T00:00:00.000000+00:00", \
    "2026-03-01T00:00:00.000000+00:00"


def chain(graph: Graph, scope: GraphScope = ALICE) -> None:
    """alice -WORKS_AT-> acme -LOCATED_IN-> berlin -IN-> germany, and alice -KNOWS-> bob."""
    graph.upsert_relations(scope, [
        NewRelation("Alice", "works at", "Acme"), NewRelation("Acme", "located in", "Berlin"),
        NewRelation("Berlin", "in", "Germany"), NewRelation("Alice", "knows", "Bob"),
    ], T1)


def test_upsert_entities_creates_then_updates_by_normalised_name(graph: Graph) -> None:
    [created] = graph.upsert_entities(ALICE, [NewEntity("Alice Smith", "person")], T1)
    assert (created.name, created.type, created.user_id) == ("Alice Smith", "person", "alice")
    [updated] = graph.upsert_entities(ALICE, [NewEntity("  alice   SMITH ", "unknown", "CTO")], T2)
    assert updated.id == created.id
    assert (updated.name, updated.type, updated.summary) == ("Alice Smith", "person", "CTO")
    assert updated.updated_at == T2 and updated.created_at == T1
    assert [e.name for e in graph.entities(ALICE)] == ["Alice Smith"]


def test_missing_endpoints_are_created_with_type_unknown(graph: Graph) -> None:
    graph.upsert_entities(ALICE, [NewEntity("Alice", "person")], T1)
    [relation] = graph.upsert_relations(ALICE, [NewRelation("alice", "works at", "Acme")], T1)
    assert relation.triple == ("Alice", "WORKS_AT", "Acme")
    types = {e.name: e.type for e in graph.entities(ALICE)}
    assert types == {"Alice": "person", "Acme": "unknown"}
    graph.upsert_entities(ALICE, [NewEntity("ACME", "company")], T2)
    assert {e.name: e.type for e in graph.entities(ALICE, type="company")} == {"Acme": "company"}


def test_relation_upsert_raises_its_weight_and_keeps_its_memories(graph: Graph) -> None:
    [first] = graph.upsert_relations(ALICE, [NewRelation("Alice", "likes", "Tea",
                                                         memory_ids=("m1",))], T1)
    [again] = graph.upsert_relations(ALICE, [
        NewRelation("alice", "LIKES", "tea", 0.5, ("m2",)),
        NewRelation("Alice", "likes", "Tea", 0.9, ("m1",)),
    ], T2)
    assert again.id == first.id and again.weight == 3.0 and again.confidence == 1.0
    assert again.memory_ids == ("m1", "m2") and again.valid_from == T1 and again.valid_to is None
    assert len(graph.relations(ALICE)) == 1
    assert [r.id for r in graph.relations(ALICE, memory_ids=["m2"])] == [first.id]


def test_depth_one_neighbourhood(graph: Graph) -> None:
    chain(graph)
    sub = graph.neighbourhood(ALICE, ["alice"], 1)
    assert sorted(e.name for e in sub.entities) == ["Acme", "Alice", "Bob"]
    assert sorted(r.triple for r in sub.relations) == [
        ("Alice", "KNOWS", "Bob"), ("Alice", "WORKS_AT", "Acme")]


def test_depth_two_neighbourhood(graph: Graph) -> None:
    chain(graph)
    sub = graph.neighbourhood(ALICE, ["Alice"], 2)
    assert sorted(e.name for e in sub.entities) == ["Acme", "Alice", "Berlin", "Bob"]
    assert ("Acme", "LOCATED_IN", "Berlin") in [r.triple for r in sub.relations]
    reverse = graph.neighbourhood(ALICE, ["Germany"], 2)  # relations are walked both ways
    assert sorted(e.name for e in reverse.entities) == ["Acme", "Berlin", "Germany"]
    assert [e.name for e in graph.neighbourhood(ALICE, ["Alice"], 0).entities] == ["Alice"]
    assert graph.neighbourhood(ALICE, ["nobody"], 2).entities == []


def test_deleting_an_entity_cascades_its_relations(graph: Graph) -> None:
    chain(graph)
    [deleted] = graph.delete_entities(ALICE, ["acme"])
    assert deleted.name == "Acme"
    assert sorted(r.triple for r in graph.relations(ALICE, include_closed=True)) == [
        ("Alice", "KNOWS", "Bob"), ("Berlin", "IN", "Germany")]
    assert graph.delete_entities(ALICE, ["acme"]) == []
    assert sorted(e.name for e in graph.neighbourhood(ALICE, ["Alice"], 2).entities) == [
        "Alice", "Bob"]


def test_closing_a_relation_keeps_it_and_stops_traversal(graph: Graph) -> None:
    [google] = graph.upsert_relations(ALICE, [NewRelation("Alice", "works at", "Google")], T1)
    [closed] = graph.close_relations(ALICE, [google.id], T2)
    assert closed.id == google.id and closed.valid_to == T2
    assert graph.close_relations(ALICE, [google.id], T3) == []  # closed once
    [meta] = graph.upsert_relations(ALICE, [NewRelation("Alice", "works at", "Meta")], T2)
    assert [r.triple for r in graph.relations(ALICE, source="alice", type="works at")] == [
        ("Alice", "WORKS_AT", "Meta")]
    history = graph.relations(ALICE, source="Alice", include_closed=True)
    assert [(r.target, r.valid_from, r.valid_to) for r in history] == [
        ("Google", T1, T2), ("Meta", T2, None)]
    assert "Google" not in [e.name for e in graph.neighbourhood(ALICE, ["Alice"], 1).entities]
    # the same triple mentioned again opens a new relation; the closed one stays
    [again] = graph.upsert_relations(ALICE, [NewRelation("Alice", "works at", "Google")], T3)
    assert again.id != google.id and again.weight == 1.0
    assert len(graph.relations(ALICE, include_closed=True)) == 3
    assert meta.valid_to is None


def test_delete_relations(graph: Graph) -> None:
    chain(graph)
    knows = graph.relations(ALICE, type="knows")
    assert graph.delete_relations(ALICE, [r.id for r in knows]) == 1
    assert graph.delete_relations(ALICE, [r.id for r in knows]) == 0
    assert graph.relations(ALICE, type="knows") == []
    assert "Bob" in [e.name for e in graph.entities(ALICE)]  # the entity stays


def test_scope_isolation(graph: Graph) -> None:
    chain(graph, ALICE)
    graph.upsert_relations(BOB, [NewRelation("Alice", "works at", "Initech")], T1)
    alices_relation = graph.relations(ALICE, type="works at")[0]
    assert [r.triple for r in graph.relations(BOB)] == [("Alice", "WORKS_AT", "Initech")]
    assert sorted(e.name for e in graph.neighbourhood(BOB, ["Alice"], 2).entities) == [
        "Alice", "Initech"]
    # another scope's ids and names reach nothing
    assert graph.close_relations(BOB, [alices_relation.id], T2) == []
    assert graph.delete_relations(BOB, [alices_relation.id]) == 0
    graph.delete_entities(BOB, ["Acme", "Alice"])
    assert graph.relations(ALICE, type="works at")[0].valid_to is None
    assert len(graph.entities(ALICE)) == 5
    assert graph.entities(BOB) == [] or [e.name for e in graph.entities(BOB)] == ["Initech"]
    assert graph.entities(GraphScope(user_id="alice", agent_id="x")) == []


def test_bad_input_raises_graph_error(graph: Graph) -> None:
    with pytest.raises(GraphError):
        graph.upsert_relations(ALICE, [NewRelation("Alice", "knows", "alice")], T1)
    with pytest.raises(GraphError):
        graph.upsert_relations(ALICE, [NewRelation("", "knows", "Bob")], T1)
    with pytest.raises(GraphError):
        graph.upsert_relations(ALICE, [NewRelation("Alice", "!!", "Bob")], T1)
    with pytest.raises(GraphError):
        graph.neighbourhood(ALICE, ["Alice"], 7)
    assert graph.entities(ALICE) == []


def test_names_resolve_by_spelling_alias_and_name_embedding(graph: Graph) -> None:
    graph.upsert_relations(ALICE, [NewRelation("Alice", "works at", "Acme")], T1)
    graph.set_vectors(ALICE, ["Alice", "Acme"], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    graph.set_vectors(ALICE, ["Alice"], [[0.0, 0.0, 1.0]])  # the first embedding stays
    near = [0.9, 0.1, 0.0]  # cosine 0.99 with Alice's
    assert graph.resolve(ALICE, [" ALICE "]) == {" ALICE ": "Alice"}
    assert graph.resolve(ALICE, ["alice smith"]) == {}
    assert graph.resolve(ALICE, ["alice smith"], [near], 0.999) == {}
    assert graph.resolve(BOB, ["alice smith"], [near], 0.5) == {}
    assert graph.resolve(ALICE, ["alice smith", "Zed"], [near, [0.0, 0.0, 1.0]], 0.9) == {
        "alice smith": "Alice"}
    assert graph.resolve(ALICE, ["Alice  Smith"]) == {"Alice  Smith": "Alice"}  # now an alias
    graph.delete_entities(ALICE, ["Alice"])
    assert graph.resolve(ALICE, ["alice smith"]) == {}


def test_repoint_moves_relations_to_the_memory_that_absorbed_theirs(graph: Graph) -> None:
    graph.upsert_relations(ALICE, [NewRelation("Alice", "likes", "Tea", memory_ids=("m1", "m2")),
                                   NewRelation("Alice", "knows", "Bob", memory_ids=("m2",))], T1)
    graph.upsert_relations(BOB, [NewRelation("Bob", "likes", "Tea", memory_ids=("m2",))], T1)
    graph.repoint(ALICE, [("m2", "m1"), ("m3", "m1")])
    assert {r.triple: r.memory_ids for r in graph.relations(ALICE)} == {
        ("Alice", "LIKES", "Tea"): ("m1",), ("Alice", "KNOWS", "Bob"): ("m1",)}
    assert graph.relations(BOB)[0].memory_ids == ("m2",)  # another scope is not touched


def test_linked_memories_and_alias_uses_are_forgotten_and_repointed(graph: Graph) -> None:
    graph.upsert_relations(ALICE, [NewRelation("Alice", "works at", "Acme", memory_ids=("m1",))],
                           T1)
    linked = graph.link_memories(ALICE, ["alice", "Zed"], ["m2", "m3"], T2)
    assert [(e.name, e.type) for e in linked] == [("Alice", "unknown"), ("Zed", "unknown")]
    [zed] = [e for e in linked if e.name == "Zed"]
    assert graph.entities_by_id(ALICE, [zed.id]) == [zed] and graph.entities_by_id(BOB, [zed.id]) == []
    assert graph.memory_ids_of(ALICE, [zed.id]) == ["m2", "m3"]
    assert graph.memory_ids_of(BOB, [zed.id]) == []
    graph.set_vectors(ALICE, ["Alice"], [[1.0, 0.0]])
    assert graph.resolve(ALICE, ["alice smith"], [[0.9, 0.1]], 0.9, ["m3"]) == {
        "alice smith": "Alice"}  # an alias m3's add used
    assert graph.resolve(ALICE, ["Alice Smith"], None, 1.0, ["m4"]) == {"Alice Smith": "Alice"}
    graph.repoint(ALICE, [("m3", "m5")])  # a consolidation merged m3 into m5
    assert graph.memory_ids_of(ALICE, [zed.id]) == ["m2", "m5"]
    graph.forget_memories(["m4"])
    assert graph.resolve(ALICE, ["alice smith"]) == {"alice smith": "Alice"}  # m5 uses it
    gone = graph.forget_memories(["m2", "m5"])
    assert zed.id in gone and graph.entities(ALICE, names=["Zed"]) == []
    assert graph.resolve(ALICE, ["alice smith"]) == {}  # no memory uses it any more
    assert [e.name for e in graph.entities(ALICE)] == ["Acme", "Alice"]  # m1's relation stays
