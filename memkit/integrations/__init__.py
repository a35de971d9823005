"""Agent-framework integrations, one module and one extra each: ``langgraph``,
``pydantic_ai``, ``openai_agents``, ``llama_index``, ``autogen``, ``agno``, ``google_adk`` and
``crewai``."""
