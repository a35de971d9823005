"""Paging a search: pages continue one order, none twice and none skipped."""

from __future__ import annotations

import pytest

from memkit import MemkitError
from tests.pipeline.conftest import MakeMemory

FRUITS = [f"{colour} {fruit} for breakfast" for colour in ("red", "green", "yellow", "ripe", "sour")
          for fruit in ("apple", "pear", "plum", "fig", "melon", "kiwi", "grape")]


def _pages(m: object, query: str, size: int, **kwargs: object) -> list[list[str]]:
    pages, offset = [], 0
    while True:
        page = [i.id for i in m.search(query, user_id="u", limit=size,  # type: ignore[attr-defined]
                                        offset=offset, **kwargs)]
        if not page:
            return pages
        pages.append(page)
        offset += size


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_pages_continue_one_order_with_none_twice_or_skipped(make_memory: MakeMemory,
                                                             mode: str) -> None:
    m = make_memory()
    m.add(FRUITS, user_id="u", infer=False)
    m.add("a plum tart for dinner", user_id="other", infer=False)
    if mode == "hybrid" and not m.vector_store.supports_keyword:
        pytest.skip("this store has no keyword search")
    pages = _pages(m, "ripe plum", 4, mode=mode)
    flat = [i for page in pages for i in page]
    assert len(flat) == len(set(flat)) == len(FRUITS)       # every memory once, across 9 pages
    assert all(len(page) == 4 for page in pages[:-1])
    assert pages[0] == [i.id for i in m.search("ripe plum", user_id="u", limit=4, mode=mode)]
    again = _pages(m, "ripe plum", 4, mode=mode)
    assert again == pages                                    # the same query reads the same pages


def test_a_page_past_the_end_is_empty_and_a_bad_offset_is_refused(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add(FRUITS[:3], user_id="u", infer=False)
    assert m.search("plum", user_id="u", limit=2, offset=2).results[0].memory in FRUITS[:3]
    assert m.search("plum", user_id="u", limit=2, offset=3).results == []
    for bad in (-1, 1.5, True, 10**9):
        with pytest.raises(MemkitError, match="offset"):
            m.search("plum", user_id="u", offset=bad)


def test_paging_with_reinforcement_reinforces_only_the_page(make_memory: MakeMemory) -> None:
    m = make_memory(config={"lifecycle": {"decay": True, "reinforce": True, "flush_every": 1}})
    m.add(FRUITS[:8], user_id="u", infer=False)
    pages = _pages(m, "plum", 3)
    assert sorted(len(page) for page in pages) == [2, 3, 3]
    # one access per result shown, however many windows ranked it (an approximate index
    # may move a result between pages once reinforcement rewrites the records)
    assert sum(i.access_count or 0 for i in m.get_all(user_id="u")) == 8


def test_graph_search_pages_continue_one_order() -> None:
    from memkit import Memory
    from memkit.stores.sqlite import SQLiteStore
    from memkit.testing import HashEmbedder, ScriptedLLM

    rel = {"source": "Alice", "relation": "works at", "target": "Acme"}
    llm = ScriptedLLM([{"facts": ["Alice works at Acme"], "relations": [rel]}])
    with Memory({"graph_store": "sqlite"}, llm=llm, embedder=HashEmbedder(),
                vector_store=SQLiteStore(":memory:")) as m:
        m.add("Alice works at Acme", user_id="u")
        m.add(FRUITS[:9], user_id="u", infer=False)
        pages = _pages(m, "Where does Alice work?", 2)
        flat = [i for page in pages for i in page]
        assert len(flat) == len(set(flat)) == 10
        first = m.search("Where does Alice work?", user_id="u", limit=2)
        assert pages[0] == [i.id for i in first] and first.relations[0].target == "Acme"
        assert m.search("Where does Alice work?", user_id="u", limit=2,
                        offset=2).relations[0].target == "Acme"
