"""The dashboard in a real browser: Debian's Chromium driven by Playwright, against the REST
server under uvicorn on 127.0.0.1 (tests.server.conftest.serving) over a SQLite store with
its graph. Skips without Chromium or Playwright; in CI (CI=true) it fails instead."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from memkit import AsyncMemory
from memkit.llms.base import LLMRequest
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import FunctionLLM, HashEmbedder
from tests.conftest import in_ci
from tests.pipeline.conftest import shown_labels

pytest.importorskip("fastapi")
try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips, or fails in CI, saying so
    expect = None  # type: ignore[assignment]
CHROMIUM = os.environ.get("MEMKIT_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "images" / "ui"
_RELATION = re.compile(r"^(\w+) (works at|lives in|knows|manages) (\w+)$")


def _need_browser() -> Any:
    reason = ""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[dev]')"
    if not reason and not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set MEMKIT_TEST_CHROMIUM)"
    if reason:
        if in_ci():
            pytest.fail(f"{reason}: CI runs the browser tests; run them with bash scripts/test.sh")
        pytest.skip(reason)
    return sync_playwright


def ui_llm() -> FunctionLLM:
    """Extraction: each user line is a fact (``A works at B`` also a relation); decision: ADD
    each fact, but ``Forget: <a memory's text>`` deletes that memory (closing its relations)."""
    facts: list[str] = []

    def answer(request: LLMRequest) -> Any:
        if request.purpose == "extraction":
            lines = request.messages[-1]["content"].split("\n")
            facts[:] = [line.removeprefix("user: ").strip() for line in lines
                        if line.startswith("user: ")]
            relations = [{"source": m[1], "source_type": "person", "relation": m[2],
                          "target": m[3], "target_type": "thing"}
                         for m in map(_RELATION.match, facts) if m]
            if "relations" in (request.json_schema or {}).get("properties", {}):
                return {"facts": facts, "relations": relations}
            return {"facts": [{"text": f, "type": "fact", "importance": 0.5} for f in facts]}
        return {"memory": [_decide(fact, shown_labels(request)) for fact in facts]}

    return FunctionLLM(answer)


def _decide(fact: str, labels: dict[str, str]) -> dict[str, Any]:
    if not fact.startswith("Forget: "):
        return {"event": "ADD", "text": fact}
    return {"event": "DELETE", "id": labels[fact.removeprefix("Forget: ")]}


def new_memory(folder: Path, config: dict[str, Any] | None = None) -> AsyncMemory:
    store = SQLiteStore(str(folder / "memkit.db"))
    return AsyncMemory(config, llm=ui_llm(), embedder=HashEmbedder(), vector_store=store,
                       graph_store=store.graph())


@dataclass
class Browser:
    """One Chromium for a test module; pages record console errors and every request."""

    browser: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def page(self, **context: Any) -> Any:
        page = self.browser.new_context(viewport={"width": 1280, "height": 860}, **context).new_page()
        page.on("console", lambda m: self.errors.append(f"{m.text} at {m.location.get('url')}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.set_default_timeout(10_000)
        return page

    def outside(self) -> list[str]:
        """Requests to anything but 127.0.0.1."""
        return [u for u in self.requests if urlsplit(u).hostname != "127.0.0.1"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield Browser(chromium)
        finally:
            chromium.close()


def admin(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10)


def remember(client: httpx.Client, text: str, **fields: Any) -> dict[str, Any]:
    body = {"messages": text, "infer": False, **fields}
    response = client.post("/v1/memories/", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["results"][0]
    return result


def shot(page: Any, name: str) -> None:
    """A screenshot for docs/ui.md (only with MEMKIT_UI_SCREENSHOTS=1, so runs stay fast)."""
    if os.environ.get("MEMKIT_UI_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))



