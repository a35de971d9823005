"""A dialogue turn's vector carries its neighbours, so a reply is found by what it answers.

"Yes, it was great!" means nothing alone. Stored verbatim from a dialogue
(``add(..., infer=False)`` with turns of two or more speakers), a turn is
embedded together with the turn before it, and its vector then takes a share
of the vectors of the turns before and after it in the same call. The memory's
text, and so what ``get`` returns, is unchanged; only its vector carries the
context. A list of one speaker's separate facts is not a dialogue and keeps
plain vectors. Each turn after the first also names the turn before it in its
metadata (``previous_turn``: that memory's id), so that hybrid search can lend a
turn the keyword evidence of its neighbours (:func:`memkit._pipeline.search.fusion.fuse`).

On the LoCoMo dev conversations this raised hybrid recall@10 by about seven
points (docs/benchmarks.md); the share was chosen by leaving one conversation
out at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from memkit.embeddings.base import Matrix

NEIGHBOUR_SHARE = 0.4
#: the metadata key of a dialogue turn that holds the id of the turn before it
PREVIOUS_TURN = "previous_turn"


def is_dialogue(speakers: Sequence[str]) -> bool:
    """Turns of at least two speakers (a role, or a name when messages carry one)."""
    return len(set(speakers)) > 1


def with_previous(texts: Sequence[str]) -> list[str]:
    """What each turn is embedded as: the turn before it (if any), a newline, the turn."""
    return [texts[0], *(f"{before}\n{text}" for before, text in pairwise(texts))]


def with_neighbours(vectors: Matrix, share: float = NEIGHBOUR_SHARE) -> Matrix:
    """Each row plus ``share`` times each adjacent row, L2-normalised again."""
    if len(vectors) < 2 or share == 0:
        return vectors
    mixed = vectors.astype(np.float32, copy=True)
    mixed[1:] += share * vectors[:-1]
    mixed[:-1] += share * vectors[1:]
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(mixed / norms, dtype=np.float32)
