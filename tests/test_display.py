"""Results read well in a terminal (print) and a notebook (_repr_html_); so does Memory."""

from __future__ import annotations

from memkit import HistoryList, Memory
from memkit.stores.memory import InMemoryStore
from memkit.testing import HashEmbedder, ScriptedLLM


def test_results_print_as_tables_and_render_in_notebooks() -> None:
    llm = ScriptedLLM([{"facts": ["Likes <b>bold</b> tea"]}])
    with Memory(llm=llm, embedder=HashEmbedder(), vector_store=InMemoryStore()) as m:
        assert repr(m) == "Memory(store='memory', embedder='hash-bow-256', llm='ScriptedLLM')"
        added = m.add("I like bold tea", user_id="alice")
        memory_id = added.results[0].id
        m.update(memory_id, "Likes green tea")
        found = m.search("tea", user_id="alice")
        history = m.history(memory_id)

    text = str(added)
    assert text.splitlines()[0] == "1 event, 1 LLM call"
    assert memory_id in text and "datetime.datetime" not in text

    lines = str(found).splitlines()
    assert lines[0] == "1 memory"
    assert lines[1].split() == ["score", "id", "memory", "user_id", "updated_at"]
    assert memory_id in lines[2] and "Likes green tea" in lines[2] and "alice" in lines[2]
    assert "datetime.datetime" not in str(found)

    assert isinstance(history, HistoryList) and isinstance(history, list)
    assert [h.event for h in history] == ["ADD", "UPDATE"]
    assert str(history).splitlines()[0] == f"history of {memory_id}"

    html = found._repr_html_()
    assert html.startswith("<table>") and "<th>memory</th>" in html and memory_id in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in added._repr_html_()  # texts are escaped
    assert "<td>UPDATE</td>" in history._repr_html_()
    assert "Likes green tea" in str(found.results[0])
