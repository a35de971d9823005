"""``memkit ui``: the dashboard on 127.0.0.1 behind a one-time link."""

from __future__ import annotations

import socket
import webbrowser
from typing import Annotated

import typer

from memkit import MemkitError
from memkit.cli._common import fail, settings_of, with_hint
from memkit.cli._serve import SHUTDOWN_GRACE


def ui(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: a free one).")] = 0,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the dashboard in a browser.")
                            ] = False,
) -> None:
    """The dashboard on 127.0.0.1 (extra: server), behind a link that works once."""
    try:
        import uvicorn

        from memkit.server import create_app
        from memkit.ui import launch_token, mount_ui
    except ImportError as exc:
        fail(with_hint(exc, "server"))
    try:
        app_ = create_app(config=settings_of(ctx).resolve())
    except (MemkitError, ImportError) as exc:
        fail(str(exc))
    mount_ui(app_)
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        fail(f"cannot listen on 127.0.0.1:{port}: {exc}")
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/ui/#token={launch_token(app_)}"
    print(f"memkit: open the dashboard (the link works once): {url}", flush=True)
    if open_browser:
        webbrowser.open(url)
    server = uvicorn.Server(uvicorn.Config(app_, log_level="warning",
                                           timeout_graceful_shutdown=SHUTDOWN_GRACE))
    server.run(sockets=[sock])
