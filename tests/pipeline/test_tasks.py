"""Tasks, startup surfacing and cross-scope search (issue 15, seed 004), through Memory and
AsyncMemory on the memory and sqlite stores."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkit import TASK_STATUSES, ConflictError, MemkitError, ScopeError
from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory, Shell


def task(m: Shell, text: str, **kwargs: object) -> str:
    return str(m.add(text, user_id="u", infer=False, memory_type="task", **kwargs).results[0].id)


def test_seed004_create_task_is_open(make_memory: MakeMemory) -> None:
    m = make_memory()
    item = m.get(task(m, "Write the release notes"))
    assert item is not None and item.memory_type == "task" and item.metadata["status"] == "open"
    assert TASK_STATUSES == ("open", "in_progress", "done", "cancelled")


def test_seed004_task_moves_through_in_progress_to_done(make_memory: MakeMemory) -> None:
    m = make_memory()
    tid = task(m, "Write the release notes")
    assert m.update_task(tid, status="in_progress").metadata["status"] == "in_progress"
    done = m.update_task(tid, status="done")
    assert done.metadata["status"] == "done" and done.memory == "Write the release notes"
    assert m.get(tid).metadata["status"] == "done"
    rows = m.history(tid)
    assert [(r.event, r.old_value, r.new_value) for r in rows] == [
        ("ADD", None, "Write the release notes"),
        ("UPDATE", "status: open", "status: in_progress"),
        ("UPDATE", "status: in_progress", "status: done")]
    assert len(m.versions(tid)) == 1  # the text did not change: no past version
    with pytest.raises(ConflictError, match="revert the later events first"):
        m.revert(rows[1].id)
    undo = m.revert(rows[2].id)  # done -> in_progress again
    assert (undo.old_value, undo.new_value, undo.reverts) == (
        "status: done", "status: in_progress", rows[2].id)
    assert m.get(tid).metadata["status"] == "in_progress"
    with pytest.raises(ConflictError, match="already reverted"):
        m.revert(rows[2].id)


def test_seed004_invalid_status_is_refused(make_memory: MakeMemory) -> None:
    m = make_memory()
    tid = task(m, "Book the venue")
    with pytest.raises(MemkitError, match="status must be one of open, in_progress, done, cancelled"):
        m.update_task(tid, status="finished")
    with pytest.raises(MemkitError, match="status must be one of"):
        task(m, "Call Bob", metadata={"status": "someday"})
    with pytest.raises(MemkitError, match="status must be one of"):
        m.update(tid, metadata={"status": "later"})
    note = m.add("The venue holds 80", user_id="u", infer=False).results[0].id
    with pytest.raises(MemkitError, match="is not a task"):
        m.update_task(note, status="done")
    assert m.get(tid).metadata["status"] == "open"
    assert m.update(tid, metadata={"status": "cancelled"}).metadata["status"] == "cancelled"


def test_seed004_list_open_tasks(make_memory: MakeMemory) -> None:
    m = make_memory()
    ids = {text: task(m, text) for text in ("Fix the login bug", "Ship 2.0", "Order chairs")}
    m.update_task(ids["Ship 2.0"], status="done")
    m.update_task(ids["Order chairs"], status="in_progress")
    m.add("Alice likes tea", user_id="u", infer=False)
    open_now = m.get_all(user_id="u", filters={"memory_type": "task", "status": "open"})
    assert [r.memory for r in open_now] == ["Fix the login bug"]
    active = m.get_all(user_id="u", filters={"memory_type": "task",
                                            "status": {"in": ["open", "in_progress"]}})
    assert sorted(r.memory for r in active) == ["Fix the login bug", "Order chairs"]


def test_seed004_done_and_cancelled_tasks_are_not_in_startup_context(
        make_memory: MakeMemory) -> None:
    m = make_memory()
    ids = [task(m, f"Task {n}", importance=0.9) for n in ("one", "two", "three", "four")]
    m.update_task(ids[1], status="done")
    m.update_task(ids[2], status="cancelled")
    m.update_task(ids[3], status="in_progress")
    m.update(ids[2], surface="startup")  # surfaced, but closed
    context = m.startup_context(user_id="u")
    shown = [(i.section, i.memory.memory) for i in context.items]
    assert shown == [("task", "Task four"), ("task", "Task one")]
    assert context.text == (f"## Open tasks\n- [in_progress] Task four (task id: {ids[3]})\n"
                            f"- [open] Task one (task id: {ids[0]})\n")


def test_seed004_startup_context_sections_and_budget(make_memory: MakeMemory) -> None:
    m = make_memory()
    tid = task(m, "Finish the quarterly report")
    m.add("Always answer in French", user_id="u", infer=False, surface="startup")
    m.add("Alice is allergic to peanuts", user_id="u", infer=False, importance=1.0)
    m.add("Alice once visited Rome", user_id="u", infer=False, importance=0.2)
    m.add("Alice asked about the weather", user_id="u", infer=False)
    m.add("Bob's secret plan", user_id="bob", infer=False, surface="startup", importance=1.0)
    full = m.startup_context(user_id="u", budget_tokens=1000)
    assert [(i.section, i.memory.memory) for i in full.items] == [
        ("task", "Finish the quarterly report"), ("startup", "Always answer in French"),
        ("important", "Alice is allergic to peanuts"), ("important", "Alice once visited Rome")]
    assert full.text == (
        f"## Open tasks\n- [open] Finish the quarterly report (task id: {tid})\n\n"
        "## Remember\n- Always answer in French\n\n"
        "## Important\n- Alice is allergic to peanuts\n- Alice once visited Rome\n")
    assert full.omitted == 0 and full.tokens <= 1000
    assert full.tokens == sum(i.tokens for i in full.items) + 3 * 4  # three titles

    small = m.startup_context(user_id="u", budget_tokens=40)
    assert small.tokens <= 40 and 0 < len(small.items) < 4 and small.omitted > 0
    assert small.items[0].section == "task"
    assert [r.memory for r in m.get_all(user_id="u", surface="startup")] == [
        "Always answer in French"]
    with pytest.raises(MemkitError, match="budget_tokens"):
        m.startup_context(user_id="u", budget_tokens=0)
    with pytest.raises(MemkitError, match="surface must be one of startup"):
        m.get_all(user_id="u", surface="later")


def test_surface_and_task_type_on_the_llm_path(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([{"facts": [{"text": "User must renew the passport", "type": "task"},
                                  {"text": "User lives in Lisbon"}]}])
    m = make_memory(llm)
    m.add("I need to renew my passport; I live in Lisbon", user_id="u", surface="startup")
    items = {r.memory: r for r in m.get_all(user_id="u", surface="startup")}
    assert items["User must renew the passport"].metadata["status"] == "open"
    assert "status" not in items["User lives in Lisbon"].metadata
    assert len(items) == 2


def test_search_across_scopes_only_when_named(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add("Alice drinks green tea", user_id="alice", infer=False)
    m.add("Bob drinks black tea", user_id="bob", infer=False)
    m.add("Carol drinks tea too", user_id="carol", infer=False)
    m.add("The team drinks tea on Fridays", agent_id="team", infer=False)
    assert [r.user_id for r in m.search("tea", user_id="alice")] == ["alice"]
    both = m.search("tea", scopes=[{"user_id": "alice"}, {"agent_id": "team"}])
    assert sorted(r.memory for r in both) == ["Alice drinks green tea",
                                              "The team drinks tea on Fridays"]
    narrowed = m.search("tea", scopes=[{"user_id": "alice"}, {"user_id": "bob"}],
                        filters={"user_id": "bob"})
    assert [r.memory for r in narrowed] == ["Bob drinks black tea"]
    with pytest.raises(MemkitError, match="not both"):
        m.search("tea", user_id="alice", scopes=[{"user_id": "bob"}])
    with pytest.raises(MemkitError, match="1 to 20 scopes"):
        m.search("tea", scopes=[])
    with pytest.raises(ScopeError):
        m.search("tea", scopes=[{}])
    with pytest.raises(ScopeError, match="must be a dict"):
        m.search("tea", scopes=[{"user": "alice"}])
    with pytest.raises(MemkitError, match="list of scopes"):
        m.search("tea", scopes={"user_id": "alice"})  # type: ignore[arg-type]


def test_daily_log_records_what_add_remembered(make_memory: MakeMemory, tmp_path: Path) -> None:
    now = [datetime(2025, 3, 1, 23, 59, tzinfo=UTC)]
    llm = ScriptedLLM([{"facts": ["User lives in Porto"]},
                       {"facts": ["User lives in Lisbon"]},
                       {"memory": [{"event": "UPDATE", "id": "0", "text": "User lives in Lisbon",
                                    "old_memory": "User lives in Porto"}]}])
    logs = tmp_path / "log"
    m = make_memory(llm, config={"daily_log_dir": str(logs)}, clock=lambda: now[0])
    m.add("I live in Porto", user_id="u")
    m.add("a dry run is not logged", user_id="u", infer=False, dry_run=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("indexed notes are not logged\n")
    m.index_folder(notes, user_id="n")
    now[0] = datetime(2025, 3, 2, 8, 30, tzinfo=UTC)
    m.add("Actually I moved to Lisbon", user_id="u")
    first = (logs / "2025-03-01.md").read_text()
    second = (logs / "2025-03-02.md").read_text()
    assert first.startswith("# 2025-03-01\n") and first.count("\n- ") == 1
    assert "- 23:59:00 UTC **ADD** (user_id=u) User lives in Porto `" in first
    assert "- 08:30:00 UTC **UPDATE** (user_id=u) User lives in Porto → User lives in Lisbon `" in second
    assert "not logged" not in first + second
