"""Re-embedding: every record's vector by another embedder, switched to in one step.

The new vectors are built in a shadow collection beside the store's own
(:meth:`VectorStore.shadow`), batch by batch, while the store keeps serving
searches and writes from the old vectors. Then passes catch the shadow up with
what was written meanwhile, and a last pass inside the store's transaction
(writers wait, searches do not) copies the remaining changes and switches the
store to the shadow (:meth:`VectorStore.switch`). A text changed after the
last pass needs the embedder, which a transaction does not call: the
transaction then gives up and another pass runs. A failure before the switch
drops the shadow and leaves the store as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from memkit._errors import ConfigError, MemkitError
from memkit._models import ReembedResult
from memkit._pipeline.effects import (
    Delete,
    DropShadow,
    Embed,
    EmbeddedNames,
    Flow,
    Insert,
    ListRecords,
    OnShadow,
    OpenShadow,
    ReplaceNameVectors,
    Switch,
    Transaction,
    Update,
    UseEmbedder,
    WriteFlow,
    ask,
    ask_shadow,
    ask_write,
)
from memkit._pipeline.write.apply import scan
from memkit.embeddings.base import Embedder
from memkit.stores.base import EVERY_KEY, Record, VectorStore

Progress = Callable[[int, int], None]
#: catch-up passes before giving up on a store whose texts keep changing
ATTEMPTS = 5


def reembed_flow(old: Embedder, new: Embedder, batch_size: int, timer: Callable[[], float],
                 progress: Progress | None = None, graph: bool = False) -> Flow[ReembedResult]:
    """Re-embed every record with ``new`` and switch the store (and the embedder) to it;
    with ``graph``, the entity names' embeddings too (written in the switch's transaction,
    which a graph sharing the store's file or database joins)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    started = timer()
    names = (yield from _embed_names(new, batch_size)) if graph else None
    shadow: VectorStore = yield from ask(OpenShadow(new.dimension, new.model_name))
    try:
        for _ in range(ATTEMPTS):
            yield from _catch_up(shadow, new, batch_size, progress)
            count: int | None = yield from ask(Transaction(EVERY_KEY, _switch(shadow, names)))
            if count is not None:
                break
            progress = None  # the first pass reported the count
        else:
            raise MemkitError(f"texts kept changing during {ATTEMPTS} passes; re-embed again")
    except GeneratorExit:  # left by a cancelled caller: the next re-embedding drops the shadow
        raise
    except BaseException:
        yield DropShadow(shadow)
        raise
    yield UseEmbedder(new)
    return ReembedResult(memories=count, old_model=old.model_name,
                         old_dimension=old.dimension, new_model=new.model_name,
                         new_dimension=new.dimension, seconds=timer() - started)


def _catch_up(shadow: VectorStore, embedder: Embedder, batch_size: int,
              progress: Progress | None) -> Flow[None]:
    """Make the shadow hold every record of the store, embedding what it lacks."""
    live = {r.id: r for r in (yield from scan(None))}
    copied = yield from _scan_shadow(shadow)
    stale, changed, gone = _diff(live, copied)
    for start in range(0, len(stale), batch_size):
        batch = stale[start:start + batch_size]
        vectors = yield from ask(Embed(tuple(r.memory for r in batch), embedder))
        records = tuple(r.with_vector(v) for r, v in zip(batch, vectors, strict=True))
        yield OnShadow(shadow, Delete(tuple(r.id for r in records if r.id in copied)))
        yield OnShadow(shadow, Insert(records))
        if progress is not None:
            progress(start + len(batch), len(stale))
    yield from _copy(shadow, changed, gone)


def _switch(shadow: VectorStore,
            names: dict[str, list[float]] | None) -> WriteFlow[int | None]:
    """Inside the store's transaction: the last changes, then the switch. Returns how many
    records the store holds, or ``None`` when a text changed since the last pass."""
    live = {r.id: r for r in (yield from scan(None))}
    stale, changed, gone = _diff(live, (yield from _scan_shadow(shadow)))
    if stale:
        return None
    yield from _copy(shadow, changed, gone)
    if names is not None:  # a name embedded since loses its vector; its next mention sets one
        ids = [id for id, _ in (yield from ask_write(EmbeddedNames()))]
        yield ReplaceNameVectors(ids, [names.get(id) for id in ids])
    yield Switch(shadow)  # last: nothing after it can fail and leave the store half switched
    return len(live)


def _embed_names(embedder: Embedder, batch_size: int) -> Flow[dict[str, list[float]]]:
    """The graph's entity names by ``embedder``: {entity id: vector}."""
    entities: list[tuple[str, str]] = yield from ask(EmbeddedNames())
    vectors: dict[str, list[float]] = {}
    for start in range(0, len(entities), batch_size):
        batch = entities[start:start + batch_size]
        rows = yield from ask(Embed(tuple(name for _, name in batch), embedder))
        vectors.update((id, [float(x) for x in row]) for (id, _), row in zip(batch, rows, strict=True))
    return vectors


def _copy(shadow: VectorStore, changed: list[Record],
          gone: list[str]) -> Generator[OnShadow[Any], object, None]:
    if changed:  # without vectors: the shadow keeps the new ones
        yield OnShadow(shadow, Update(tuple(changed)))
    if gone:
        yield OnShadow(shadow, Delete(tuple(gone)))


def _scan_shadow(shadow: VectorStore) -> Generator[OnShadow[Any], object, dict[str, Record]]:
    records: dict[str, Record] = {}
    cursor: str | None = None
    while True:
        page, cursor = yield from ask_shadow(OnShadow(shadow, ListRecords(None, 1000, cursor)))
        records.update((r.id, r) for r in page)
        if cursor is None:
            return records


def _diff(live: dict[str, Record], copied: dict[str, Record],
          ) -> tuple[list[Record], list[Record], list[str]]:
    """(records to embed: new or with another text, records whose other fields changed,
    ids the store no longer has)."""
    stale: list[Record] = []
    changed: list[Record] = []
    for id, record in live.items():
        twin = copied.get(id)
        if twin is None or twin.memory != record.memory:
            stale.append(record)
        elif twin.payload() != record.payload():
            changed.append(record)
    return stale, changed, [id for id in copied if id not in live]
