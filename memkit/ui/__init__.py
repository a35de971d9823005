"""memkit's dashboard (extra ``server``): plain HTML, CSS and JavaScript modules shipped in
the wheel, talking to the REST API only. ``memkit ui`` runs it on 127.0.0.1 behind a
one-time link; ``memkit serve`` serves it at ``/ui/`` behind the server's API keys::

    from memkit.server import create_app
    from memkit.ui import mount_ui
    app = create_app(config={"vector_store": {"provider": "sqlite"}})
    mount_ui(app)                 # the dashboard at /ui/
    token = launch_token(app)     # open /ui/#token=<token> once
"""

from __future__ import annotations

from memkit._imports import require

require("fastapi", "server")

from memkit.ui._app import launch_token, mount_ui  # noqa: E402

__all__ = ["launch_token", "mount_ui"]
