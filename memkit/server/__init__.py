"""memkit's REST API (extra ``server``)::

    from memkit.server import create_app
    app = create_app(config={"vector_store": {"provider": "sqlite"}})
    # uvicorn.run(app, host="127.0.0.1", port=8765)
"""

from __future__ import annotations

from memkit._imports import require

require("fastapi", "server")

from memkit.server._app import create_app  # noqa: E402
from memkit.server._auth import Grant, load_keys  # noqa: E402
from memkit.server._schedule import Schedule  # noqa: E402

__all__ = ["Grant", "Schedule", "create_app", "load_keys"]
