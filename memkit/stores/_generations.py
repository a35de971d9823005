"""Names of the collections re-embedding builds (:meth:`VectorStore.shadow`).

A collection ``name`` lives in ``name`` until its first re-embedding, then in
``name__g1``, ``name__g2``, ...; what the store keeps about ``name`` (its
metadata row or the root collection's metadata) says which one is live.
"""

from __future__ import annotations


def next_generation(name: str, live: str) -> str:
    """The collection the next re-embedding of ``name`` builds, ``live`` being the current one."""
    _, marker, number = live.rpartition("__g")
    generation = int(number) + 1 if marker and live != name and number.isdigit() else 1
    return f"{name}__g{generation}"
