"""The byte-table word split and the time-word check (:func:`ascii_words`,
:func:`mentions_time`) answer as the patterns they stand in for, on any text."""

from __future__ import annotations

import random
import re

from memkit._pipeline.search import keywords, temporal
from memkit._pipeline.search.keywords import ascii_words

_PIECES = [
    "last", "week", "weekend", "weekends", "Weekend_", "_week", "in", "May", "may", "mon",
    "Monday", "mondays", "2023", "20", "1999", "15th", "Aug", "of", "a", "few", "days", "ago",
    "yesterday", "Yesterday's", "summer", "the", "Jon", "job", "ß", "é", "ſ", "K", "İ",
    "dance", "studio", "?", "!", ",", "'", '"', "-", "_", "(", ")", "\n", "\t", " ", "  ",
    "3", "x2", "céline", "ﬁ", "２０２３",
]


def _texts(count: int) -> list[str]:
    rng = random.Random(5)
    texts = ["", " ", "I went there last week.", "see you on Mon!", "in May 2023", "dance_class",
             "every_weekend", "Happy new year", "a few days ago", "2nd of March", "ＭＡＹ"]
    for _ in range(count):
        texts.append("".join(rng.choice(_PIECES) + rng.choice(["", " "])
                             for _ in range(rng.randint(1, 12))))
    return texts


def test_ascii_words_are_the_patterns_words() -> None:
    pattern = re.compile(r"[^\W_]+")
    for text in _texts(3000):
        words = ascii_words(text)
        if text.isascii():
            assert words == pattern.findall(text.lower()), text
        else:
            assert words is None
        assert keywords._words.__wrapped__(text) == frozenset(pattern.findall(text.lower()))


def test_mentions_time_answers_as_the_pattern_alone() -> None:
    phrases = [phrase.format(word.capitalize() if capital else word)
               for word in (*temporal._UNITS, *temporal._DAY_NAMES, *temporal._DAY_SHORT,
                            *temporal._MONTH_NAMES, "yesterday", "today", "tonight", "tomorrow",
                            "ago", "weeks", "weekends", "mondays", "fridays", "decades")
               for capital in (False, True)
               for phrase in ("{}", "in {}", "last {}!", "on {}", "a few {}", "{} 5th", "x_{} y")]
    for text in [*phrases, *_texts(3000)]:
        expected = temporal._TIME.search(text.casefold()) is not None
        assert temporal.mentions_time.__wrapped__(text) is expected, text
