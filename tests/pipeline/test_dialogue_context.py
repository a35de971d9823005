"""Turns stored verbatim from a dialogue are indexed with their neighbours; text is unchanged."""

from __future__ import annotations

from tests.pipeline.conftest import MakeMemory

QUESTION = "How was the pottery workshop in Lisbon last weekend?"
REPLY = "It was amazing, I made a bowl!"


def _reply_score(m: object, user_id: str) -> float:
    results = m.search(QUESTION, user_id=user_id, mode="vector").results  # type: ignore[attr-defined]
    return next(r.score for r in results if r.memory == REPLY)


def test_a_reply_is_found_by_the_turn_it_answers(make_memory: MakeMemory) -> None:
    m = make_memory()
    turns = [("Caroline", QUESTION), ("Melanie", REPLY), ("Caroline", "Did you paint it?")]
    m.add([{"role": "user", "name": n, "content": c} for n, c in turns], user_id="dialogue",
          infer=False)
    m.add([{"role": "user", "content": c} for _, c in turns], user_id="facts", infer=False)
    assert _reply_score(m, "dialogue") > _reply_score(m, "facts")
    stored = {i.memory for i in m.get_all(user_id="dialogue").results}
    assert stored == {c for _, c in turns}  # what get returns is the turn itself


def test_a_list_of_one_speakers_facts_keeps_plain_vectors(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add(["User likes Python", REPLY], user_id="together", infer=False)
    m.add(REPLY, user_id="alone", infer=False)
    assert _reply_score(m, "together") == _reply_score(m, "alone")
