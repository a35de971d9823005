"""A memory that asks: ranked a little below one that tells.

In a dialogue stored verbatim, a turn that ends in a question ("What game was it?",
"Did your friends like the controller accessories?") asks for what the next turns
tell; its own words and meaning still match a query about the same thing, often
better than the answer does (a question is close to a question). So vector and hybrid
search lower a memory whose text ends in a question mark by ``penalty``; the turns
after it, which answer it, keep their scores (and, in hybrid search, take a share of
its keyword evidence: :func:`memkit._pipeline.search.fusion.fuse`).

    >>> asks("Nate: Wow, congrats! What game were you playing?")
    True
    >>> asks("Joanna: Is that what you're making? and shared a photo of a cake")
    False
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from memkit.stores.base import Hit

_ENDS_ASKING = re.compile(r"\?[\s\"'”’)\]]*\Z")


@functools.lru_cache(maxsize=1 << 14)
def asks(text: str) -> bool:
    """Whether the text ends in a question mark (closing quotes and brackets aside).
    Cached: one scope's searches meet the same memories again and again."""
    return _ENDS_ASKING.search(text) is not None


def lower_questions(hits: Sequence[Hit], penalty: float) -> list[Hit]:
    """The hits, those whose memory :func:`asks` lowered by ``penalty`` (not below 0), in
    their order (the search ranks them once its steps are done)."""
    if penalty <= 0:
        return list(hits)
    return [Hit(h.record, max(0.0, h.score - penalty)) if asks(h.record.memory) else h
            for h in hits]
