"""Names of the collections re-embedding builds (:meth:`VectorStore.shadow`).

A collection ``name`` lives in ``name`` until its first re-embedding, then in
``name__g1``, ``name__g2``, ...; what the store keeps about ``name`` (its
metadata row or the root collection's metadata) says which one is live.
"""

from __future__ import annotations

import copy
from abc import abstractmethod

from memkit.stores._driven import DrivenStore, Op
from memkit.stores.base import VectorStore


def next_generation(name: str, live: str) -> str:
    """The collection the next re-embedding of ``name`` builds, ``live`` being the current one."""
    _, marker, number = live.rpartition("__g")
    generation = int(number) + 1 if marker and live != name and number.isdigit() else 1
    return f"{name}__g{generation}"


class SwitchableStore(DrivenStore):
    """A :class:`DrivenStore` on an engine of named collections, re-embedded by generations.

    The root collection (``collection_name``) holds the records until the first
    switch; its metadata then points at the live generation (``_live``), and
    the root keeps no records. A switch is one write of the root's metadata.
    """

    collection_name: str
    #: the collection the operations use
    _live: str
    _dimension: int | None

    @abstractmethod
    def _point_to(self, shadow: SwitchableStore) -> Op[None]:
        """Write the root's metadata: the shadow's dimension and model, and its name as live."""

    @abstractmethod
    def _drop(self, name: str) -> Op[None]:
        """Drop the collection ``name`` if it exists."""

    def shadow(self, dimension: int, model: str) -> VectorStore:
        shadow = copy.copy(self)  # the same client (local engines lock their files to one)
        shadow.collection_name = shadow._live = next_generation(self.collection_name, self._live)
        self._run(self._drop(shadow._live))  # what an interrupted re-embedding left
        shadow.open(dimension, model)
        return shadow

    def switch(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, SwitchableStore)
        self._run(self._point_to(shadow))
        if self._live == self.collection_name:
            self._run(self._reset())
        else:
            self._run(self._drop(self._live))
        self._live, self._dimension = shadow._live, shadow._dimension

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, SwitchableStore)
        self._run(self._drop(shadow._live))
