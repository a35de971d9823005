"""The dashboard in Chromium while its store is down: every view says why, then works again
once the store is back."""

from __future__ import annotations

from pathlib import Path

from memkit import AsyncMemory
from memkit.server import create_app
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder
from memkit.ui import mount_ui
from tests.server.conftest import KEYS, serving
from tests.ui.conftest import Browser, admin, expect, remember


def test_a_store_outage_is_said_in_every_view_and_the_scopes_come_back_after(
        browser: Browser, tmp_path: Path) -> None:
    path = str(tmp_path / "memkit.db")
    down = SQLiteStore(path)
    app = create_app(AsyncMemory(embedder=HashEmbedder(), vector_store=down), api_keys=dict(KEYS))
    mount_ui(app)
    with serving(app) as url:
        with admin(url) as api:
            remember(api, "Alice likes green tea", user_id="alice")
        down.close()  # the engine goes away under the server
        page = browser.page()
        page.goto(f"{url}/ui/#key=admin-key")
        expect(page.locator("#main h1")).to_have_text("Cannot show this")
        page.click("nav >> text=Memories")  # a view that needs a scope, and the picker is empty
        expect(page.locator("#main h1")).to_have_text("Memories")
        expect(page.locator("#status")).to_contain_text("The scopes could not be read")
        back = SQLiteStore(path)
        app.state.memory = AsyncMemory(embedder=HashEmbedder(), vector_store=back)
        page.click("nav >> text=Overview")  # the store is back: the next view reads the scopes
        expect(page.locator("#scope option")).to_have_text(["every scope", "user alice"])
        expect(page.locator("#status")).to_be_hidden()
        expect(page.locator("#main h1")).to_have_text("Overview of user alice")
        page.context.close()
    back.close()
