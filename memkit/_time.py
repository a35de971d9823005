"""Timestamps: one UTC ISO 8601 format everywhere, so strings order in time."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_datetime(value: datetime | str | int | float) -> datetime:
    """A timezone-aware UTC datetime; naive values are taken as UTC."""
    if isinstance(value, str):
        return _parsed(value)
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        dt = datetime.fromtimestamp(value, UTC)
    else:
        raise TypeError(f"expected a datetime, an ISO 8601 string or epoch seconds, got {value!r}")
    return _utc(dt)


@functools.lru_cache(maxsize=1 << 14)
def _parsed(text: str) -> datetime:
    """:func:`to_datetime` of an ISO string; cached (datetimes are immutable): a search
    turns the times of the same memories into datetimes again and again."""
    return _utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


def _utc(dt: datetime) -> datetime:
    return (dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt).astimezone(UTC)


def to_iso(value: datetime | str | int | float) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``: fixed width, so it sorts as time."""
    return to_datetime(value).isoformat(timespec="microseconds")


def after(stamp: str, now: str) -> str:
    """``now``, or a microsecond past ``stamp`` when ``now`` is not past it: a change
    stamped so is later than the change before it, whatever the clocks of the processes
    and machines that wrote them, so ``updated_at`` tells a memory's versions apart."""
    if now > stamp:
        return now
    try:
        return to_iso(to_datetime(stamp) + timedelta(microseconds=1))
    except OverflowError:  # the last microsecond of year 9999
        return stamp
