"""The prompts of the add pipeline: extraction then decision (two calls, the default), or
both in one answer (``add_mode="one_call"``). Short on purpose: every token is paid per add.

The prompts are sent with ``{today}`` and ``{types}`` filled in by :func:`_filled`, never
``str.format``, so their JSON braces are single."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memkit._models import MEMORY_TYPES
from memkit.llms.base import Message

_WHAT = "Extract facts worth remembering about the user and the people, plans, preferences \
and events they mention"
_RULES = """
- One self-contained fact per item, third person, in the conversation's language \
("User's sister is Ana").
- Today is {today}; resolve relative dates.
- Skip small talk, and what the assistant says unless the user confirms it.
- type: one of {types}; importance: 0 (trivia) to 1 (essential); subject: who/what it \
is about."""
_OPERATIONS = """
- ADD: new information; text: the fact.
- UPDATE: it refines, corrects or contradicts memory id; text: the two merged; \
old_memory: that memory's text.
- DELETE: it says memory id is no longer true; old_memory: that memory's text.
- NONE: memory id already says it.
Use only the numbers shown as ids."""

FACT_EXTRACTION = _WHAT + "." + _RULES + """
JSON only: {"facts": [{"text": "...", "type": "...", "importance": 0.5, "subject": "user"}]}, \
[] if none"""

UPDATE_DECISION = """\
For each new fact, one operation on the numbered existing memories, as \
{"event", "id", "text", "old_memory"}:""" + _OPERATIONS + """ JSON only: {"memory": [...]}"""

ONE_CALL = _WHAT + ", each as one operation on the numbered existing memories." + _RULES + """
Operations, as {"event", "id", "text", "old_memory", "type", "importance", "subject"}:""" + _OPERATIONS + """
JSON only: {"memory": [...]}, [] if nothing is worth remembering"""

REPAIR_ECHO_CHARS = 4_000
REPAIR = """\
Your previous answer was not valid JSON of the requested shape ({problem}). \
Answer again with the same content as valid JSON only, no prose, no code fences."""

GRAPH_EXTRACTION = """
Also the relations the facts state between named things (the user is "user" unless \
named): {"source": "<name>", "source_type": "<person|place|...>", "relation": "<e.g. \
works_at>", "target": "<name>", "target_type": "..."}. JSON only: \
{"{items}": [...], "relations": [...]}"""

_RELATION_ITEM = {
    "type": "object",
    "properties": {
        "source": {"type": "string"}, "source_type": {"type": "string"},
        "relation": {"type": "string"},
        "target": {"type": "string"}, "target_type": {"type": "string"},
    },
    "required": ["source", "source_type", "relation", "target", "target_type"],
    "additionalProperties": False,
}

_FACT_ITEM = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "type": {"type": "string", "enum": list(MEMORY_TYPES)},
        "importance": {"type": "number"},
        "subject": {"type": "string"},
    },
    "required": ["text", "type", "importance", "subject"],
    "additionalProperties": False,
}

FACTS_SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": _FACT_ITEM}},
    "required": ["facts"],
    "additionalProperties": False,
}

FACTS_AND_RELATIONS_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {"type": "array", "items": _FACT_ITEM},  # type and importance kept
        "relations": {"type": "array", "items": _RELATION_ITEM},
    },
    "required": ["facts", "relations"],
    "additionalProperties": False,
}

_OPERATION_FIELDS: dict[str, Any] = {
    "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE"]},
    "id": {"type": ["string", "null"]},
    "text": {"type": ["string", "null"]},
    "old_memory": {"type": ["string", "null"]},
}


def _answer_schema(fields: dict[str, Any], relations: bool) -> dict[str, Any]:
    """``{"memory": [operation, ...]}`` (and ``"relations"``), every field required."""
    operation = {"type": "object", "properties": fields, "required": list(fields),
                 "additionalProperties": False}
    properties: dict[str, Any] = {"memory": {"type": "array", "items": operation}}
    if relations:
        properties["relations"] = {"type": "array", "items": _RELATION_ITEM}
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


DECISIONS_SCHEMA = _answer_schema(_OPERATION_FIELDS, relations=False)


def one_call_schema(graph: bool) -> dict[str, Any]:
    """The one-call answer: operations carrying the type and importance of their text."""
    return _answer_schema({**_OPERATION_FIELDS,
                           "type": {"anyOf": [{"type": "string", "enum": list(MEMORY_TYPES)},
                                              {"type": "null"}]},
                           "importance": {"type": ["number", "null"]},
                           "subject": {"type": ["string", "null"]}}, relations=graph)


def _filled(template: str, today: str) -> str:
    return template.replace("{today}", today).replace("{types}", ", ".join(MEMORY_TYPES))


def _transcript(conversation: Sequence[Message]) -> str:
    lines = ["Conversation:"]
    for message in conversation:
        speaker = message["role"]
        if message.get("name"):
            speaker = f"{speaker} ({message['name']})"
        lines.append(f"{speaker}: {message['content']}")
    return "\n".join(lines)


def extraction_messages(
    conversation: Sequence[Message], today: str, custom: str | None, graph: bool = False
) -> list[Message]:
    system = custom if custom is not None else _filled(FACT_EXTRACTION, today)
    if graph:
        system += GRAPH_EXTRACTION.replace("{items}", "facts")
    return [{"role": "system", "content": system},
            {"role": "user", "content": _transcript(conversation)}]


def decision_messages(
    existing: Sequence[str], facts: Sequence[str], custom: str | None
) -> list[Message]:
    body = (
        "Existing memories:\n" + numbered(existing)
        + "\n\nNew facts:\n" + json.dumps(list(facts), ensure_ascii=False)
    )
    return [
        {"role": "system", "content": custom if custom is not None else UPDATE_DECISION},
        {"role": "user", "content": body},
    ]


def one_call_messages(existing: Sequence[str], conversation: Sequence[Message], today: str,
                      graph: bool) -> list[Message]:
    """Extraction and decisions in one prompt: the memories the conversation's own text
    found, labelled, then the conversation."""
    system = _filled(ONE_CALL, today)
    if graph:
        system += GRAPH_EXTRACTION.replace("{items}", "memory")
    shown = numbered(existing) if existing else "(none)"
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Existing memories:\n{shown}\n\n"
                                        + _transcript(conversation)}]


def numbered(texts: Sequence[str]) -> str:
    """One ``label: text`` line per memory, its whitespace collapsed so that no text
    can start a line of its own (and pose as another label)."""
    return "\n".join(f"{label}: {' '.join(text.split())}" for label, text in enumerate(texts))


def repair_messages(previous: Sequence[Message], answer: str, problem: str) -> list[Message]:
    if len(answer) > REPAIR_ECHO_CHARS:  # echo the start of an oversized answer, not all of it
        answer = answer[:REPAIR_ECHO_CHARS] + " [...]"
    return [
        *previous,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": REPAIR.format(problem=problem)},
    ]
