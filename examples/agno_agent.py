"""An Agno agent whose memory manager is memkit: what a run says is remembered, and the
next run's model sees it in its context.

    pip install 'memkit-ai[local,agno]'
    python examples/agno_agent.py

Offline: the model is SCRIPTED (Agno's LiteLLM model with litellm's ``mock_response``), and
the manager stores messages verbatim (``infer=False``). For a real model, use e.g.
``LiteLLM(id="gpt-4o-mini")`` with OPENAI_API_KEY and drop ``infer=False`` so that an LLM
curates the facts. Agno logs "Database not provided": that is its session database
(``Agent(db=...)``); the memories are in memkit.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no price list download

from agno.agent import Agent
from agno.models.litellm import LiteLLM

from memkit import Memory
from memkit.integrations.agno import MemkitMemoryManager, memory_tools


def main() -> None:
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    with Memory(config) as memory:
        agent = Agent(
            model=LiteLLM(id="gpt-4o-mini", api_key="offline",  # SCRIPTED: a fixed reply
                          request_params={"mock_response": "Noted, I'll keep that in mind."}),
            user_id="alice", update_memory_on_run=True,
            memory_manager=MemkitMemoryManager(memory, agent_id="chef", infer=False),
            tools=memory_tools(memory, user_id="alice", agent_id="chef", names=["search_memories"]),
        )
        first = agent.run("I'm vegetarian and allergic to peanuts.")
        print("[ai]", first.content)
        print("memkit holds:", [m.memory for m in memory.get_all(user_id="alice", agent_id="chef").results])

        second = agent.run("What should I cook tonight?")
        system = next(m for m in second.messages or [] if m.role == "system")
        context = system.get_content_string()
        print("[context]", context[context.index("<memories_from_previous_interactions>"):].splitlines()[1:3])


if __name__ == "__main__":
    main()
