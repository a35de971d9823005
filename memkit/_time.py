"""Timestamps: one UTC ISO 8601 format everywhere, so strings order in time."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_datetime(value: datetime | str | int | float) -> datetime:
    """A timezone-aware UTC datetime; naive values are taken as UTC."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        dt = datetime.fromtimestamp(value, UTC)
    else:
        raise TypeError(f"expected a datetime, an ISO 8601 string or epoch seconds, got {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def to_iso(value: datetime | str | int | float) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``: fixed width, so it sorts as time."""
    return to_datetime(value).isoformat(timespec="microseconds")
