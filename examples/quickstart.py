"""memkit quickstart: runs offline on embedded defaults (SQLite + a local embedding model).

    python examples/quickstart.py

With an LLM configured (OPENAI_API_KEY, or MEMKIT_LLM_MODEL set to any litellm model
string such as "ollama/llama3.1"), it also lets the LLM curate memories.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from memkit import Memory


def main() -> None:
    path = Path(os.environ.get("MEMKIT_QUICKSTART_DB", Path(tempfile.mkdtemp()) / "memkit.db"))
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(path)}}}
    with Memory.from_config(config) as memory:
        print(f"memory file: {path}")

        # 1. Store messages as they are (no LLM involved).
        added = memory.add(
            [
                {"role": "user", "content": "I'm vegetarian and allergic to peanuts."},
                {"role": "user", "content": "I work as a data engineer in Lisbon."},
                {"role": "user", "content": "On weekends I go bouldering."},
            ],
            user_id="alice",
            infer=False,
        )

        # 2. Search them by meaning.
        for query in ("what should I cook for alice?", "alice's hobbies"):
            print(f"\nsearch: {query}")
            for item in memory.search(query, user_id="alice", limit=2).results:
                print(f"  {item.score:.3f}  {item.memory}")

        # 3. Edit one and read its history.
        diet = added.results[0].id  # events come in message order
        memory.update(diet, "I'm vegan and allergic to peanuts.")
        print(f"\nhistory of {diet}:")
        for record in memory.history(diet):
            print(f"  {record.event:<6} {record.old_value!r} -> {record.new_value!r}")

        # 4. Let an LLM curate, when one is configured.
        if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("MEMKIT_LLM_MODEL")):
            print(
                "\nNo LLM configured, so the curated add was skipped (no connection was opened)."
                "\nSet OPENAI_API_KEY, or MEMKIT_LLM_MODEL to any litellm model string"
                " (e.g. ollama/llama3.1), to see memkit extract facts and decide"
                " ADD/UPDATE/DELETE."
            )
            return
        print("\ncurated add:")
        for text in ("My favourite city is Porto.", "Actually, my favourite city is Lisbon now."):
            result = memory.add(text, user_id="bob")
            for event in result.results:
                print(f"  {event.event:<6} {event.memory}" + (
                    f"  (was: {event.old_memory})" if event.old_memory else ""))
            for error in result.errors:
                print(f"  skipped: {error.message}", file=sys.stderr)


if __name__ == "__main__":
    main()
