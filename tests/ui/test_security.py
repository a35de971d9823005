"""What the dashboard must never do, in Chromium: run what a memory says, show a key's user
another scope, or keep a key in the URL."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from memkit.server import create_app
from memkit.ui import mount_ui
from tests.server.conftest import KEYS, serving
from tests.ui.conftest import Browser, admin, expect, new_memory, remember

PAYLOADS = ["<script>window.__pwned = 1</script>", '<img src=x onerror="window.__pwned = 1">']
KEY_PAYLOADS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]  # no '.' or '"' in keys


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    app = create_app(new_memory(tmp_path_factory.mktemp("ui")), api_keys=dict(KEYS))
    mount_ui(app)
    with serving(app) as url, admin(url) as api:
        hostile = [remember(api, f"Alice said {p}", user_id="alice", memory_type=p,
                            metadata={k: p})["id"] for p, k in zip(PAYLOADS, KEY_PAYLOADS, strict=True)]
        for p in PAYLOADS:  # an entity named by the payload, and a relation to it
            made = api.post("/v1/entities/Alice/relations/", json={
                "relation": "knows", "target": p, "user_id": "alice"})
            assert made.status_code == 200, made.text
        bob = remember(api, "Bob's secret plan", user_id="bob")["id"]
        yield {"url": url, "hostile": hostile, "bob": bob}


def visit(browser: Browser, url: str, key: str) -> Any:
    page = browser.page()
    page.on("dialog", lambda d: browser.errors.append(f"a dialog opened: {d.message}"))
    page.goto(f"{url}/ui/#key={key}")
    expect(page.locator("#main h1")).to_contain_text("Overview")
    return page


def inert(page: Any) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#main script, #main img").count() == 0


def test_hostile_texts_metadata_and_entity_names_stay_text(browser: Browser,
                                                          site: dict[str, Any]) -> None:
    browser.errors.clear()
    page = visit(browser, site["url"], "alice-key")
    assert "key=" not in page.url  # moved to sessionStorage, out of the URL and history
    base = page.url.split("#")[0]
    views = {"#/overview": "figure.chart", "#/memories": "table.list",
             "#/memories?q=Alice+said": "td.matched", "#/graph?entity=Alice&depth=2": "svg.graph .node"}
    for view, drawn in views.items():
        page.goto(base + view)
        expect(page.locator(drawn).first).to_be_visible()
        inert(page)
    expect(page.locator("svg.graph .node", has_text=PAYLOADS[1])).to_have_count(1)
    page.locator("svg.graph .node", has_text=PAYLOADS[1]).click()
    expect(page.locator(".side h2")).to_have_text(PAYLOADS[1])
    for id, payload, key in zip(site["hostile"], PAYLOADS, KEY_PAYLOADS, strict=True):
        page.goto(f"{base}#/memory/{id}")
        expect(page.locator(".memory-text")).to_have_text(f"Alice said {payload}")
        expect(page.locator("dl.metadata dt").first).to_have_text(key)
        expect(page.locator("dl.metadata dd").first).to_have_text(payload)
        inert(page)
    assert browser.errors == []
    page.context.close()


def test_a_bound_key_sees_and_reaches_only_its_scope(browser: Browser, site: dict[str, Any]) -> None:
    page = visit(browser, site["url"], "alice-key")
    options = page.locator("#scope option").all_text_contents()
    assert "user alice" in options and not any("bob" in o for o in options)
    base = page.url.split("#")[0]
    page.goto(f"{base}#/overview")
    expect(page.locator("figure.chart", has_text="Memories per scope")).not_to_contain_text("bob")
    page.goto(f"{base}#/memory/{site['bob']}")
    expect(page.locator("#main h1")).to_have_text("Cannot show this")
    expect(page.locator("#status")).to_contain_text("outside the API key's scope")
    expect(page.locator("#main")).not_to_contain_text("secret plan")
    reached = page.evaluate("""async id => {
        const key = sessionStorage.getItem('memkit.key');
        const ask = (method, path) => fetch(path, {method, headers: {Authorization: `Bearer ${key}`}})
            .then(r => r.status);
        return [await ask('GET', `/v1/memories/?user_id=bob`), await ask('DELETE', `/v1/memories/${id}/`),
                await ask('GET', `/v1/memories/${id}/history/`)];
    }""", site["bob"])
    assert reached == [403, 403, 403]
    with admin(site["url"]) as api:
        assert api.get(f"/v1/memories/{site['bob']}/").status_code == 200
    page.context.close()


def test_the_pages_carry_a_strict_content_security_policy(browser: Browser,
                                                          site: dict[str, Any]) -> None:
    page = browser.page()
    response = page.goto(f"{site['url']}/ui/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    expect(page.locator("#login-reason")).to_have_text("This server needs an API key.")
    refused = page.evaluate("""() => new Promise(resolve => {
        document.addEventListener('securitypolicyviolation', e => resolve(e.violatedDirective));
        const inline = document.createElement('script');
        inline.textContent = 'window.__inline = 1';
        document.body.append(inline);
    })""")
    assert refused.startswith("script-src") and page.evaluate("window.__inline") is None
    page.fill("#login-key", "alice-key")
    page.click("text=Open the dashboard")
    expect(page.locator("#main h1")).to_contain_text("Overview of user alice")
    page.context.close()


RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE, never closed: all that follows it on the line turns around
ORDER = """([selector, first, second]) => {
    const node = [...document.querySelector(selector).childNodes].find(n => n.nodeType === 3 &&
        n.data.includes(first) && n.data.includes(second));
    const box = text => {
        const range = document.createRange(), at = node.data.indexOf(text);
        range.setStart(node, at);
        range.setEnd(node, at + text.length);
        return range.getBoundingClientRect();
    };
    return box(first).right <= box(second).left;
}"""


def test_a_right_to_left_override_turns_around_only_its_own_text(browser: Browser,
                                                                   site: dict[str, Any]) -> None:
    with admin(site["url"]) as api:
        id = remember(api, f"Alice wrote {RLO}this backwards", user_id="alice")["id"]
        remember(api, "Mallory's note", user_id=f"{RLO}mallory", agent_id="helper")
    page = visit(browser, site["url"], "admin-key")
    page.select_option("#scope", json.dumps({"user_id": "alice"}, separators=(",", ":")))
    link = page.locator(f"ol.feed a[href='#/memory/{id}']").last  # the newest memories
    expect(link.locator("xpath=following-sibling::span[1]")).to_have_text(
        re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d$"))  # its date
    assert page.evaluate("""id => {  // in one go: the live feed may redraw the view
        const link = [...document.querySelectorAll(`ol.feed a[href='#/memory/${id}']`)].pop();
        return link.getBoundingClientRect().right <= link.nextElementSibling.getBoundingClientRect().left;
    }""", id)
    page.select_option("#scope", json.dumps({"user_id": f"{RLO}mallory", "agent_id": "helper"},
                                            separators=(",", ":"), ensure_ascii=False))
    expect(page.locator("#main h1")).to_contain_text("agent helper")
    assert page.evaluate(ORDER, ["#main h1", "mallory", "agent helper"])  # the label's own order
    page.context.close()


ELSEWHERE = "<!doctype html><title>Another site</title><p>Nothing to see.</p>"


def test_a_page_of_another_site_cannot_make_the_browser_read_a_keyless_api(
        browser: Browser, tmp_path: Path) -> None:
    """A read changes state (here: the search log, and a read's reinforcement), so a page
    elsewhere, on another host name (cross-site) or another port of this one (same-site),
    is refused even a GET; the dashboard itself and clients that are not browsers are not."""
    lifecycle = {"search_log": True, "reinforce": True, "flush_every": 1}
    app = create_app(new_memory(tmp_path, {"lifecycle": lifecycle}), api_keys={})
    mount_ui(app)
    other = FastAPI()
    other.get("/")(lambda: HTMLResponse(ELSEWHERE))
    with serving(app) as url, serving(other) as there, httpx.Client(base_url=url) as api:
        id = remember(api, "Alice likes green tea", user_id="alice")["id"]  # no Sec-Fetch-*: fine
        search = f"{url}/v1/memories/search/?q=tea&user_id=alice"
        page = browser.page()
        for foreign in (there.replace("127.0.0.1", "localhost"), there):  # cross-, same-site
            page.goto(f"{foreign}/")
            sent = page.evaluate("""async urls => {
                for (const url of urls) await fetch(url, {mode: 'no-cors'});
                return urls.length;
            }""", [search, f"{url}/v1/memories/{id}/", f"{url}/v1/memories/?user_id=alice"])
            assert sent == 3
            with page.expect_navigation() as followed:  # a link there, followed
                page.evaluate("target => { location.href = target; }", search)
            assert followed.value.status == 403
            assert "another site" in page.inner_text("body")
        assert api.get("/v1/searches/", params={"user_id": "alice"}).json() == []
        item = api.get(f"/v1/memories/{id}/", params={"reinforce": False}).json()
        assert item["access_count"] == 0
        typed = page.goto(search)  # typed into the address bar (Sec-Fetch-Site: none)
        assert typed is not None and typed.status == 200
        page.goto(f"{url}/ui/#/memories?q=green")  # the dashboard: same-origin
        page.select_option("#scope", json.dumps({"user_id": "alice"}, separators=(",", ":")))
        expect(page.locator("table.list td.text")).to_have_text(["Alice likes green tea"])
        queries = api.get("/v1/searches/", params={"user_id": "alice"}).json()
        assert len(queries) >= 2  # the typed address's search and the dashboard's
        page.context.close()
