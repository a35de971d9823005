"""memkit: long-term memory for AI agents."""
