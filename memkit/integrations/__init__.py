"""Agent-framework integrations, one module and one extra each: ``langgraph``,
``pydantic_ai``, ``openai_agents``."""
