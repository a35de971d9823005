"""A CrewAI crew whose memory is memkit: what one kickoff's task concludes is remembered,
and the next kickoff's agent is given it before its task.

    pip install 'memkit-ai[local,crewai]'
    python examples/crewai_agent.py

Offline: the model is SCRIPTED (CrewAI's LLM through litellm, with litellm's
``mock_response``), and memkit stores each task's result verbatim (``infer=False``). For a
real model, use e.g. ``LLM(model="gpt-4o-mini")`` with OPENAI_API_KEY and drop
``infer=False`` so that an LLM curates the facts. CrewAI sends usage telemetry unless told
not to; this example tells it not to (CREWAI_DISABLE_TELEMETRY).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no price list download
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")

from crewai import LLM, Agent, Crew, Task
from crewai.events import MemoryRetrievalCompletedEvent, crewai_event_bus

from memkit import Memory
from memkit.integrations.crewai import MemkitMemory, memory_tools


def main() -> None:
    folder = Path(os.environ.get("MEMKIT_EXAMPLE_DIR") or tempfile.mkdtemp())
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(folder / "memories.db")}}}
    recalled: list[str] = []
    crewai_event_bus.on(MemoryRetrievalCompletedEvent)(lambda _, event: recalled.append(event.memory_content))

    with Memory(config) as memory:
        chef = Agent(
            role="Chef", goal="Plan meals Alice can eat", backstory="Cooks for Alice every week.",
            llm=LLM(model="gpt-4o-mini", is_litellm=True, api_key="offline",  # SCRIPTED: a fixed reply
                    mock_response="Alice is vegetarian and allergic to peanuts."),
            tools=memory_tools(memory, user_id="alice", agent_id="chef", names=["search_memories"]),
        )

        def kickoff(task: str) -> str:
            crew_memory = MemkitMemory(memory, user_id="alice", agent_id="chef", infer=False)
            crew = Crew(agents=[chef], tasks=[Task(description=task, expected_output="A short answer", agent=chef)],
                        memory=crew_memory)
            try:
                return crew.kickoff().raw
            finally:
                crew_memory.close()  # CrewAI saves in threads of its own: wait for them

        print("[ai]", kickoff("Alice says: I'm vegetarian and allergic to peanuts. Note her diet."))
        print("memkit holds:", [m.memory.splitlines()[-1] for m in memory.get_all(user_id="alice").results])

        kickoff("What should Alice eat tonight?")
        print("[context]", recalled[-1].splitlines()[:2])


if __name__ == "__main__":
    main()
