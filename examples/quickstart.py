"""memkit quickstart: the whole curated pipeline, offline.

    python examples/quickstart.py

memkit's point is that an LLM curates the memory: it extracts facts from a
conversation and decides, against what is stored, to ADD, UPDATE or DELETE.
This script runs that pipeline on embedded defaults (SQLite and the local
embedding model) with a SCRIPTED model (``scripted_model`` below): a stand-in
that answers with fixed replies, so it runs with no key and no network. The decisions it prints are
the scripted ones; everything around them (prompts, validation, embedding,
search, history) is memkit's real code.

To use a real model, change one line (see REAL_MODEL below):

    with Memory.from_config(config) as memory:    # litellm: gpt-4o-mini, or MEMKIT_LLM_MODEL
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memkit import Memory
from memkit.llms import LLMRequest
from memkit.testing import FunctionLLM

# What a real model would answer to memkit's two prompts. 1) "Extract the facts of this
# conversation": the facts below, looked up by a phrase of the message. 2) "Decide, for
# these new facts, ADD / UPDATE / DELETE / NONE against these existing memories (shown
# with short labels as ids)": the decisions below, which find the labels by text.
FACTS = {
    "I live in Porto": ["Is vegetarian", "Lives in Porto", "Goes bouldering on weekends"],
    "I moved to Lisbon": ["Moved to Lisbon", "Stopped bouldering after a shoulder injury"],
    "Still vegetarian": ["Is vegetarian"],
}


def scripted_model(request: LLMRequest) -> dict[str, object]:
    """A SCRIPTED stand-in for an LLM: fixed answers, so this runs with no key or network."""
    prompt = request.messages[-1]["content"]
    if request.purpose == "extraction":
        return {"facts": next(facts for phrase, facts in FACTS.items() if phrase in prompt)}
    shown = prompt.split("\n\nNew facts:")[0].splitlines()[1:]  # "label: text", one a line
    existing = {text: label for label, text in (line.split(": ", 1) for line in shown)}
    return {"memory": [
        {"event": "UPDATE", "id": existing["Lives in Porto"], "text": "Lives in Lisbon (moved from Porto)"},
        {"event": "DELETE", "id": existing["Goes bouldering on weekends"]},
    ]}


CONVERSATION = [
    "Hi! I'm vegetarian, I live in Porto and on weekends I go bouldering.",
    "Big news: I moved to Lisbon last month. And I stopped climbing after hurting my shoulder.",
    "Still vegetarian, of course.",
]


def main() -> None:
    path = Path(os.environ.get("MEMKIT_QUICKSTART_DB", Path(tempfile.mkdtemp()) / "memkit.db"))
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(path)}}}
    # REAL_MODEL: drop `llm=...` to use a real LLM through litellm (OPENAI_API_KEY, or
    # MEMKIT_LLM_MODEL / config llm.config.model set to any litellm model string).
    with Memory.from_config(config, llm=FunctionLLM(scripted_model)) as memory:
        print(f"{memory!r}\nmemory file: {path}")
        print("(the LLM here is a SCRIPTED stand-in: its answers are fixed, memkit's pipeline is real)")

        for turn, text in enumerate(CONVERSATION, 1):
            print(f"\nadd {turn}: {text!r}")
            result = memory.add(text, user_id="alice")
            for event in result.results:
                was = f"  (was: {event.old_memory!r})" if event.event == "UPDATE" else ""
                print(f"  {event.event:<6} {event.memory!r}{was}")

        print("\nsearch 'where does alice live?':")
        for item in memory.search("where does alice live?", user_id="alice", limit=2):
            print(f"  {item.score:.3f}  {item.memory}")

        home = next(m for m in memory.get_all(user_id="alice") if "Lisbon" in m.memory)
        print(f"\nhistory of {home.id}:")
        for record in memory.history(home.id):
            print(f"  {record.event:<6} {record.old_value!r} -> {record.new_value!r}")

        print("\nwhat alice's memory holds now:")
        for item in memory.get_all(user_id="alice"):
            print(f"  - {item.memory}")


if __name__ == "__main__":
    main()
