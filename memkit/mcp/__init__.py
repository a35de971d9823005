"""memkit as an MCP server (extra ``mcp``)::

    from memkit import AsyncMemory
    from memkit.mcp import create_server
    create_server(AsyncMemory()).run()  # stdio

or from a shell: ``memkit mcp`` (stdio) / ``memkit mcp --transport http``.
"""

from __future__ import annotations

from memkit._imports import require

require("mcp", "mcp")

from memkit.mcp._server import create_server, default_scope  # noqa: E402

__all__ = ["create_server", "default_scope"]
