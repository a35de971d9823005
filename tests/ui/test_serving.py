"""The dashboard's files and its launch link over HTTP (no browser); tests/test_packaging.py
checks that the wheel ships the files."""

from __future__ import annotations

from pathlib import Path

import httpx

from memkit.server import create_app
from memkit.ui import launch_token, mount_ui
from memkit.ui._app import CSP
from tests.server.conftest import KEYS, new_memory, serving

STATIC = Path(__file__).resolve().parents[2] / "memkit" / "ui" / "static"


def test_every_file_is_served_with_the_policy_and_nothing_else_is() -> None:
    app = create_app(new_memory(), api_keys=dict(KEYS))
    mount_ui(app)
    with serving(app) as url:
        for file in STATIC.rglob("*.*"):
            name = file.relative_to(STATIC).as_posix()
            r = httpx.get(f"{url}/ui/{name}")
            assert r.status_code == 200 and r.content == file.read_bytes(), name
            assert r.headers["content-security-policy"] == CSP
            assert r.headers["x-content-type-options"] == "nosniff"
        assert httpx.get(f"{url}/ui/app.js").headers["content-type"].startswith("text/javascript")
        index = httpx.get(f"{url}/ui/")
        assert index.status_code == 200 and b'<script type="module" src="app.js">' in index.content
        assert httpx.get(f"{url}/ui", follow_redirects=True).url.path == "/ui/"
        for wrong in ("nope.js", "..%2F_app.py", "%2e%2e/%2e%2e/pyproject.toml", "views/../../_app.py"):
            assert httpx.get(f"{url}/ui/{wrong}").status_code == 404, wrong
        assert httpx.get(f"{url}/ui/session").json() == {"keys": True}


def test_a_launch_token_is_a_key_until_traded_once_for_another() -> None:
    app = create_app(new_memory(), api_keys={})
    mount_ui(app)
    with serving(app) as url:
        assert httpx.get(f"{url}/ui/session").json() == {"keys": False}
        token = launch_token(app)
        assert httpx.get(f"{url}/ui/session").json() == {"keys": True}
        assert httpx.get(f"{url}/v1/stats/").status_code == 401  # keys now guard the API
        traded = httpx.post(f"{url}/ui/session", headers={"Authorization": f"Bearer {token}"})
        assert traded.status_code == 200 and traded.headers["cache-control"] == "no-store"
        key = traded.json()["key"]
        assert key != token
        again = httpx.post(f"{url}/ui/session", headers={"Authorization": f"Bearer {token}"})
        assert again.status_code == 401 and "used already" in again.json()["error"]["message"]
        assert httpx.get(f"{url}/v1/stats/", headers={"Authorization": f"Bearer {token}"}).status_code == 401
        assert httpx.get(f"{url}/v1/stats/", headers={"Authorization": f"Bearer {key}"}).status_code == 200

