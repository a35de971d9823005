"""The code points memkit refuses in what callers send: NUL and lone surrogates.

NUL cannot be stored by PostgreSQL and reads differently in SQLite's JSON
functions; a lone surrogate cannot be encoded as UTF-8 at all. Refusing both at
the boundary keeps every store and the reference evaluator in agreement.
"""

from __future__ import annotations

import re

_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")


def bad_code_point(text: str) -> str | None:
    """Why ``text`` cannot be accepted, or ``None``."""
    found = _FORBIDDEN.search(text)
    if found is None:
        return None
    char = found.group()
    kind = "a NUL character" if char == "\x00" else "a lone surrogate"
    return f"holds {kind} (U+{ord(char):04X}) at position {found.start()}; send valid Unicode text"
