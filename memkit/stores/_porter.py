"""The term SQLite's FTS5 ``porter`` tokenizer makes of a word of lower-case ASCII letters.

The SQLite store matches a search's words in RAM by the terms FTS5 indexed; asking an
in-memory FTS5 table for a word's term takes tens of microseconds (a write and a read),
this stemmer a few. It is the Porter stemmer as FTS5 runs it (the revised rules, with ``logi``
and ``bli``; a word shorter than 3 letters or longer than 64 kept as it is), checked
against FTS5 itself word by word in the tests. Other words (digits, apostrophes, other
scripts) are left to FTS5 (:class:`memkit.stores._sqlite_keywords.Terms`).

    >>> [stem(w) for w in ("running", "dances", "hopeful", "relational", "sky", "by")]
    ['run', 'danc', 'hope', 'relat', 'sky', 'by']
"""

from __future__ import annotations

from collections.abc import Callable

_VOWELS = frozenset("aeiou")


def _consonants(stem: str) -> list[bool]:
    """For each letter, whether it is a consonant: ``y`` is one first and after a vowel."""
    out = []
    previous = False
    for letter in stem:
        previous = not (letter in _VOWELS or (letter == "y" and previous))
        out.append(previous)
    return out


def _measure(stem: str) -> int:
    """The number of vowel-consonant sequences in ``stem`` (Porter's m), counted to 2."""
    marks = _consonants(stem)
    m = 0
    i = 0
    n = len(marks)
    while m < 2:
        while i < n and marks[i]:  # to a vowel
            i += 1
        while i < n and not marks[i]:  # past it, to a consonant
            i += 1
        if i >= n:
            break
        m += 1
    return m


def _has_vowel(stem: str) -> bool:
    """Porter's ``*v*`` as FTS5 tests it: ``y`` counts as a vowel anywhere but first."""
    return any(c in _VOWELS or (c == "y" and i > 0) for i, c in enumerate(stem))


def _cvc(stem: str) -> bool:
    """Porter's ``*o``: consonant, vowel, consonant at the end, the last not w, x or y."""
    if len(stem) < 3 or stem[-1] in "wxy":
        return False
    return _consonants(stem)[-3:] == [True, False, True]


def _m_above_0(stem: str) -> bool:
    return _measure(stem) > 0


def _m_above_1(stem: str) -> bool:
    return _measure(stem) > 1


def _m_above_1_after_s_or_t(stem: str) -> bool:
    return stem[-1] in "st" and _measure(stem) > 1


Rule = tuple[str, str, Callable[[str], bool]]

# Each step's rules: of the suffixes the word ends with, the longest decides (its condition
# failing ends the step).
_STEP_2: tuple[Rule, ...] = tuple((s, r, _m_above_0) for s, r in (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("logi", "log"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
    ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"),
    ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"),
    ("iviti", "ive"), ("biliti", "ble"),
))
_STEP_3: tuple[Rule, ...] = tuple((s, r, _m_above_0) for s, r in (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", ""),
))
_STEP_4: tuple[Rule, ...] = tuple(
    (s, "", _m_above_1_after_s_or_t if s == "ion" else _m_above_1) for s in (
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
        "ou", "ism", "ate", "iti", "ous", "ive", "ize",
    ))


def _step(word: str, rules: tuple[Rule, ...]) -> str:
    """The longest of ``rules``' suffixes the word ends with (leaving a stem), replaced
    when its condition holds of the stem."""
    best: Rule | None = None
    for rule in rules:
        suffix = rule[0]
        if len(word) > len(suffix) and word.endswith(suffix) and (
                best is None or len(suffix) > len(best[0])):
            best = rule
    if best is None:
        return word
    suffix, replacement, condition = best
    stem = word[: -len(suffix)]
    return stem + replacement if condition(stem) else word


def stem(word: str) -> str:
    """FTS5's ``porter`` term of ``word``, a word of lower-case ASCII letters."""
    if not 3 <= len(word) <= 64:
        return word
    # Step 1a: plurals.
    if word.endswith("s"):
        if word.endswith("es"):
            plural = (len(word) > 4 and word.endswith("sses")) or (
                len(word) > 3 and word.endswith("ies"))
            word = word[:-2] if plural else word[:-1]
        elif not word.endswith("ss"):
            word = word[:-1]
    # Step 1b: -eed, -ed, -ing.
    if word.endswith("eed") and len(word) > 3:
        if _m_above_0(word[:-3]):
            word = word[:-1]
    elif (word.endswith("ed") and len(word) > 2 and _has_vowel(word[:-2])) or (
            word.endswith("ing") and len(word) > 3 and _has_vowel(word[:-3])):
        word = word[:-2] if word.endswith("ed") else word[:-3]
        if word.endswith(("at", "bl", "iz")) and len(word) > 2:
            word += "e"
        elif word[-1] not in "aeioulsz" and len(word) > 1 and word[-1] == word[-2]:
            word = word[:-1]
        elif _measure(word) == 1 and _cvc(word):
            word += "e"
    # Step 1c: -y after a vowel-holding stem.
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _step(_step(_step(word, _STEP_2), _STEP_3), _STEP_4)
    # Step 5a: a final -e.
    if word.endswith("e"):
        m = _measure(word[:-1])
        if m > 1 or (m == 1 and not _cvc(word[:-1])):
            word = word[:-1]
    # Step 5b: -ll.
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        word = word[:-1]
    return word
