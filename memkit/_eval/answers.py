"""Scoring a generated answer against the gold one: token F1, BLEU-1 and an LLM judge.

F1 and BLEU-1 follow the mem0 paper's evaluation: F1 over the *sets* of
lower-cased words (split on white space and ``. , ! ?``), BLEU-1 as sentence
BLEU with unigram weight 1 (clipped unigram precision times the brevity
penalty; 0 when no word matches). The judge is asked for a lenient
CORRECT/WRONG verdict in JSON (:data:`JUDGE_SYSTEM`).

    >>> round(f1("She moved to Paris.", "Paris"), 3)
    0.4
    >>> round(bleu1("in May 2023", "May 2023"), 3)
    0.667
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

ANSWER_SYSTEM = """\
You answer a question about two people from what a long-term memory holds about their \
conversations. Each memory starts with the date it was recorded.
- Use only the memories; when they disagree, trust the most recent one.
- Turn relative times ("last week", "next month") into dates or periods counted from the \
memory's date.
- Answer in at most six words: the answer itself, no explanation."""

ANSWER_USER = "Memories:\n{memories}\n\nQuestion: {question}"

JUDGE_SYSTEM = """\
You grade an answer to a question about a past conversation against the gold answer. \
Be lenient: the answer is CORRECT when it names the same thing, person, place or time as \
the gold answer, even if it is longer, worded differently or writes a date another way; \
it is WRONG when it names something else, misses the point or does not answer.
Answer with JSON only: {"label": "CORRECT"} or {"label": "WRONG"}."""

JUDGE_USER = "Question: {question}\nGold answer: {gold}\nAnswer: {answer}"

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["CORRECT", "WRONG"]}},
    "required": ["label"],
    "additionalProperties": False,
}

_SEPARATORS = str.maketrans(dict.fromkeys(".,!?", " "))
_BLEU_TOKEN = re.compile(r"\w+|[^\w\s]")
_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


def words(text: object) -> list[str]:
    """Lower-cased words, split on white space and ``. , ! ?``."""
    return str(text).lower().translate(_SEPARATORS).split()


def f1(prediction: object, reference: object) -> float:
    """Harmonic mean of precision and recall over the two texts' sets of words."""
    predicted, wanted = set(words(prediction)), set(words(reference))
    common = len(predicted & wanted)
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: object, reference: object) -> float:
    """Sentence BLEU-1: clipped unigram precision times the brevity penalty."""
    predicted = _BLEU_TOKEN.findall(str(prediction).lower())
    wanted = Counter(_BLEU_TOKEN.findall(str(reference).lower()))
    if not predicted or not wanted:
        return 0.0
    matched = sum(min(n, wanted[token]) for token, n in Counter(predicted).items())
    if not matched:
        return 0.0
    length = sum(wanted.values())
    brevity = 1.0 if len(predicted) > length else math.exp(1 - length / len(predicted))
    return brevity * matched / len(predicted)


def judge_label(text: str) -> bool | None:
    """The judge's verdict: True (CORRECT), False (WRONG), None (neither could be read)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and str(value.get("label", "")).upper() in ("CORRECT", "WRONG"):
        return str(value["label"]).upper() == "CORRECT"
    found = _LABEL.findall(text.upper())
    return None if len(set(found)) != 1 else found[0] == "CORRECT"
