"""Graph memory through Memory and AsyncMemory: extraction in the same LLM call as the
facts, relations closed only by decisions, hostile output contained, scope-checked methods."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkit import ConfigError, ScopeError
from memkit.graph.base import GraphError, GraphScope
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.graph.conftest import JOINED


def rel(source: str, relation: str, target: str, source_type: str = "person",
        target_type: str = "organization") -> dict[str, str]:
    return {"source": source, "source_type": source_type, "relation": relation,
            "target": target, "target_type": target_type}


def extraction(facts: list[str], relations: list[Any]) -> dict[str, Any]:
    return {"facts": facts, "relations": relations}


def triples(items: Any) -> list[tuple[str, str, str]]:
    return sorted((r.source, r.relation, r.target) for r in items)


def test_seed001_case33_add_with_graph_extracts_entities_and_relations(make: Any) -> None:
    llm = ScriptedLLM([extraction(["User works at Google"], [rel("user", "works at", "Google")])])
    m = make(llm)
    result = m.add("I work at Google", user_id="alice")
    assert len(llm.calls) == 1 and llm.calls[0].json_schema is not None
    assert "relations" in llm.calls[0].json_schema["properties"]
    fact = llm.calls[0].json_schema["properties"]["facts"]["items"]  # a model that enforces
    assert fact["required"] == ["text", "type", "importance", "subject"]  # the schema keeps them
    [event] = result.results
    assert triples(result.relations) == [("user", "WORKS_AT", "Google")]
    assert result.relations[0].memory_ids == [event.id]
    assert {(e.name, e.type) for e in m.get_entities(user_id="alice")} == {
        ("user", "person"), ("Google", "organization")}
    assert m.get_entity("GOOGLE", user_id="alice").type == "organization"
    assert m.get_entities(user_id="alice", type="organization")[0].name == "Google"


def test_seed000_10_4_entities_and_relations_are_stored_in_their_scope(make: Any) -> None:
    llm = ScriptedLLM([extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")])])
    m = make(llm)
    [event] = m.add("Alice works at Acme", user_id="u").results
    acme = m.add_entity("ACME", type="company", summary="Makes anvils", user_id="u")
    assert (acme.name, acme.type, acme.summary, acme.user_id) == (
        "Acme", "company", "Makes anvils", "u")
    assert m.get_entity("acme", user_id="u") == acme
    [stored] = m.get_entity_graph("Alice", user_id="u").relations
    assert (stored.source, stored.relation, stored.target, stored.weight) == (
        "Alice", "WORKS_AT", "Acme", 1.0)
    assert stored.memory_ids == [event.id] and stored.valid_to is None and stored.user_id == "u"
    assert m.add_relation("alice", "works at", "acme", user_id="u").id == stored.id
    assert m.get_entity_graph("Alice", user_id="u").relations[0].weight == 2.0
    assert m.get_entity("Acme", user_id="v") is None
    assert m.get_entities(user_id="v") == []


def test_seed000_10_4_relations_are_typed(make: Any) -> None:
    llm = ScriptedLLM([extraction(["Alice works at Acme and holds Acme shares"], [
        rel("Alice", "works at", "Acme"), rel("Alice", "holds-shares of", "Acme"),
        rel("alice", "WORKS_AT", "acme")])])
    m = make(llm)
    result = m.add("Alice works at Acme and holds Acme shares", user_id="u")
    assert triples(result.relations) == [("Alice", "HOLDS_SHARES_OF", "Acme"),
                                         ("Alice", "WORKS_AT", "Acme")]
    weights = {r.relation: r.weight for r in m.get_entity_graph("Alice", user_id="u").relations}
    assert weights == {"HOLDS_SHARES_OF": 1.0, "WORKS_AT": 1.0}  # one add, one mention
    assert {e.name: e.type for e in m.get_entities(user_id="u")} == {
        "Acme": "organization", "Alice": "person"}
    assert m.delete_relation("Alice", "works at", "Acme", user_id="u") == 1
    assert triples(m.get_entity_graph("Alice", user_id="u").relations) == [
        ("Alice", "HOLDS_SHARES_OF", "Acme")]


def test_seed000_10_4_graph_enhanced_search_finds_the_second_hop(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["Alice is managed by Bob"], [rel("Alice", "managed by", "Bob", "person", "person")]),
        extraction(["Bob lives in Paris"], [rel("Bob", "lives in", "Paris", "person", "city")]),
        {"memory": [{"event": "ADD", "id": None, "text": "Bob lives in Paris", "old_memory": None}]},
    ])
    m = make(llm)
    m.add("Alice is managed by Bob", user_id="u")
    m.add("Bob lives in Paris", user_id="u")
    for i in range(8):
        m.add(f"The manager of team {i} is on leave", user_id="u", infer=False)
    question = "Where is Alice's manager based?"
    plain = [i.memory for i in m.search(question, user_id="u", limit=3, graph=False).results]
    found = m.search(question, user_id="u", limit=3)
    assert "Bob lives in Paris" not in plain
    assert {"Alice is managed by Bob", "Bob lives in Paris"} <= {i.memory for i in found.results}
    assert triples(found.relations) == [("Alice", "MANAGED_BY", "Bob"), ("Bob", "LIVES_IN", "Paris")]


def test_an_add_with_the_graph_costs_at_most_two_llm_calls(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["User works at Google"], [rel("user", "works at", "Google")]),
        extraction(["User lives in Berlin"], [rel("user", "lives in", "Berlin", target_type="city")]),
        {"memory": [{"event": "ADD", "id": None, "text": "User lives in Berlin",
                     "old_memory": None}]},
    ])
    m = make(llm)
    m.add("I work at Google", user_id="alice")
    second = m.add("I live in Berlin", user_id="alice")
    assert len(llm.calls) == 3  # 1 for the first add, 2 for the second
    assert triples(second.relations) == [("user", "LIVES_IN", "Berlin")]


def test_seed000_10_4_relation_invalidation_closes_the_contradicted_relation(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["User works at Google"], [rel("user", "works at", "Google")]),
        extraction(["User moved to Meta"], [rel("user", "works at", "Meta")]),
        {"memory": [{"event": "UPDATE", "id": "0", "text": "User works at Meta",
                     "old_memory": "User works at Google"}]},
    ])
    m = make(llm)
    m.add("I work at Google", user_id="alice")
    result = m.add("I moved to Meta", user_id="alice")
    assert triples(result.closed_relations) == [("user", "WORKS_AT", "Google")]
    assert result.closed_relations[0].valid_to is not None
    assert triples(result.relations) == [("user", "WORKS_AT", "Meta")]
    graph = m.get_entity_graph("user", depth=1, user_id="alice")
    assert triples(graph.relations) == [("user", "WORKS_AT", "Meta")]
    kept = m.memory.graph_store.relations(GraphScope("alice"), include_closed=True)
    assert sorted((r.target, r.valid_to is None) for r in kept) == [("Google", False), ("Meta", True)]
    with_closed = m.get_entity_graph("user", depth=1, user_id="alice", include_closed=True)
    assert sorted((r.target, r.valid_to is None) for r in with_closed.relations) == [
        ("Google", False), ("Meta", True)]
    assert sorted(e.name for e in with_closed.entities) == ["Google", "Meta", "user"]


def test_similarity_alone_never_closes_a_relation(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["User works at Google"], [rel("user", "works at", "Google")]),
        extraction(["User works at Meta too"], [rel("user", "works at", "Meta")]),
        {"memory": [{"event": "ADD", "id": None, "text": "User works at Meta too",
                     "old_memory": None}, {"event": "NONE", "id": "0", "text": None,
                                           "old_memory": None}]},
    ])
    m = make(llm)
    m.add("I work at Google", user_id="alice")
    result = m.add("I also work at Meta", user_id="alice")
    assert result.closed_relations == []
    graph = m.get_entity_graph("user", user_id="alice")
    assert triples(graph.relations) == [("user", "WORKS_AT", "Google"), ("user", "WORKS_AT", "Meta")]


def test_a_delete_decision_closes_the_relations_of_the_deleted_memory(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["User works at Google"], [rel("user", "works at", "Google")]),
        extraction(["User left Google", "User lives in Berlin"],
                   [rel("user", "lives in", "Berlin", target_type="city")]),
        {"memory": [{"event": "DELETE", "id": "0", "text": None, "old_memory": None},
                    {"event": "ADD", "id": None, "text": "User lives in Berlin",
                     "old_memory": None}]},
    ])
    m = make(llm)
    m.add("I work at Google", user_id="alice")
    result = m.add("I left Google; I live in Berlin", user_id="alice")
    assert triples(result.closed_relations) == [("user", "WORKS_AT", "Google")]
    assert triples(m.get_entity_graph("user", user_id="alice").relations) == [
        ("user", "LIVES_IN", "Berlin")]


def test_hostile_graph_output_is_skipped_and_reported(make: Any) -> None:
    bob_id = "00000000-0000-0000-0000-000000000000"
    # 2,000 relations (an answer over 256,000 characters is refused whole by the parser)
    flood = [{"source": f"u{i}", "relation": "k", "target": f"f{i}"} for i in range(2_000)]
    llm = ScriptedLLM([extraction(["User knows Carol"], [
        rel("Carol", "knows", "carol"),            # self-loop
        {"source": "user", "relation": "knows"},   # malformed: no target
        rel("user", "!!!", "Carol"),               # no relation type left
        rel(bob_id, "owns", "x" * 500),            # an id of nothing, a huge name
        "user knows Carol",                        # not an object
        rel("user", "knows", "Carol"),
        *flood,
    ])])
    m = make(llm)
    m.add_relation("Bob", "works at", "Initech", user_id="bob")
    result = m.add("I know Carol", user_id="alice")
    assert len(result.results) == 1
    kept = m.get_entity_graph("user", user_id="alice").relations
    assert ("user", "KNOWS", "Carol") in triples(kept)
    assert len(result.relations) <= 100
    messages = [e.message for e in result.errors if e.stage == "graph"]
    assert any("itself" in msg for msg in messages)
    assert any("relations beyond" in msg for msg in messages)
    assert len(messages) >= 5
    assert triples(m.get_entity_graph("Bob", user_id="bob").relations) == [
        ("Bob", "WORKS_AT", "Initech")]
    assert [e.name for e in m.get_entities(user_id="bob")] == ["Bob", "Initech"]


def test_hostile_graph_output_naming_another_scopes_entity_stays_in_its_scope(make: Any) -> None:
    m = make(ScriptedLLM([]))
    m.add_relation("Bob", "works at", "Initech", user_id="bob")
    bob_id = m.get_entity("Bob", user_id="bob").id  # what an LLM that saw it might echo
    m.memory.llm.push(extraction(["User knows Bob"], [
        rel("user", "knows", bob_id), rel(bob_id, "works at", "Evil Corp"),
        rel("user", "knows", "Bob")]))
    result = m.add("I know Bob", user_id="alice")
    assert result.errors == []
    assert all(r.user_id == "alice" for r in result.relations)
    assert triples(m.get_entity_graph("Bob", user_id="bob").relations) == [
        ("Bob", "WORKS_AT", "Initech")]
    assert m.get_entity_graph("Bob", user_id="bob").relations[0].weight == 1.0
    assert sorted(e.name for e in m.get_entities(user_id="bob")) == ["Bob", "Initech"]
    assert m.get_entity("Bob", user_id="alice").id != m.get_entity("Bob", user_id="bob").id


def test_hostile_ten_thousand_relations_in_one_answer_touch_nothing(make: Any) -> None:
    flood = [rel(f"u{i}", "knows", f"f{i}") for i in range(10_000)]
    m = make(ScriptedLLM([extraction(["User knows Carol"], flood)] * 2))  # asked again, the same
    m.add_relation("Bob", "works at", "Initech", user_id="bob")
    result = m.add("I know Carol", user_id="alice")
    assert [e.stage for e in result.errors] == ["extraction"]  # over the answer size limit
    assert len(result.relations) <= 100
    assert len(m.get_entities(user_id="alice", limit=1000)) <= 200
    assert sorted(e.name for e in m.get_entities(user_id="bob")) == ["Bob", "Initech"]


def test_deleting_an_entity_keeps_its_memories(make: Any) -> None:
    llm = ScriptedLLM([extraction(["User works at Google"], [rel("user", "works at", "Google")])])
    m = make(llm)
    m.add("I work at Google", user_id="alice")
    assert m.delete_entity("google", user_id="alice") is True
    assert m.delete_entity("google", user_id="alice") is False
    assert m.get_entity("Google", user_id="alice") is None
    assert m.get_entity_graph("user", user_id="alice").relations == []
    assert [i.memory for i in m.get_all(user_id="alice").results] == ["User works at Google"]


def test_seed001_case35_entity_methods_behind_v1_entities_are_scope_checked(make: Any) -> None:
    m = make(ScriptedLLM())
    added = m.add_relation("Alice", "manages", "Bob", source_type="person", user_id="alice")
    assert (added.source, added.relation, added.target, added.weight) == (
        "Alice", "MANAGES", "Bob", 1.0)
    assert m.add_relation("alice", "MANAGES", "bob", user_id="alice").weight == 2.0
    assert m.get_entity("Alice", user_id="bob") is None
    assert m.delete_entity("Alice", user_id="bob") is False
    assert m.delete_relation("Alice", "manages", "Bob", user_id="bob") == 0
    assert m.get_entity_graph("Alice", user_id="bob").entities == []
    with pytest.raises(ScopeError):
        m.get_entities()
    assert m.delete_relation("Alice", "manages", "Bob", user_id="alice") == 1
    assert m.get_entity("Alice", user_id="alice").type == "person"


def test_without_a_graph_store_graph_methods_raise(make: Any) -> None:
    llm = ScriptedLLM([{"facts": ["User works at Google"]}])
    m = make(llm, graph=False)
    assert "relations" not in m.add("I work at Google", user_id="a").model_dump(exclude_defaults=True)
    assert "relations" not in llm.calls[0].json_schema["properties"]
    with pytest.raises(ConfigError):
        m.get_entities(user_id="a")


def test_seed001_case34_graph_search_returns_related_entities_and_memories(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")]),
        extraction(["Acme is based in Berlin"],
                   [rel("Acme", "based in", "Berlin", "organization", "city")]),
        {"memory": [{"event": "ADD", "id": None, "text": "Acme is based in Berlin",
                     "old_memory": None}]},
    ])
    m = make(llm)
    m.add("Alice works at Acme", user_id="u")
    berlin = m.add("Acme is based in Berlin", user_id="u").results[0].id
    for i in range(20):
        m.add(f"Unrelated note number {i} about gardening", user_id="u", infer=False)
    plain = m.search("Where does Alice work?", user_id="u", limit=30, graph=False)
    expanded = m.search("Where does Alice work?", user_id="u", limit=30)
    assert plain.relations == []
    assert triples(expanded.relations) == [("Acme", "BASED_IN", "Berlin"),
                                           ("Alice", "WORKS_AT", "Acme")]
    score = {i.id: i.score for i in plain.results}
    lifted = {i.id: i.score for i in expanded.results}
    assert lifted[berlin] > score[berlin]
    assert [i.memory for i in expanded.results[:2]] == ["Alice works at Acme",
                                                       "Acme is based in Berlin"]
    # another scope sees none of it
    assert m.search("Where does Alice work?", user_id="other").relations == []


def test_graph_search_lifts_the_second_hop_through_the_link_the_query_is_about(make: Any) -> None:
    def added(text: str) -> dict[str, Any]:
        return {"memory": [{"event": "ADD", "id": None, "text": text, "old_memory": None}]}

    llm = ScriptedLLM([
        extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")]),
        extraction(["Alice once met Zed"], [rel("Alice", "met", "Zed", "person", "person")]),
        added("Alice once met Zed"),
        extraction(["Acme is based in Berlin"], [rel("Acme", "based in", "Berlin", "organization", "city")]),
        added("Acme is based in Berlin"),
        extraction(["Zed is based in Rome"], [rel("Zed", "based in", "Rome", "person", "city")]),
        added("Zed is based in Rome"),
    ])
    m = make(llm)
    for text in ("Alice works at Acme", "Alice once met Zed", "Acme is based in Berlin",
                 "Zed is based in Rome"):
        m.add(text, user_id="u")
    found = [i.memory for i in m.search("Alice works at a company based in which city?",
                                        user_id="u", limit=4).results]
    assert found.index("Acme is based in Berlin") < found.index("Zed is based in Rome")


def test_graph_search_without_a_graph_store_raises(make: Any) -> None:
    m = make(ScriptedLLM(), graph=False)
    assert m.search("Alice", user_id="u").relations == []
    with pytest.raises(ConfigError):
        m.search("Alice", user_id="u", graph=True)


#: two adds: "Alice works at Acme", then "alice smith" (cosine 0.71 to "Alice") lives in Berlin
MERGING = [
    extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")]),
    extraction(["Alice Smith lives in Berlin"],
               [rel("alice smith", "lives in", "Berlin", target_type="city")]),
    {"memory": [{"event": "ADD", "id": None, "text": "Alice Smith lives in Berlin",
                 "old_memory": None}]},
]


def test_a_name_merges_into_a_known_entity_above_the_threshold(make: Any) -> None:
    answers = MERGING
    merged = make(ScriptedLLM(list(answers)), threshold=0.7)  # bag-of-words cosine 0.71
    merged.add("Alice works at Acme", user_id="u")
    assert triples(merged.add("Alice Smith lives in Berlin", user_id="u").relations) == [
        ("Alice", "LIVES_IN", "Berlin")]
    assert merged.get_entity("ALICE SMITH", user_id="u").name == "Alice"
    assert triples(merged.get_entity_graph("alice smith", user_id="u").relations) == [
        ("Alice", "LIVES_IN", "Berlin"), ("Alice", "WORKS_AT", "Acme")]
    assert merged.get_entity("alice smith", user_id="v") is None

    apart = make(ScriptedLLM(list(answers)), threshold=0.75)
    apart.add("Alice works at Acme", user_id="u")
    apart.add("Alice Smith lives in Berlin", user_id="u")
    assert apart.get_entity("alice smith", user_id="u").name == "alice smith"


def test_graph_events_are_in_the_history(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["User works at Google"], [rel("user", "works at", "Google")]),
        extraction(["User moved to Meta"], [rel("user", "works at", "Meta")]),
        {"memory": [{"event": "UPDATE", "id": "0", "text": "User works at Meta",
                     "old_memory": "User works at Google"}]},
    ])
    m = make(llm)
    [google] = m.add("I work at Google", user_id="alice").relations
    [meta] = m.add("I moved to Meta", user_id="alice").relations
    assert [(h.event, h.new_value, h.old_value) for h in m.history(google.id)] == [
        ("RELATION_ADD", "user -[WORKS_AT]-> Google", None),
        ("RELATION_CLOSE", None, "user -[WORKS_AT]-> Google")]
    entity = m.get_entity("Meta", user_id="alice")
    assert m.delete_entity("Meta", user_id="alice") is True
    assert [(h.event, h.user_id) for h in m.history(entity.id)] == [
        ("ENTITY_ADD", "alice"), ("ENTITY_DELETE", "alice")]
    assert json.loads(m.history(entity.id)[0].new_value) == {"name": "Meta", "type": entity.type}
    berlin = m.add_entity("Berlin", type="city", user_id="alice")
    m.add_entity("berlin", summary="a city", user_id="alice")  # an update: no row
    m.add_relation("Alice", "lives in", "Berlin", user_id="alice")  # Alice is new
    alice = m.get_entity("Alice", user_id="alice")
    assert [json.loads(h.new_value) for h in m.history(berlin.id)] == [
        {"name": "Berlin", "type": "city"}]
    assert [(h.event, json.loads(h.new_value)) for h in m.history(alice.id)] == [
        ("ENTITY_ADD", {"name": "Alice", "type": "unknown"})]
    assert [h.event for h in m.history(meta.id)] == ["RELATION_ADD", "RELATION_DELETE"]


def test_graph_writes_commit_with_the_memories_or_after_them(make: Any, graph_kind: str) -> None:
    llm = ScriptedLLM([extraction(["User works at Google"], [rel("user", "works at", "Google")])])
    m = make(llm)
    graph = m.memory.graph_store
    assert graph is not None

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise GraphError("the graph engine failed")

    graph.ops.upsert_relations = broken  # type: ignore[method-assign]
    with pytest.raises(GraphError):
        m.add("I work at Google", user_id="alice")
    stored = [i.memory for i in m.get_all(user_id="alice").results]
    if graph_kind in JOINED:  # one transaction: neither the memory nor its history
        assert stored == []
    else:  # Bolt writes come after the commit: the memory stays, without its relation
        assert stored == ["User works at Google"]
        assert m.get_entity_graph("user", user_id="alice").relations == []


def test_seed000_10_5_consolidation_repoints_relations_and_stats_count_entities(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["User likes green tea"], [rel("user", "likes", "green tea", "person", "drink")]),
        extraction(["user likes green tea!"], [rel("user", "drinks", "green tea", "person", "drink")]),
        {"memory": [{"event": "ADD", "id": None, "text": "user likes green tea!",
                     "old_memory": None}]},
    ])
    m = make(llm)
    m.add("I like green tea", user_id="alice")
    m.add("I drink green tea", user_id="alice")
    report = m.consolidate(user_id="alice", dry_run=False)
    [cluster] = report.clusters
    [merged] = cluster.merged
    relations = m.get_entity_graph("user", user_id="alice").relations
    assert {r.relation for r in relations} == {"LIKES", "DRINKS"}  # none closed
    assert all(r.memory_ids == [cluster.keeper.id] for r in relations)
    assert merged.id not in {i for r in relations for i in r.memory_ids}
    stats = m.stats(user_id="alice")
    assert stats.top_entities == {"green tea": 2, "user": 2}
    assert (stats.entities, stats.relations) == (2, 2)
    assert stats.memories == 1
def test_reembed_moves_the_entity_names_to_the_new_model(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["User works at Google"], [rel("user", "works at", "Google")]),
        extraction(["User likes Google Cloud"], [rel("user", "likes", "Google Cloud")]),
        {"memory": [{"event": "ADD", "id": None, "text": "User likes Google Cloud",
                     "old_memory": None}]},
    ])
    m = make(llm, threshold=0.5)
    m.add("I work at Google", user_id="alice")
    m.reembed(HashEmbedder(32))
    result = m.add("I like Google Cloud", user_id="alice")  # resolved by the new name vectors
    assert triples(result.relations) == [("user", "LIKES", "Google")]



def test_an_entity_graph_includes_the_memories_behind_its_relations(make: Any) -> None:
    llm = ScriptedLLM([
        extraction(["Alice works at Acme"], [rel("Alice", "works at", "Acme")]),
        extraction(["Acme is based in Berlin"], [rel("Acme", "based in", "Berlin",
                                                     "organization", "city")]),
        {"memory": [{"event": "ADD", "text": "Acme is based in Berlin"}]},
    ])
    m = make(llm)
    [work] = m.add("Alice works at Acme", user_id="u").results
    [based] = m.add("Acme is based in Berlin", user_id="u").results
    m.add_relation("Alice", "knows", "Bob", user_id="u")  # no memory behind it
    assert m.get_entity_graph("Alice", user_id="u").memories == []  # only when asked
    near = m.get_entity_graph("Alice", user_id="u", include_memories=True)
    assert [i.memory for i in near.memories] == ["Alice works at Acme"]
    far = m.get_entity_graph("Alice", depth=2, user_id="u", include_memories=True)
    assert sorted(i.id for i in far.memories) == sorted([work.id, based.id])
    m.delete(work.id)  # an ended memory is no longer listed
    assert m.get_entity_graph("Acme", user_id="u", include_memories=True).memories[0].id \
        == based.id
    assert m.get_entity_graph("Alice", user_id="v", include_memories=True).memories == []


def test_graph_extraction_keeps_each_facts_type_and_importance(make: Any) -> None:
    fact = {"text": "User works at Google", "type": "fact", "importance": 0.8}
    m = make(ScriptedLLM([extraction([fact], [rel("user", "works at", "Google")])]))  # type: ignore[list-item]
    [event] = m.add("I work at Google", user_id="alice").results
    item = m.get(event.id)
    assert (item.memory, item.memory_type, item.importance) == ("User works at Google", "fact",
                                                                0.8)


def test_a_restated_fact_is_confirmed_with_a_graph_store_and_keeps_its_subject(make: Any) -> None:
    said = {"facts": [{"text": "Alice works at Acme", "type": "fact", "importance": 0.5,
                       "subject": "Alice"}], "relations": [rel("Alice", "works at", "Acme")]}
    m = make(ScriptedLLM([said, said]))
    [added] = m.add("Alice works at Acme", user_id="u").results
    [again] = m.add("Alice still works at Acme", user_id="u").results
    assert (again.event, again.id) == ("NONE", added.id)
    assert m.get(added.id).metadata == {"subject": "Alice", "confirmations": 1}
    assert m.get_all(user_id="u", filters={"subject": "Alice"}).results[0].id == added.id
