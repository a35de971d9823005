"""The two prompts of the add pipeline. Short on purpose: every token is paid per add."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memkit._models import MEMORY_TYPES
from memkit.llms.base import Message

FACT_EXTRACTION = """\
You extract facts worth remembering about the user (and the people, preferences, \
plans, relationships and events they mention) from a conversation, for a long-term memory.
Rules:
- One atomic, self-contained fact per item, in the conversation's language, in the \
third person ("User prefers dark mode", "User's sister is called Ana").
- Resolve relative dates against today's date: {today}.
- Skip greetings, small talk, questions without new information, and anything the \
assistant says that the user did not confirm.
- type: one of {types}; importance: 0 (trivia) to 1 (essential); subject: who/what it \
is about.
- Nothing worth remembering: an empty list.
Answer with JSON only: {{"facts": [{{"text": "...", "type": "...", "importance": 0.5, \
"subject": "user"}}]}}"""

# Sent as it is (never formatted), so its braces are single.
UPDATE_DECISION = """\
You maintain a long-term memory. Compare each new fact with the existing memories and \
choose one operation per fact:
- ADD: new information. {"event": "ADD", "text": "<fact>"}
- UPDATE: refines, corrects or contradicts an existing memory; merge into one text. \
{"event": "UPDATE", "id": "<existing id>", "text": "<merged text>", "old_memory": "<its old text>"}
- DELETE: the fact says an existing memory is no longer true. \
{"event": "DELETE", "id": "<existing id>", "old_memory": "<its text>"}
- NONE: already known. {"event": "NONE", "id": "<existing id>"}
Use only ids from the existing memories. Answer with JSON only: {"memory": [...]}"""

REPAIR_ECHO_CHARS = 4_000
REPAIR = """\
Your previous answer was not valid JSON of the requested shape ({problem}). \
Answer again with the same content as valid JSON only, no prose, no code fences."""

GRAPH_EXTRACTION = """
Also list the relations between named things the facts state, as \
{"source": "<name>", "source_type": "<person|organization|place|...>", \
"relation": "<verb phrase, e.g. works_at>", "target": "<name>", "target_type": "..."}; \
call the user "user" unless named. Answer with JSON only: {"facts": [...], "relations": [...]}"""

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

DECISIONS_SCHEMA = {
    "type": "object",
    "properties": {
        "memory": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE"]},
                    "id": {"type": ["string", "null"]},
                    "text": {"type": ["string", "null"]},
                    "old_memory": {"type": ["string", "null"]},
                },
                "required": ["event", "id", "text", "old_memory"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memory"],
    "additionalProperties": False,
}


def extraction_messages(
    conversation: Sequence[Message], today: str, custom: str | None, graph: bool = False
) -> list[Message]:
    system = custom if custom is not None else FACT_EXTRACTION.format(
        today=today, types=", ".join(MEMORY_TYPES))
    if graph:
        system += GRAPH_EXTRACTION
    lines = []
    for message in conversation:
        speaker = message["role"]
        if message.get("name"):
            speaker = f"{speaker} ({message['name']})"
        lines.append(f"{speaker}: {message['content']}")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "Conversation:\n" + "\n".join(lines)},
    ]


def decision_messages(
    existing: Sequence[str], facts: Sequence[str], custom: str | None
) -> list[Message]:
    shown = [{"id": str(label), "text": text} for label, text in enumerate(existing)]
    body = (
        "Existing memories:\n" + json.dumps(shown, ensure_ascii=False)
        + "\n\nNew facts:\n" + json.dumps(list(facts), ensure_ascii=False)
    )
    return [
        {"role": "system", "content": custom if custom is not None else UPDATE_DECISION},
        {"role": "user", "content": body},
    ]


def repair_messages(previous: Sequence[Message], answer: str, problem: str) -> list[Message]:
    if len(answer) > REPAIR_ECHO_CHARS:  # echo the start of an oversized answer, not all of it
        answer = answer[:REPAIR_ECHO_CHARS] + " [...]"
    return [
        *previous,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": REPAIR.format(problem=problem)},
    ]
