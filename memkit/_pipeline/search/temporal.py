"""Time-aware ranking: a question about *when* prefers memories that say when.

"When did Caroline go to the support group?" is answered by "I went to a
support group yesterday", not by the three other turns about the group: the
memory's timestamp turns "yesterday" into a date. So when a query asks for a
time (when, what year, how long ago, since when, on which day), a memory whose
text carries a time expression (a date, a year, a month or weekday,
"yesterday", "last week", "two years ago") is raised by ``weight``, the way
keyword evidence raises a vector score: ``s + weight * (1 - s)``. Other
queries, and memories without a time expression, keep their scores.

    >>> asks_when("When did Caroline go to the support group?")
    True
    >>> asks_when("Where did Caroline go?")
    False
    >>> mentions_time("I went to a support group yesterday")
    True

A query that names a day or a month with its year ("on 6 October, 2022",
"October 6, 2022", "2022-10-06", "in July 2022") also raises, by the same
weight, the candidates that became true in that period (``valid_from``, else
``created_at``; a day reaches one day either side, for time zones).

    >>> [d.date().isoformat() for d in named_period("What did Nate watch on October 6, 2022?")]
    ['2022-10-05', '2022-10-08']
    >>> [d.date().isoformat() for d in named_period("Where did Joanna travel in July 2022?")]
    ['2022-07-01', '2022-08-01']

A month named without a year ("in May", "the second week of November") raises, by
the same weight, the candidates that became true in that month of any year, and a day
named without a year ("on Aug 15th") those of that day of any year, one day either
side. Months may be abbreviated ("Aug", "Sept.").

    >>> named_month("Which outdoor spot did Joanna visit in May?")
    5
    >>> named_month("This may help") is None
    True
    >>> named_day("What did his teammates give him on Aug 15th?")
    (8, 15)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from memkit._pipeline.search.keywords import ascii_words
from memkit._time import to_datetime
from memkit.stores.base import Hit, Record

_WHEN = re.compile(
    r"\bwhen\b|\bhow long\b|\bsince when\b|\bwhat time\b|\bhow (?:many|much) time\b"
    r"|\b(?:what|which)\s+(?:year|month|day|date|week|weekday|season|decade|century)\b"
    r"|\bhow (?:many|few) (?:years|months|weeks|days|hours) ago\b"
    r"|\b(?:19|20)\d\d-\d{1,2}-\d{1,2}\b",
    re.IGNORECASE,
)

_UNITS = ("year", "month", "week", "weekend", "day", "night", "morning", "evening", "afternoon",
          "summer", "winter", "spring", "fall", "autumn", "decade")
_DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_SHORT = ("mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun")
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
_UNIT = "(?:" + "|".join(_UNITS) + ")"
_DAYS = "(?:" + "|".join(_DAY_NAMES) + ")"
_DAY_ABBREVIATIONS = "(?:" + "|".join(_DAY_SHORT) + ")"
_MONTHS = "(?:" + "|".join(_MONTH_NAMES) + ")"
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago)\b"
    rf"|\b(?:last|next|this|past|coming|previous|few|couple of|every)\s+{_UNIT}s?\b"
    rf"|\b{_DAYS}s?\b|\b(?:last|next|this|on)\s+{_DAY_ABBREVIATIONS}\b"
    rf"|\b(?:in|on|since|until|by|early|late|mid|of)\s+{_MONTHS}\b"
    rf"|\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\b"
    r"|\b(?:19|20)\d\d\b"
    rf"|\b(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|several|many)\s+{_UNIT}s?\b",
)  # matched against casefolded text: ~4x faster than IGNORECASE, and it runs on every hit


def asks_when(query: str) -> bool:
    """Whether the query asks for a time or a date."""
    return _WHEN.search(query) is not None


# Each time expression holds one of these words or a digit (most texts hold neither).
_TIME_WORDS = frozenset([
    "yesterday", "today", "tonight", "tomorrow", "ago",
    *(word + plural for word in (*_UNITS, *_DAY_NAMES) for plural in ("", "s")),
    *_DAY_SHORT, *_MONTH_NAMES,
])


@functools.lru_cache(maxsize=1 << 14)
def mentions_time(text: str) -> bool:
    """Whether the text carries a time expression (a date, "yesterday", "last week", ...).
    An ASCII text without a digit or any of :data:`_TIME_WORDS` does not; the pattern
    reads the rest. Cached: the searches of one scope test the same memories again and
    again."""
    words = ascii_words(text)
    if words is not None and _TIME_WORDS.isdisjoint(words) and all(map(str.isalpha, words)):
        return False
    return _TIME.search(text.casefold()) is not None


def favour_dated(hits: Sequence[Hit], query: str, weight: float) -> list[Hit]:
    """For a query that asks when, raise the hits whose text says when."""
    if weight <= 0 or not asks_when(query):
        return list(hits)
    return _raise(hits, weight, lambda record: mentions_time(record.memory))


def _raise(hits: Sequence[Hit], weight: float, chosen: Callable[[Record], bool]) -> list[Hit]:
    """The hits, those whose record is ``chosen`` raised to ``s + weight * (1 - s)``, in
    their order (the search ranks them once its steps are done)."""
    return [Hit(h.record, min(1.0, h.score + weight * (1.0 - h.score)))
            if chosen(h.record) else h for h in hits]


_ORDINAL = r"(?:st|nd|rd|th)?"
# a month by its name or its usual abbreviation ("Aug", "Sept.")
_MONTH = ("(" + "|".join([*_MONTH_NAMES, "jan", "feb", "mar", "apr", "jun", "jul", "aug",
                          "sept", "sep", "oct", "nov", "dec"]) + r")\b\.?")
_YEAR = r"(?:,\s*|\s+)(\d{4})\b"
_DAY_MONTH = rf"\b(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?{_MONTH}"
_MONTH_DAY = rf"\b{_MONTH}\s+(\d{{1,2}}){_ORDINAL}"
_DAY_MONTH_YEAR = re.compile(_DAY_MONTH + _YEAR)
_MONTH_DAY_YEAR = re.compile(_MONTH_DAY + _YEAR)
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b")
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# a day of a month without its year after it ("on Aug 15th", "the 6th of October")
_DAY_MONTH_ALONE = re.compile(_DAY_MONTH + r"\b(?!,?\s*\d)")
_MONTH_DAY_ALONE = re.compile(_MONTH_DAY + r"\b(?!,?\s*\d)")

Period = tuple[datetime, datetime]


def _month(name: str) -> int:
    """1-12 from a month's name or abbreviation as :data:`_MONTH` captures it."""
    return next(i for i, full in enumerate(_MONTH_NAMES, start=1) if full.startswith(name[:3]))


def named_period(query: str) -> Period | None:
    """The day (one day either side) or the month the query names with its year, as
    ``[start, end)`` in UTC; ``None`` when it names none (or an impossible date)."""
    text = query.casefold()
    day: tuple[int, int, int] | None = None
    if match := _ISO_DAY.search(text):
        day = (int(match[1]), int(match[2]), int(match[3]))
    elif match := _DAY_MONTH_YEAR.search(text):
        day = (int(match[3]), _month(match[2]), int(match[1]))
    elif match := _MONTH_DAY_YEAR.search(text):
        day = (int(match[3]), _month(match[1]), int(match[2]))
    try:
        if day is not None:
            start = datetime(*day, tzinfo=UTC)
            return start - timedelta(days=1), start + timedelta(days=2)
        if match := _MONTH_YEAR.search(text):
            year, month = int(match[2]), _month(match[1])
            return (datetime(year, month, 1, tzinfo=UTC),
                    datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC))
    except (ValueError, OverflowError):  # 31 February, year 0
        return None
    return None


def named_day(query: str) -> tuple[int, int] | None:
    """The ``(month, day)`` the query names without a year ("on Aug 15th"), or ``None``
    (also for a day no month has)."""
    text = query.casefold()
    if match := _DAY_MONTH_ALONE.search(text):
        name, month, day = match[2], _month(match[2]), int(match[1])
    elif match := _MONTH_DAY_ALONE.search(text):
        name, month, day = match[1], _month(match[1]), int(match[2])
    else:
        return None
    if name == "may" and "May" not in query:  # "you may 2x it" names no day
        return None
    try:
        datetime(2000, month, day)  # a leap year: 29 February is a day
    except ValueError:
        return None
    return month, day


# A capitalised month after a word that makes it a time ("in May", not "this may"),
# without a year after it (that is a named period).
_MONTH_ALONE = re.compile(
    r"\b(?i:in|during|of|early|late|mid|last|this|next|since|until|before|after|by)\s+"
    r"(January|February|March|April|May|June|July|August|September|October|November"
    r"|December)\b(?!,?\s+\d)")


def named_month(query: str) -> int | None:
    """The month (1-12) the query names without a year, or ``None``."""
    match = _MONTH_ALONE.search(query)
    return None if match is None else _MONTH_NAMES.index(match[1].casefold()) + 1


def favour_day(hits: Sequence[Hit], day: tuple[int, int], weight: float) -> list[Hit]:
    """Raise the hits whose memory became true on ``(month, day)`` of any year, give or
    take one day."""
    def on_day(record: Record) -> bool:
        when = to_datetime(record.valid_from or record.created_at)
        return any(_same_day(when + timedelta(days=shift), day) for shift in (-1, 0, 1))
    return _raise(hits, weight, on_day)


def _same_day(when: datetime, day: tuple[int, int]) -> bool:
    return (when.month, when.day) == day


def favour_month(hits: Sequence[Hit], month: int, weight: float) -> list[Hit]:
    """Raise the hits whose memory became true in ``month`` (of any year)."""
    return _raise(hits, weight,
                  lambda record: to_datetime(record.valid_from or record.created_at).month == month)


Favour = Callable[[Sequence[Hit], float], list[Hit]]


def named_time(query: str) -> Favour | None:
    """How to favour the hits of the time the query names: the period it names with its
    year (:func:`named_period`), else the day (:func:`named_day`) or the month
    (:func:`named_month`) it names without one; ``None`` when it names none."""
    if (period := named_period(query)) is not None:
        return lambda hits, weight: favour_period(hits, period, weight)
    if (day := named_day(query)) is not None:
        return lambda hits, weight: favour_day(hits, day, weight)
    if (month := named_month(query)) is not None:
        return lambda hits, weight: favour_month(hits, month, weight)
    return None


def favour_period(hits: Sequence[Hit], period: Period, weight: float) -> list[Hit]:
    """Raise the hits whose memory became true within ``period``."""
    start, end = period
    return _raise(hits, weight,
                  lambda record: start <= to_datetime(record.valid_from or record.created_at) < end)
