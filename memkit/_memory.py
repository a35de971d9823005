"""``Memory``: the blocking shell. Each method runs the flow its request builder
(memkit._pipeline.requests) gives, with blocking calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

from memkit._changes import PollingWatch
from memkit._client import Client
from memkit._models import (
    AddResult,
    Change,
    ConsolidationResult,
    DeleteResult,
    EntityGraph,
    ExportedMemory,
    GraphEntity,
    GraphRelation,
    HistoryList,
    HistoryRecord,
    ImportResult,
    MemoryItem,
    MemoryStats,
    ReembedResult,
    SearchLogEntry,
    SearchResult,
)
from memkit._notes.models import IndexResult, StartupContext
from memkit._notes.watch import FolderWatch
from memkit._pipeline import requests
from memkit._pipeline.add.flow import OnError
from memkit._pipeline.features.feedback import feedback_flow
from memkit._pipeline.features.forget import reset_flow
from memkit._pipeline.features.reembed import Progress
from memkit._pipeline.features.tasks import update_task_flow
from memkit._pipeline.features.transfer import import_flow
from memkit._pipeline.memories import (
    delete_flow,
    get_flow,
    history_flow,
    revert_flow,
)
from memkit._pipeline.options import Timestamp
from memkit._pipeline.search.flow import SearchMode
from memkit._pipeline.write.versions import chain_flow
from memkit.embeddings.base import Embedder


class Memory(Client):
    """Long-term memory. ``Memory()`` runs offline on embedded defaults::

        with Memory() as m:
            m.add("I prefer dark mode", user_id="alice", infer=False)
            m.search("UI preferences", user_id="alice")
    """

    def add(
        self,
        messages: str | dict[str, Any] | list[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
        prompt: str | None = None,
        infer: bool = True,
        timestamp: Timestamp | None = None,
        on_error: OnError | None = None,
        expires_at: Timestamp | None = None,
        expiration_date: Timestamp | None = None,
        dry_run: bool = False,
        memory_type: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        surface: str | None = None,
        entities: Sequence[str] | None = None,
    ) -> AddResult:
        """Remember a conversation (a string, a message dict or a list of them).

        With ``infer=True`` an LLM extracts facts and decides, against what the
        scope already holds, whether to ADD, UPDATE, DELETE or do nothing; with
        ``infer=False`` each message is stored as it is. At least one of
        ``user_id``, ``agent_id`` and ``run_id`` is required. ``filters`` narrows
        the memories the LLM compares with; ``prompt`` replaces the extraction
        prompt; ``timestamp`` dates the memories (default: now) and is when they
        become valid (an UPDATE ends the old text's validity then). ``expires_at``
        (mem0's ``expiration_date``) hides the memories after that time.
        ``dry_run=True`` returns the decided operations, usage and errors and
        applies nothing. ``on_error="degrade"`` (default: the config's ``on_error``, "raise")
        reports LLM and embedding failures in ``AddResult.errors`` and stores
        what it can, instead of raising. ``memory_type`` (one of ``MEMORY_TYPES`` or a
        word of your own) and ``importance`` (0 to 1) are given to every memory this
        add writes, over what the extraction says; ``confidence`` (0 to 1, default 1) is
        where their confidence starts. A ``memory_type="task"`` memory gets
        ``metadata["status"]`` "open" unless given one of ``TASK_STATUSES``;
        ``surface="startup"`` puts the memories in :meth:`startup_context`. ``entities``
        (names or ids, with a graph store) links every memory the add writes to those
        entities, created when new, besides what extraction finds (see ``docs/graph.md``).
        """
        return self._runtime.run(requests.add(
            self._settings, messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
            filters=filters, prompt=prompt, infer=infer, timestamp=timestamp, on_error=on_error,
            expires_at=expires_at, expiration_date=expiration_date, dry_run=dry_run,
            memory_type=memory_type, importance=importance, confidence=confidence, surface=surface,
            entities=entities))

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        filters: dict[str, Any] | None = None,
        threshold: float | None = None,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        min_confidence: float | None = None,
        graph: bool | None = None,
        scopes: Sequence[Mapping[str, str | None]] | None = None,
        offset: int = 0,
        rerank: bool = False,
        entity: str | None = None,
    ) -> SearchResult:
        """Memories of the scope most relevant to ``query``, highest score first.

        ``limit`` (default 100; ``top_k`` is the same, mem0's name) caps the
        results. The scope may also be given inside ``filters``
        (``filters={"user_id": "alice"}``, as in mem0 2.x). ``mode`` is "hybrid"
        (default where the store has keyword search), "vector" or "keyword";
        ``threshold`` drops results scoring below it. Only memories valid now
        are searched; ``as_of`` searches what was valid then (past versions
        included), ``include_expired`` keeps expired ones. With decay on (config
        ``lifecycle.decay``) the score is relevance x confidence; ``min_confidence``
        drops memories whose confidence is below it. ``graph`` (default: on
        when a graph store is configured): the entities the query names expand
        ``graph_store.search_depth`` hops, memories linked to them join the
        ranking, and ``relations`` carries the relations found. ``scopes`` (instead of
        ``user_id``/``agent_id``/``run_id``) searches several scopes at once, e.g.
        ``scopes=[{"user_id": "alice"}, {"agent_id": "shared"}]``; never without it.
        ``offset`` skips that many results of the query's order: keep ``limit`` and step
        ``offset`` by it to read page after page, none twice, none skipped (see
        ``docs/pipeline.md``, "Paging"). ``rerank=True`` reorders the best
        ``reranker.candidates`` results with the configured reranker (config
        ``reranker``), whose scores they then carry; ``threshold`` applies before.
        ``entity`` (a name, alias or id; needs a graph store) keeps the memories about
        that entity: behind its open relations, or linked by ``add(..., entities=)``.
        """
        return self._runtime.run(requests.search(
            self._settings, query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit,
            filters=filters, threshold=threshold, mode=mode, top_k=top_k, as_of=as_of,
            include_expired=include_expired, min_confidence=min_confidence, graph=graph,
            scopes=scopes, offset=offset, rerank=rerank, entity=entity))

    def get(self, memory_id: str, *, reinforce: bool = True) -> MemoryItem | None:
        """The memory with this id if it is valid now, or ``None`` (see :meth:`versions`).
        With reinforcement on (config ``lifecycle.reinforce``) the read reinforces the
        memory as a search hit does; ``reinforce=False`` looks without using it (a check
        before a delete, an operator's inspection)."""
        return self._runtime.run(get_flow(memory_id, self._settings.now(), self._settings.lifecycle,
                                          bool(reinforce)))

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        as_of: Timestamp | None = None,
        include_expired: bool = False,
        surface: str | None = None,
        offset: int = 0,
        entity: str | None = None,
    ) -> SearchResult:
        """The scope's memories (matching ``filters``), newest first; at most ``limit``
        (default 100; ``top_k`` is mem0's name for it). The scope may be given inside
        ``filters`` (``filters={"user_id": "alice"}``). Only memories valid now, or
        ``as_of`` then; ``include_expired`` keeps expired ones. ``surface="startup"`` keeps
        the memories marked so. ``offset`` skips that many (the next page: ``offset +
        limit``); ``entity`` (a name, alias or id; needs a graph store) keeps the memories
        about that entity, as :meth:`search` does."""
        return self._runtime.run(requests.get_all(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters, limit=limit,
            top_k=top_k, as_of=as_of, include_expired=include_expired, surface=surface,
            offset=offset, entity=entity))

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        data: str | None = None,
        expires_at: Timestamp | None = None,
        memory_type: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        surface: str | None = None,
        if_updated_at: Timestamp | None = None,
    ) -> MemoryItem:
        """Replace a memory's text (re-embedded); ``metadata`` is merged into its metadata.
        ``data=`` is mem0's name for ``text``. The memory keeps its id; the old text
        stays as a past version (see :meth:`versions`), valid until now.
        ``expires_at`` sets a new expiry; ``memory_type``, ``importance`` and
        ``confidence`` set those.
        Without a new text the other fields change in place (no new version).
        ``surface="startup"`` marks the memory for :meth:`startup_context`.
        ``if_updated_at``: the ``updated_at`` of the memory as you read it; if it changed
        since, :class:`StaleVersionError` is raised and nothing changes (no lost update)."""
        return self._runtime.run(requests.update(self._settings, memory_id, text, metadata=metadata, data=data,
                                         expires_at=expires_at, memory_type=memory_type,
                                         importance=importance, confidence=confidence, surface=surface,
                                         if_updated_at=if_updated_at))

    def delete(self, memory_id: str, *, hard: bool = False, actor_id: str | None = None) -> None:
        """End a memory's validity: it is no longer returned, but its text stays for
        ``as_of`` reads and its history stays readable; the relations it alone supported
        close. ``hard=True`` removes it and its past versions for good, with everything
        derived from them (use it, or :meth:`purge`, for privacy deletes; see
        docs/time.md). ``actor_id``: who deleted it, kept on the history row. Unknown id:
        NotFoundError."""
        return self._runtime.run(delete_flow(memory_id, bool(hard), self._settings.now(),
                                             self._settings.graph, requests.actor_of(actor_id)))

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """Delete every memory of the scope (matching ``filters``; the scope may be given
        inside them); one DELETE event per memory, ``.count`` of them."""
        return self._runtime.run(requests.delete_all(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    def history(self, memory_id: str) -> HistoryList:
        """Every change to a memory, oldest first (a list that prints as a table)."""
        return self._runtime.run(history_flow(memory_id))

    def changes(self, after: str | None = None, *, user_id: str | None = None,
                agent_id: str | None = None, run_id: str | None = None,
                limit: int = 100) -> list[Change]:
        """Up to ``limit`` changes (memories' ``ADD``, ``UPDATE``, ``DELETE``, ``PURGE``; a
        graph's ``ENTITY_ADD``; ``CONSOLIDATE``) committed after position ``after`` (from the
        oldest kept without it), by any process that shares the history, in commit order;
        ``changes[-1].position`` reads on. Following them as they commit: :meth:`watch`."""
        return self._runtime.run(requests.changes(after, user_id, agent_id, run_id, limit))

    def watch(self, after: str | None = None, *, user_id: str | None = None,
              agent_id: str | None = None, run_id: str | None = None) -> PollingWatch:
        """The changes of a scope (every scope without one) as they commit, in this process
        or another one sharing the history, each once, in commit order: those after
        ``after`` (a :class:`~memkit.Change`'s ``position``), else those committed after
        entering. It reads the history every 0.2 s while it waits (``AsyncMemory.watch``
        is woken by the history instead)::

            with memory.watch(user_id="alice") as changes:
                for change in changes:  # blocks until the next change
                    print(change.event, change.memory_id, change.position)
        """
        return PollingWatch(self._runtime, after, user_id, agent_id, run_id)

    def versions(self, memory_id: str) -> list[MemoryItem]:
        """The version chain ``memory_id`` belongs to, oldest first: past versions (each
        with its ``valid_from``/``valid_to``) and the current one. Any version's id walks
        the whole chain; ``supersedes`` links each version to the one before it."""
        return self._runtime.run(chain_flow(memory_id))

    def revert(self, event_id: str) -> HistoryRecord:
        """Undo one ADD, UPDATE or DELETE of :meth:`history` (by the event's id) and
        return the event that records the undoing (its ``reverts`` is ``event_id``).

        The memory must still be as that event left it (revert later events
        first); reverting an event twice raises ConflictError.
        """
        return self._runtime.run(revert_flow(event_id, self._settings.now()))

    def supersede(
        self, memory_id: str, text: str, *, metadata: dict[str, Any] | None = None,
        expires_at: Timestamp | None = None,
    ) -> MemoryItem:
        """Replace a memory by a new one (a new id, ``supersedes`` = the old id); the old
        one stays as a past version, valid until now. A version is superseded once: a
        second supersede of it raises ConflictError."""
        return self._runtime.run(requests.supersede(self._settings, memory_id, text, metadata, expires_at))

    def purge(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        actor_id: str | None = None,
    ) -> int:
        """Remove every record of the scope (matching ``filters``) for good: current
        memories, past versions and deleted ones, with their history, logged searches and
        graph (without ``filters``: the scope's whole graph, history and search log). Each
        leaves a ``PURGE`` history row without text, naming ``actor_id`` (who purged).
        Returns how many records were removed. What stays on disk: docs/time.md."""
        return self._runtime.run(requests.purge(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters,
            actor_id=actor_id))

    def reset(self) -> None:
        """Delete every memory, all history and the search log, and the graph."""
        return self._runtime.run(reset_flow(self._settings.graph is not None, self._settings.now))

    def repair(self) -> int:
        """Write to the graph what changes left owed when the graph store failed after their
        memories were committed (an outage of a graph in its own engine): an add's
        relations, the relations a delete or prune closes, those a supersede or
        consolidation moves. Returns how many changes' graph work it wrote (work another
        process wrote meanwhile is not counted). Changes with graph work, and the first
        operation of a new Memory, do this first themselves; ``memkit serve`` every
        minute."""
        return self._runtime.run(self._repair())

    def prune(
        self,
        below: float = 0.05,
        *,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> DeleteResult:
        """Forget memories whose confidence (decayed, when decay is on) is below ``below``:
        each ends as :meth:`delete` ends a memory (a DELETE event; still readable with
        ``as_of`` and :meth:`versions`). ``dry_run`` (the default) only reports them. Without
        a scope, every memory of the store is considered."""
        return self._runtime.run(requests.prune(self._settings, below, dry_run, user_id=user_id,
                                        agent_id=agent_id, run_id=run_id, filters=filters))

    def consolidate(
        self,
        *,
        threshold: float | None = None,
        dry_run: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> ConsolidationResult:
        """Merge clusters of near-duplicate memories, scope by scope (every scope of the
        store when none is given): vectors at least ``threshold`` similar (default: config
        ``lifecycle.consolidate_threshold``, 0.9) whose words overlap. Each cluster merges
        into its member of highest confidence, with metadata united; the others end and
        join its version chain (see :meth:`versions`), nothing is removed. ``dry_run`` (the
        default) only reports the clusters."""
        return self._runtime.run(requests.consolidate(
            self._settings, threshold, dry_run, user_id=user_id, agent_id=agent_id, run_id=run_id,
            filters=filters))

    def stats(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> MemoryStats:
        """Counts by type and state, growth per day, the confidence histogram and the
        most accessed memories, of the scope (of the whole store when none is given)."""
        return self._runtime.run(requests.stats(self._settings, user_id=user_id, agent_id=agent_id,
                                        run_id=run_id, filters=filters))

    def feedback(self, memory_id: str, *, useful: bool) -> None:
        """Say whether a memory was useful: ``True`` reinforces it as a search hit does,
        ``False`` takes ``lifecycle.feedback_penalty`` (0.2) off its confidence. Written
        with the buffered accesses (see ``docs/lifecycle.md``)."""
        return self._runtime.run(feedback_flow(memory_id, useful, self._settings.now(), self._settings.lifecycle))

    def search_log(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None, limit: int = 100) -> list[SearchLogEntry]:
        """The newest logged searches of the scope (every scope without one); the log is
        kept only with ``lifecycle.search_log`` on."""
        return self._runtime.run(requests.search_log(self._settings, user_id, agent_id, run_id, limit))

    def export(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[ExportedMemory]:
        """Every memory (of the scope, when given) with its history, in id order."""
        return self._runtime.run(requests.export(
            self._settings, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters))

    def import_(self, memories: Iterable[ExportedMemory | Mapping[str, Any]]) -> ImportResult:
        """Write exported memories as they are: ids, timestamps and history kept.

        Takes ``export()``'s items or their JSON objects (and mem0's ``get_all``
        items). Texts are embedded as ``add`` embeds them; an id that exists,
        or a text its scope already holds, is skipped.
        """
        return self._runtime.run(import_flow(memories))

    def reembed(self, embedder: Embedder, *, batch_size: int = 256,
                on_progress: Progress | None = None) -> ReembedResult:
        """Give every record (all scopes; past versions and deleted memories too) a vector
        by ``embedder``, then use it from now on.

        The new vectors are built beside the old ones, which keep answering searches
        meanwhile; the store switches to them in one step. Reopening the store then needs
        the new embedder (the old one raises :class:`ConfigError`). ``on_progress(done,
        total)`` is called after each batch of ``batch_size`` texts. A failure leaves the
        store as it was.
        """
        return self._runtime.run(requests.reembed(
            self._settings, self._runtime.embedder, embedder, batch_size, on_progress))

    # -- notes, tasks, startup ------------------------------------------------------------
    def index_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                     agent_id: str | None = None, run_id: str | None = None,
                     max_file_bytes: int = 100_000) -> IndexResult:
        """Index the markdown files under ``path`` into the scope, one memory per section
        (no LLM), with its ``path``, ``heading``, ``line_start``/``line_end`` and
        ``content_hash`` in metadata. Again: unchanged sections are kept, changed ones
        re-embedded, those of removed (or skipped) files ended. Files over
        ``max_file_bytes`` are skipped and listed in ``IndexResult.skipped``."""
        return self._runtime.run(requests.index(self._settings, path, max_file_bytes, user_id, agent_id, run_id))

    def watch_folder(self, path: str | PathLike[str], *, user_id: str | None = None,
                     agent_id: str | None = None, run_id: str | None = None,
                     max_file_bytes: int = 100_000, debounce_ms: int = 500,
                     on_index: Callable[[IndexResult], Any] | None = None) -> FolderWatch:
        """Index ``path`` (as :meth:`index_folder`), then keep it in sync in a background
        thread: changes grouped over ``debounce_ms`` trigger an index, whose result goes
        to ``on_index``. Needs the ``notes`` extra (watchfiles). Stop it with ``.stop()``."""
        return self._watch(path, max_file_bytes, debounce_ms, on_index, user_id, agent_id,
                      run_id)

    def update_task(self, memory_id: str, *, status: str) -> MemoryItem:
        """Set a task's status (one of ``TASK_STATUSES``), in place; the change is an UPDATE
        event of its history ("status: open" -> "status: done")."""
        return self._runtime.run(update_task_flow(memory_id, status, self._settings.now()))

    def startup_context(self, *, user_id: str | None = None, agent_id: str | None = None,
                        run_id: str | None = None, budget_tokens: int = 1000) -> StartupContext:
        """A briefing for the start of a session: open tasks (in progress first), memories
        marked ``surface="startup"``, then the most important ones, within
        ``budget_tokens`` (counted as characters / 4), as ``.text`` for a system prompt
        and as ``.items``."""
        return self._runtime.run(requests.startup(self._settings, budget_tokens, user_id, agent_id, run_id))

    # -- graph (a graph store must be configured) --------------------------------------
    def get_entity(self, name: str, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> GraphEntity | None:
        """The entity ``name`` means in the scope (any spelling, or a name merged into it)."""
        return self._runtime.run(requests.get_entity(self._settings, name, user_id, agent_id, run_id))

    def get_entities(self, *, type: str | None = None, limit: int = 100,
                     user_id: str | None = None, agent_id: str | None = None,
                     run_id: str | None = None) -> list[GraphEntity]:
        """The scope's entities (of ``type``), by name."""
        return self._runtime.run(requests.get_entities(self._settings, type, limit, user_id, agent_id, run_id))

    def get_entity_graph(self, name: str | list[str], *, depth: int = 1,
                         user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None, include_closed: bool = False,
                         include_memories: bool = False) -> EntityGraph:
        """The entities within ``depth`` (0-3) open relations of ``name`` (one name or a
        list), and the open relations among them. ``include_closed`` adds the closed
        relations (``valid_to`` set) touching those entities, and their other ends.
        ``include_memories``: ``.memories`` holds the current memories those relations came
        from (``depth=1``: what the memories say about ``name`` and its neighbours)."""
        return self._runtime.run(requests.get_entity_graph(
            self._settings, name, depth, user_id, agent_id, run_id, include_closed,
            include_memories))

    def add_entity(self, name: str, *, type: str | None = None, summary: str | None = None,
                   user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> GraphEntity:
        """Create an entity, or update it: a known ``type`` replaces "unknown", a ``summary``
        the old one."""
        return self._runtime.run(requests.add_entity(self._settings, name, type, summary, user_id, agent_id,
                                             run_id))

    def add_relation(self, source: str, relation: str, target: str, *,
                     source_type: str | None = None, target_type: str | None = None,
                     user_id: str | None = None, agent_id: str | None = None,
                     run_id: str | None = None) -> GraphRelation:
        """Record ``source -[relation]-> target`` (a known one gains weight); missing entities
        are created, typed when a type is given."""
        return self._runtime.run(requests.add_relation(self._settings, source, relation, target, source_type,
                                               target_type, user_id, agent_id, run_id))

    def delete_relation(self, source: str, relation: str, target: str, *,
                        user_id: str | None = None, agent_id: str | None = None,
                        run_id: str | None = None) -> int:
        """Delete ``source -[relation]-> target`` (open and closed); how many were deleted."""
        return self._runtime.run(requests.delete_relation(self._settings, source, relation, target, user_id,
                                                  agent_id, run_id))

    def delete_entity(self, name: str, *, user_id: str | None = None,
                      agent_id: str | None = None, run_id: str | None = None) -> bool:
        """Delete an entity and its relations; the memories stay. False when there was none."""
        return self._runtime.run(requests.delete_entity(self._settings, name, user_id, agent_id, run_id))


    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


