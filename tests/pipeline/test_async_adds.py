"""Many ``AsyncMemory.add`` calls at once: each lands once, their embeddings share model
calls, a faulty embedding fails only its own add, and the event loop keeps running while
the embedder and the store work."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memkit import AsyncMemory, EmbeddingError, Memory
from memkit.embeddings.base import Matrix
from memkit.history.sqlite import SQLiteHistory
from memkit.llms.base import LLMRequest
from memkit.stores.base import Record
from memkit.stores.memory import InMemoryStore
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import FunctionLLM, HashEmbedder
from tests.stores.conftest import FACTORIES

ADDS = 32
SCOPES = 8


def _facts_of_the_message(request: LLMRequest) -> dict[str, Any]:
    """Extraction: the facts are the ``fact N.M`` of the last message. Decision: every new
    fact is an ADD."""
    found = re.findall(r"fact \d+\.\d", request.messages[-1]["content"].split("New facts:")[-1])
    if request.purpose == "decision":
        return {"memory": [{"event": "ADD", "text": fact} for fact in found]}
    return {"facts": found}


def _message(i: int) -> str:
    return f"Note fact {i}.1 and fact {i}.2, please."


class RecordingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.threads: set[int] = set()

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        self.threads.add(threading.get_ident())
        return super().embed(texts)


class LoopCheck:
    """Work that calls :meth:`wait` stays there until a task on the event loop has run
    (:func:`heartbeat`): if the loop ran that work itself, no task could run, and the wait
    ends in a failure instead of a hang."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.loop_ran = threading.Event()

    def wait(self, what: str) -> None:
        self.inside.set()
        if not self.loop_ran.wait(timeout=10):
            raise AssertionError(f"the event loop did not run during {what}")

    async def heartbeat(self) -> int:
        """Ticks on the loop; three ticks after :meth:`wait` began, it lets the work go on."""
        ticks = 0
        while not self.loop_ran.is_set():
            await asyncio.sleep(0.001)
            if self.inside.is_set():
                ticks += 1
                if ticks == 3:
                    self.loop_ran.set()
        return ticks


class WaitsForTheLoop(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.check = LoopCheck()

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.check.wait("embed()")
        return super().embed(texts)


class WaitsForTheLoopToWrite(SQLiteStore):
    """A SQLite store whose inserts wait, inside the write transaction, for the loop to run."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.check = LoopCheck()

    def insert(self, records: Sequence[Record]) -> None:
        self.check.wait("the SQLite write")
        super().insert(records)


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = FACTORIES[request.param](tmp_path_factory, "asyncadds")
    yield made
    made.close()


def test_concurrent_adds_each_land_once_with_their_history(
    store: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    history = (store.history() if hasattr(store, "history")
               else SQLiteHistory(str(tmp_path_factory.mktemp("h") / "history.db")))

    async def main() -> None:
        async with AsyncMemory(llm=FunctionLLM(_facts_of_the_message), embedder=HashEmbedder(),
                               vector_store=store, history=history) as m:
            results = await asyncio.gather(*(
                m.add(_message(i), user_id=f"u{i % SCOPES}") for i in range(ADDS)))
            for i, result in enumerate(results):
                assert sorted((e.event, e.memory) for e in result.results) == [
                    ("ADD", f"fact {i}.1"), ("ADD", f"fact {i}.2")]
            for scope in range(SCOPES):
                items = (await m.get_all(user_id=f"u{scope}", limit=100)).results
                assert sorted(r.memory for r in items) == sorted(
                    f"fact {i}.{n}" for i in range(scope, ADDS, SCOPES) for n in (1, 2))
                added = {e.id for r in results[scope::SCOPES] for e in r.results}
                assert {r.id for r in items} == added
                for item in items:
                    assert [(h.event, h.new_value) for h in await m.history(item.id)] == [
                        ("ADD", item.memory)]

    asyncio.run(main())


def test_concurrent_adds_share_embedding_calls_off_the_loop() -> None:
    embedder = RecordingEmbedder()

    async def main() -> int:
        async with AsyncMemory(llm=FunctionLLM(_facts_of_the_message), embedder=embedder,
                               vector_store=InMemoryStore()) as m:
            await asyncio.gather(*(m.add(_message(i), user_id=f"u{i}") for i in range(ADDS)))
            return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(embedder.calls) < ADDS / 4
    assert sorted(t for call in embedder.calls for t in call) == sorted(
        f"fact {i}.{n}" for i in range(ADDS) for n in (1, 2))
    assert loop_thread not in embedder.threads


class FailsOnOneFact(RecordingEmbedder):
    def embed(self, texts: Sequence[str]) -> Matrix:
        if "fact 3.1" in texts:
            self.calls.append(list(texts))
            raise EmbeddingError("the provider refuses this text")
        return super().embed(texts)


def test_an_add_whose_embedding_fails_fails_alone() -> None:
    embedder = FailsOnOneFact()

    async def main() -> list[Any]:
        async with AsyncMemory(llm=FunctionLLM(_facts_of_the_message), embedder=embedder,
                               vector_store=InMemoryStore()) as m:
            return list(await asyncio.gather(
                *(m.add(_message(i), user_id=f"u{i}") for i in range(8)), return_exceptions=True))

    results = asyncio.run(main())
    assert any(len(call) > 2 and "fact 3.1" in call for call in embedder.calls)  # shared first
    assert isinstance(results[3], EmbeddingError)
    for i, result in enumerate(results):
        if i != 3:
            assert sorted(e.memory for e in result.results) == [f"fact {i}.1", f"fact {i}.2"]


class SkipsAText(RecordingEmbedder):
    """A faulty model: it answers no row for a text that says "skip"."""

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        return HashEmbedder.embed(self, [text for text in texts if "skip" not in text])


def test_a_model_that_skips_a_text_fails_that_add_alone() -> None:
    embedder = SkipsAText()
    texts = ["Please skip this note", "User drinks green tea", "User plays chess on Sundays"]

    async def main() -> tuple[list[Any], list[list[str]]]:
        async with AsyncMemory(embedder=embedder, vector_store=InMemoryStore()) as m:
            results = await asyncio.gather(*(m.add(text, user_id="u", infer=False)
                                             for text in texts), return_exceptions=True)
            found = [[item.memory for item in (await m.search(query, user_id="u", limit=1))]
                     for query in ("green tea", "chess Sundays")]
            return results, found

    results, found = asyncio.run(main())
    assert texts in embedder.calls  # one model call for the three adds first
    assert isinstance(results[0], EmbeddingError)
    assert [[e.memory for e in r.results] for r in results[1:]] == [[t] for t in texts[1:]]
    assert found == [[texts[1]], [texts[2]]]  # each memory has its own text's vector


class AnswersNone(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> Matrix:
        return None  # type: ignore[return-value]


@pytest.mark.timeout(120)  # an answer that was no matrix left the async adds waiting forever
def test_a_model_answering_no_matrix_is_an_embedding_error_in_both_shells() -> None:
    with pytest.raises(EmbeddingError, match="shape"):
        Memory(embedder=AnswersNone(), vector_store=InMemoryStore()).add(
            "User drinks green tea", user_id="u", infer=False)

    async def main() -> list[Any]:
        async with AsyncMemory(embedder=AnswersNone(), vector_store=InMemoryStore()) as m:
            return await asyncio.gather(*(m.add(text, user_id="u", infer=False)
                                          for text in ("green tea", "chess")),
                                        return_exceptions=True)

    assert [type(r) for r in asyncio.run(main())] == [EmbeddingError, EmbeddingError]


def test_the_event_loop_runs_while_an_add_embeds() -> None:
    embedder = WaitsForTheLoop()

    async def main() -> None:
        async with AsyncMemory(llm=FunctionLLM(_facts_of_the_message), embedder=embedder,
                               vector_store=InMemoryStore()) as m:
            beat = asyncio.create_task(embedder.check.heartbeat())
            result = await m.add(_message(1), user_id="u")
            assert await beat == 3
            assert len(result.results) == 2

    asyncio.run(main())


def test_the_event_loop_runs_while_an_add_writes_to_sqlite(tmp_path: Path) -> None:
    store = WaitsForTheLoopToWrite(str(tmp_path / "memkit.db"))

    async def main() -> None:
        async with AsyncMemory(llm=FunctionLLM(_facts_of_the_message), embedder=HashEmbedder(),
                               vector_store=store) as m:
            beat = asyncio.create_task(store.check.heartbeat())
            result = await m.add(_message(1), user_id="u")
            assert await beat == 3
            assert [h.event for h in await m.history(result.results[0].id)] == ["ADD"]

    asyncio.run(main())
