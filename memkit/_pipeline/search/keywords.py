"""What the keyword half of a search looks for: a query's content words.

Every store ranks full text its own way (FTS5, PostgreSQL ``tsvector``, BM25,
sparse vectors), so the query is prepared once, here, before any of them sees
it. Function words ("I", "the", "did", "what") are dropped: they occur in most
memories, and a keyword hit on them is noise that would lift every memory.
Dates are spelled the ways memories write them, and a word that is both a
function word and a name ("Will", "May") is kept where it is capitalised
inside a sentence.

    >>> keyword_query("When did Caroline go to the LGBTQ support group?")
    'caroline go lgbtq support group'
    >>> keyword_query("What did I do on 2023-05-07?")
    '2023 05 07 may 7'
    >>> keyword_query("I") is None
    True

A content word can still be common in one memory: in a conversation between
Jon and Gina, "Jon" is in most turns, and a keyword hit on it says nothing
about the question. Hybrid search therefore also drops the words found in more
than a share of the memories its vector half returned (:func:`distinctive`).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Sequence
from itertools import repeat

MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)
_MONTH_ABBREVIATIONS = {m[:3]: m for m in MONTHS} | {"sept": "september"}

# Function words of English questions and chat: pronouns, articles, auxiliaries,
# prepositions, conjunctions, question words, fillers and vague time words.
_STOPWORD_TEXT = """
a about above after again against ago all also am an and any anything are aren as at be
because been before being below between both but by can cannot could couldn d did didn
do does doesn doing don done down during each either else ever every few for from
further get gets getting got had hadn has hasn have haven having he her here hers
herself him himself his how i if in into is isn it its itself just know kind like ll m
ma made make may me might more most much must mustn my myself need needn no nor not now
of off often on once one only or other our ours ourselves out over own quite re really
recently s same shall she should shouldn so some something such t than that the their
theirs them themselves then there these they this those through to too under until up
upon us use used ve very was wasn we were weren what whatever when where whether which
while who whom whose why will with won would wouldn y yet you your yours yourself
yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Function words that are also names or months: kept when capitalised mid-sentence.
_ALSO_NAMES = frozenset({"may", "will", "don", "art", "bill", "mark", "pat", "sue"})

_TOKEN = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|[^\W_]+")
_ORDINAL = re.compile(r"(\d{1,2})(?:st|nd|rd|th)")
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")


def keyword_terms(query: str) -> list[str]:
    """The query's content words, lower-cased, in order, each once."""
    terms: list[str] = []
    previous_end: int | None = None
    for match in _TOKEN.finditer(query):
        gap = query[previous_end : match.start()] if previous_end is not None else ""
        sentence_start = previous_end is None or any(c in gap for c in ".!?")
        previous_end = match.end()
        for term in _expand(match.group(), sentence_start):
            if term not in terms:
                terms.append(term)
    return terms


def keyword_query(query: str) -> str | None:
    """The text handed to a store's keyword search, or ``None`` when nothing is left."""
    return " ".join(keyword_terms(query)) or None


#: the fewest candidates from which a word's share among them is taken as evidence
MIN_SAMPLE = 20
_WORD = re.compile(r"[^\W_]+")


def distinctive(terms: Sequence[str], texts: Sequence[str], share: float) -> list[str]:
    """The terms found in at most ``share`` of ``texts``, in order; all of them when
    ``texts`` are too few to tell (fewer than :data:`MIN_SAMPLE`) or ``share`` is 1.

        >>> texts = ["Jon: I lost my job", "Gina: Jon, sorry!"] + ["Jon: dance"] * 18
        >>> distinctive(["jon", "job"], texts, 0.3)
        ['job']
    """
    if share >= 1 or len(texts) < MIN_SAMPLE:
        return list(terms)
    words = [_words(text) for text in texts]
    limit = share * len(texts)
    return [t for t in terms if sum(map(frozenset.__contains__, words, repeat(t))) <= limit]


@functools.lru_cache(maxsize=1 << 14)
def _words(text: str) -> frozenset[str]:
    """The lower-cased words of a text; cached: one scope's searches meet the same
    memories again and again."""
    words = ascii_words(text)
    return frozenset(_WORD.findall(text.lower()) if words is None else words)


#: ASCII letters lower-cased, every other byte but a digit made a space
_NOT_ALNUM = bytes(c for c in range(128) if not chr(c).isalnum())
_ASCII_WORD_BYTES = bytes.maketrans(string.ascii_uppercase.encode() + _NOT_ALNUM,
                                    string.ascii_lowercase.encode() + b" " * len(_NOT_ALNUM))


def ascii_words(text: str) -> list[str] | None:
    """The lower-cased words (``[^\\W_]+``) of an ASCII text by one byte table, about a
    quarter of the time of the pattern; None for any other text.

        >>> ascii_words("Jon's job_hunt, 2nd try!")
        ['jon', 's', 'job', 'hunt', '2nd', 'try']
    """
    if not text.isascii():
        return None
    return text.encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split()


def _expand(word: str, sentence_start: bool) -> list[str]:
    iso = _ISO_DATE.fullmatch(word)
    if iso:
        year, month, day = iso.groups()
        terms = [year, month.zfill(2), day.zfill(2)]
        if 1 <= int(month) <= 12:
            terms += [MONTHS[int(month) - 1], str(int(day))]
        return terms
    lower = word.lower()
    ordinal = _ORDINAL.fullmatch(lower)
    if ordinal:
        return [ordinal.group(1)]
    if lower in _MONTH_ABBREVIATIONS and lower not in STOPWORDS and word[0].isupper():
        return [_MONTH_ABBREVIATIONS[lower]]
    if lower not in STOPWORDS:
        return [lower]
    if lower in _ALSO_NAMES and word[0].isupper() and not sentence_start:
        return [lower]
    if len(word) > 1 and word.isupper() and lower not in ("i", "am", "a"):
        return [lower]  # an acronym: "US", "IT"
    return []
