"""The dashboard's journeys in Chromium, as an admin: one browser and one page for the module."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from memkit.server import create_app
from memkit.ui import launch_token, mount_ui
from tests.server.conftest import KEYS, serving
from tests.ui.conftest import Browser, admin, expect, new_memory, remember, shot


@dataclass
class Site:
    url: str
    app: Any
    api: httpx.Client
    ids: dict[str, str]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("ui")
    app = create_app(new_memory(folder), api_keys=dict(KEYS))
    mount_ui(app)
    with serving(app) as url, admin(url) as api:
        ids = {
            "tea": remember(api, "Alice likes green tea", user_id="alice",
                            metadata={"source": "chat", "mood": "calm"}, memory_type="preference",
                            importance=0.8)["id"],
            "bike": remember(api, "Alice rides a red bike to work", user_id="alice",
                             memory_type="fact")["id"],
            "task": remember(api, "Book the dentist", user_id="alice", memory_type="task")["id"],
        }
        for i in range(60):
            remember(api, f"Alice note number {i}", user_id="alice")
        graph = api.post("/v1/memories/", json={"messages": [
            {"role": "user", "content": "Alice works at Acme"},
            {"role": "user", "content": "Acme manages Zeta"}],
                                                "user_id": "alice"})
        assert graph.status_code == 200, graph.text
        # a relation, then closed by deleting its memory (in an add that states a relation)
        for said in ("Alice knows Bob", ["Forget: Alice knows Bob", "Alice lives in Lisbon"]):
            messages = [{"role": "user", "content": line} for line in said] if isinstance(said, list) else said
            added = api.post("/v1/memories/", json={"messages": messages, "user_id": "alice"})
            assert added.status_code == 200, added.text
        assert [r["target"] for r in added.json()["closed_relations"]] == ["Bob"]
        notes = folder / "notes"
        notes.mkdir()
        (notes / "garden.md").write_text("# Garden\n\nThe tomatoes need water on Fridays.\n")
        indexed = api.post("/v1/index/", json={"path": str(notes), "user_id": "alice"})
        assert indexed.status_code == 200, indexed.text
        remember(api, "Bob plays chess", user_id="bob")
        yield Site(url, app, api, ids)


@pytest.fixture(scope="module")
def page(browser: Browser, site: Site) -> Iterator[Any]:
    page = browser.page()
    page.goto(f"{site.url}/ui/#token={launch_token(site.app)}")
    expect(page.locator("#main h1")).to_contain_text("Overview")
    yield page
    page.context.close()  # ends the change feed before the server stops


@pytest.fixture(autouse=True)
def clean(browser: Browser, page: Any) -> Iterator[None]:
    """Every journey ends with no console error, no request beyond 127.0.0.1 and no
    JavaScript null or undefined shown as text."""
    browser.errors.clear()
    yield
    assert browser.errors == []
    assert browser.outside() == []
    assert not re.search(r"\b(null|undefined|NaN)", page.inner_text("#main"))


def test_the_launch_link_works_once_and_leaves_no_key_in_the_url(page: Any, site: Site,
                                                                   browser: Browser) -> None:
    assert "token" not in page.url and page.url.endswith("/ui/#/overview")
    assert page.evaluate("sessionStorage.getItem('memkit.key')") not in (None, "admin-key")
    token = launch_token(site.app)
    other = browser.page()
    other.goto(f"{site.url}/ui/#token={token}")
    expect(other.locator("#main h1")).to_contain_text("Overview")
    again = browser.page()
    again.goto(f"{site.url}/ui/#token={token}")
    expect(again.locator("#login-reason")).to_contain_text("used already")
    assert "token" not in again.url
    browser.errors.clear()  # the refused exchange is a 401 in the console, on purpose
    for p in (other, again):
        p.context.close()


def test_the_overview_draws_its_charts(page: Any) -> None:
    page.goto(page.url.split("#")[0] + "#/overview")
    charts = page.locator("figure.chart")
    expect(charts).to_have_count(5)
    expect(page.locator("figure.chart", has_text="Memories per type")).to_contain_text("preference")
    expect(page.locator(".card.total .big")).not_to_have_text("0")
    shot(page, "overview")


def search(page: Any, query: str) -> Any:
    """Search from the memories view; the first row of the results."""
    page.fill("input[type=search]", query)
    page.press("input[type=search]", "Enter")
    return page.locator("table.list tbody tr").first


def test_search_shows_scores_and_which_half_matched_then_opens_a_memory(page: Any, site: Site) -> None:
    page.click("nav >> text=Memories")
    expect(page.locator("#main h1")).to_contain_text("Memories of user alice")
    expect(page.locator("table.list tbody tr")).to_have_count(50)
    page.click("text=Older →")
    expect(page.locator(".pager")).to_contain_text("51–")
    first = search(page, "green tea")
    expect(first).to_contain_text("Alice likes green tea")
    expect(first.locator("td.matched")).to_contain_text("keyword")
    expect(first.locator("td.matched")).to_contain_text("vector")
    shot(page, "search")
    expect(search(page, "Alice note")).to_contain_text("Alice note number")
    expect(page.locator("table.list tbody tr")).to_have_count(20)
    page.click("text=More →")
    expect(page.locator(".pager")).to_contain_text("results 21–40")
    first = search(page, "green tea")
    expect(first).to_contain_text("Alice likes green tea")
    first.locator("a").click()
    expect(page.locator(".memory-text")).to_have_text("Alice likes green tea")
    expect(page.locator("dl.metadata")).to_contain_text("calm")
    shot(page, "memory")


def test_a_long_memory_is_cut_short_in_lists_and_whole_on_its_page(page: Any, site: Site) -> None:
    text = " ".join(f"word{i}" for i in range(2_000))  # 10,889 characters
    id = remember(site.api, text, user_id="alice")["id"]
    base = page.url.split("#")[0]
    for view, where in (("#/memories", "table.list"), ("#/overview", "ol.feed")):
        page.goto(base + view)
        # .last: on the overview, the newest memories (the recent changes may list it too)
        expect(page.locator(f"{where} a[href='#/memory/{id}']").last).to_have_text(text[:399] + "…")
    page.locator(f"ol.feed a[href='#/memory/{id}']").last.click()
    expect(page.locator(".memory-text")).to_have_text(text)
    assert site.api.delete(f"/v1/memories/{id}/", params={"hard": True}).status_code == 200


def test_filters_narrow_the_list(page: Any, site: Site) -> None:
    page.goto(page.url.split("#")[0] + "#/memories?type=preference")
    expect(page.locator("table.list tbody tr")).to_have_count(1)
    page.goto(page.url.split("#")[0] + "#/memories?meta=mood%3Dcalm")
    expect(page.locator("textarea[name=meta]")).to_have_value("mood=calm")
    expect(page.locator("table.list tbody tr")).to_have_count(1)
    page.goto(page.url.split("#")[0] + "#/memories?min_importance=0.7")
    expect(page.locator("input[name=min_importance]")).to_have_value("0.7")
    expect(page.locator("table.list tbody tr")).to_have_text(re.compile("green tea"))
    page.goto(page.url.split("#")[0] + "#/memories?before=2000-01-01")
    expect(page.locator(".pager")).to_contain_text("No memories")


def test_a_filter_the_api_refuses_is_explained_beside_the_form_to_correct(page: Any,
                                                                          browser: Browser) -> None:
    base = page.url.split("#")[0]
    page.goto(base + "#/memories?meta=importance%3D%7B%22gtx%22%3A1%7D")
    expect(page.locator("#main p.errors")).to_contain_text("unknown operator 'gtx' on field 'importance'")
    page.fill("textarea[name=meta]", "mood=calm")
    page.click("button:text-is('Go')")
    expect(page.locator("table.list tbody tr")).to_have_text([re.compile("green tea")])
    page.goto(base + "#/memory/%E0%A4%A")  # not percent-encoding: read as it is
    expect(page.locator("#main h1")).to_have_text("No such memory")
    browser.errors.clear()  # the refused filter and the unknown id are a 400 and 404s, on purpose


def test_a_metadata_key_named_like_an_object_internal_reaches_the_api(page: Any, site: Site) -> None:
    odd = remember(site.api, "Alice tagged this oddly", user_id="alice",
                   metadata={"__proto__": "x", "constructor": "y"})["id"]
    try:
        for line in ("__proto__=x", "constructor=y"):
            page.goto(page.url.split("#")[0] + "#/memories")
            expect(page.locator("table.list tbody tr")).to_have_count(50)  # this view's form
            page.fill("textarea[name=meta]", line)
            page.click("button:text-is('Go')")
            expect(page.locator("table.list tbody tr")).to_have_text([re.compile("tagged this oddly")])
    finally:
        assert site.api.delete(f"/v1/memories/{odd}/", params={"hard": True}).status_code == 200


def test_a_field_that_is_not_a_number_or_a_date_is_named_with_its_value(page: Any) -> None:
    base = page.url.split("#")[0]
    for address, said in (("min_importance=abc", 'min_importance must be a number, got "abc"'),
                          ("min_importance=Infinity", 'min_importance must be a number, got "Infinity"'),
                          ("after=someday", 'after must be a date (YYYY-MM-DD), got "someday"')):
        page.goto(f"{base}#/memories?{address}")
        expect(page.locator("#main p.errors")).to_have_text(said)
    page.goto(f"{base}#/memories?min_importance=0.7")
    expect(page.locator("table.list tbody tr")).to_have_text([re.compile("green tea")])


def open_memory(page: Any, id: str, text: str) -> None:
    page.goto(page.url.split("#")[0] + f"#/memory/{id}")
    expect(page.locator(".memory-text")).to_have_text(text)
    expect(page.locator("dl.facts").first).to_contain_text(id)


def test_edit_makes_a_new_version_and_revert_undoes_it(page: Any, site: Site) -> None:
    open_memory(page, site.ids["bike"], "Alice rides a red bike to work")
    page.click("button:text-is('Edit')")
    page.fill("textarea[aria-label='New text']", "Alice rides a blue bike to work")
    page.click("button:text-is('Save')")
    expect(page.locator(".memory-text")).to_have_text("Alice rides a blue bike to work")
    expect(page.locator("ol.timeline li")).to_have_count(2)
    expect(page.locator("ol.timeline li").last.locator("del")).to_have_text("red")
    expect(page.locator("ol.timeline li").last.locator("ins")).to_have_text("blue")
    expect(page.locator("table.history tbody tr")).to_have_count(2)
    shot(page, "versions")
    update = page.locator("table.history tbody tr", has_text="UPDATE")
    update.locator("button").click()
    update.locator("button").click()  # the second click confirms
    expect(page.locator(".memory-text")).to_have_text("Alice rides a red bike to work")
    expect(page.locator("table.history tbody tr")).to_have_count(3)
    expect(page.locator("#status")).to_contain_text("Reverted")


def refused_saves(browser: Browser) -> int:
    """How many 412s the console shows (a refused save, on purpose), clearing them."""
    refused = [e for e in browser.errors if "412 (Precondition Failed)" in e]
    browser.errors[:] = [e for e in browser.errors if e not in refused]
    return len(refused)


def test_an_edit_never_overwrites_a_change_made_meanwhile(page: Any, site: Site,
                                                          browser: Browser) -> None:
    id = remember(site.api, "Alice drinks her coffee black", user_id="alice")["id"]
    open_memory(page, id, "Alice drinks her coffee black")
    expect(page.locator("#live")).to_have_text("live")
    page.click("button:text-is('Edit')")
    page.fill("textarea[aria-label='New text']", "Alice drinks her coffee with milk")
    page.locator(".memory-text").click()  # the editor stays open with the focus elsewhere
    changed = site.api.put(f"/v1/memories/{id}/", json={"text": "Alice drinks her coffee with sugar"})
    assert changed.status_code == 200, changed.text
    expect(page.locator("#stale")).to_be_visible()  # offered, not redrawn under the editor
    expect(page.locator("textarea[aria-label='New text']")).to_have_value("Alice drinks her coffee with milk")
    page.click("button:text-is('Save')")
    expect(page.locator("#status")).to_contain_text("Not saved: this memory changed elsewhere")
    assert refused_saves(browser) == 1
    assert site.api.get(f"/v1/memories/{id}/").json()["memory"] == "Alice drinks her coffee with sugar"
    page.click("#stale-refresh")
    expect(page.locator(".memory-text")).to_have_text("Alice drinks her coffee with sugar")
    expect(page.locator("#stale")).to_be_hidden()


def test_a_change_landing_while_save_is_on_its_way_is_not_overwritten(page: Any, site: Site,
                                                                     browser: Browser) -> None:
    id = remember(site.api, "Alice walks to work", user_id="alice")["id"]
    open_memory(page, id, "Alice walks to work")
    page.click("button:text-is('Edit')")
    page.fill("textarea[aria-label='New text']", "Alice cycles to work")
    sent: list[str | None] = []

    def meanwhile(route: Any) -> None:  # the other change commits just before the page's PUT
        if route.request.method == "PUT":
            sent.append(route.request.headers.get("if-match"))
            changed = site.api.put(f"/v1/memories/{id}/", json={"text": "Alice drives to work"})
            assert changed.status_code == 200, changed.text
        route.continue_()

    page.route(f"**/v1/memories/{id}/", meanwhile)
    try:
        page.click("button:text-is('Save')")
        expect(page.locator("#status")).to_contain_text("Not saved: this memory changed elsewhere")
    finally:
        page.unroute(f"**/v1/memories/{id}/", meanwhile)
    assert len(sent) == 1 and sent[0] and refused_saves(browser) == 1
    expect(page.locator("#stale")).to_be_visible()
    expect(page.locator("textarea[aria-label='New text']")).to_have_value("Alice cycles to work")
    assert site.api.get(f"/v1/memories/{id}/").json()["memory"] == "Alice drives to work"
    assert [h["event"] for h in site.api.get(f"/v1/memories/{id}/history/").json()] == [
        "ADD", "UPDATE"]
    page.click("#stale-refresh")
    expect(page.locator(".memory-text")).to_have_text("Alice drives to work")


def test_feedback_is_acknowledged(page: Any, site: Site) -> None:
    open_memory(page, site.ids["tea"], "Alice likes green tea")
    page.click("button:text-is('Useful')")
    expect(page.locator("#status")).to_contain_text("Marked useful")


def test_delete_then_purge(page: Any, site: Site) -> None:
    doomed = remember(site.api, "Alice once owned a kite", user_id="alice")["id"]
    open_memory(page, doomed, "Alice once owned a kite")
    page.click("button:text-is('Delete')")
    page.click("button:text-is('Delete it?')")
    expect(page.locator("#main h1")).to_have_text("Memory (no longer valid)")
    expect(page.locator("table.history")).to_contain_text("DELETE")
    assert site.api.get(f"/v1/memories/{doomed}/").status_code == 404
    page.click("button:text-is('Purge')")
    expect(page.locator(".actions .warning")).to_have_text(
        "Purging removes this memory for good: its only version (none is current now) and its "
        "history (only a PURGE row without text stays for each version).")
    page.click("button:text-is('Purge all of it for good?')")
    expect(page.locator("#status")).to_contain_text("Purged")
    expect(page.locator("#main h1")).to_contain_text("Memories of")
    assert site.api.get(f"/v1/memories/{doomed}/versions/").status_code == 404


def test_purging_from_a_past_version_says_the_whole_memory_goes(page: Any, site: Site,
                                                                browser: Browser) -> None:
    id = remember(site.api, "Alice reads one book a month", user_id="alice")["id"]
    for text in ("Alice reads two books a month", "Alice reads three books a month"):
        assert site.api.put(f"/v1/memories/{id}/", json={"text": text}).status_code == 200
    oldest = site.api.get(f"/v1/memories/{id}/versions/").json()[0]["id"]
    open_memory(page, oldest, "Alice reads one book a month")
    expect(page.locator("#main h1")).to_have_text("A past version")
    expect(page.locator("dl.facts").first).to_contain_text(oldest)  # this version, not the current
    page.click("button:text-is('Purge')")
    expect(page.locator(".actions .warning")).to_have_text(
        "Purging removes the whole memory for good, not only this past version: its current "
        "text “Alice reads three books a month”, all 2 of its past versions and its history "
        "(only a PURGE row without text stays for each version).")
    page.locator("#main h1").click()  # the focus elsewhere: not confirmed, nothing said
    expect(page.locator(".actions .warning")).to_have_count(0)
    expect(page.locator("button:text-is('Purge')")).to_be_visible()
    page.click("button:text-is('Purge')")
    page.click("button:text-is('Purge all of it for good?')")
    expect(page.locator("#status")).to_contain_text("Purged")
    assert site.api.get(f"/v1/memories/{id}/versions/").status_code == 404
    assert [r["event"] for r in site.api.get(f"/v1/memories/{id}/history/").json()] == ["PURGE"]
    browser.errors.clear()  # a past version has no history of its own: a 404, on purpose


def test_the_graph_clicks_through_to_a_neighbour_and_its_memories(page: Any, site: Site) -> None:
    page.goto(page.url.split("#")[0] + "#/graph?entity=Alice")
    expect(page.locator("svg.graph .node")).to_have_count(4)  # Acme, Lisbon; Bob (closed)
    expect(page.locator("svg.graph .edge.closed")).to_have_count(1)
    expect(page.locator("svg.graph .edge.closed title")).to_have_text("Alice KNOWS Bob (closed)")
    expect(page.locator(".side .relations li.closed")).to_contain_text("Bob")
    page.select_option("select[aria-label=Depth]", "2")
    expect(page.locator("svg.graph .node")).to_have_count(5)
    shot(page, "graph")
    page.locator("svg.graph .node[data-name=Acme]").click()
    expect(page.locator(".side h2")).to_have_text("Acme")
    expect(page.locator(".side")).to_contain_text("Zeta")
    page.locator(".side").get_by_role("link", name="Zeta", exact=True).click()
    expect(page.locator("svg.graph .node.center")).to_have_attribute("data-name", "Zeta")
    page.locator(".side a", has_text="Acme manages Zeta").click()
    expect(page.locator(".memory-text")).to_have_text("Acme manages Zeta")


def test_a_task_changes_status(page: Any, site: Site) -> None:
    page.goto(page.url.split("#")[0] + "#/tasks")
    lane = page.locator("section.lane[aria-label=open]")
    expect(lane).to_contain_text("Book the dentist")
    lane.locator("select").select_option("done")
    expect(page.locator("section.lane[aria-label=done]")).to_contain_text("Book the dentist")
    shot(page, "tasks")
    task = site.api.get(f"/v1/memories/{site.ids['task']}/").json()
    assert task["metadata"]["status"] == "done"


def test_notes_show_their_file_and_line(page: Any) -> None:
    page.goto(page.url.split("#")[0] + "#/notes")
    expect(page.locator(".note-file h2")).to_have_text(re.compile(r"/notes/garden\.md$"))
    expect(page.locator(".note-file .where")).to_have_text(re.compile(r"garden\.md:1"))


def test_the_playground_dry_run_stores_nothing_until_applied(page: Any, site: Site) -> None:
    page.goto(page.url.split("#")[0] + "#/playground")
    page.fill("textarea[aria-label=Conversation]",
              "user: Alice is learning Portuguese\nassistant: Boa sorte!")
    page.click("button:text-is('Dry run')")
    expect(page.locator(".outcome h2")).to_contain_text("Dry run")
    expect(page.locator(".outcome")).to_contain_text("Alice is learning Portuguese")
    shot(page, "playground")
    found = site.api.get("/v1/memories/", params={
        "user_id": "alice", "filters": '{"memory": {"icontains": "portuguese"}}'}).json()
    assert found["results"] == []
    page.click("button:text-is('Apply')")
    expect(page.locator(".outcome h2")).to_have_text("Applied")
    page.locator(".outcome a", has_text="Portuguese").click()
    expect(page.locator(".memory-text")).to_have_text("Alice is learning Portuguese")


def test_a_change_from_another_client_appears_without_a_reload(page: Any, site: Site) -> None:
    page.goto(page.url.split("#")[0] + "#/overview")
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.__sameDocument = true")
    remember(site.api, "Alice adopted a cat named Miso", user_id="alice")
    expect(page.locator("ol.feed").first).to_contain_text("Alice adopted a cat named Miso")
    assert site.api.post("/v1/entities/", json={"name": "Miso", "type": "cat",
                                                 "user_id": "alice"}).status_code == 200
    expect(page.locator("ol.feed a", has_text=re.compile(r"^Miso$"))).to_have_attribute(
        "href", "#/graph?entity=Miso")  # an entity, not a memory
    assert page.evaluate("window.__sameDocument") is True


def test_the_main_views_work_from_the_keyboard(page: Any) -> None:
    page.goto(page.url.split("#")[0] + "#/overview")
    page.reload()
    expect(page.locator("#main h1")).to_contain_text("Overview")
    page.keyboard.press("Tab")
    expect(page.locator(".skip")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()
    assert page.url.endswith("#/overview")
    page.reload()
    expect(page.locator("#main h1")).to_contain_text("Overview")
    for _ in range(3):
        page.keyboard.press("Tab")
    expect(page.locator("nav a[data-view=memories]")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#main h1")).to_be_focused()
    expect(page.locator("#main h1")).to_contain_text("Memories")
    page.locator("input[type=search]").focus()
    page.keyboard.type("green tea")
    page.keyboard.press("Enter")
    expect(page.locator("table.list tbody tr").first).to_contain_text("green tea")
    expect(page.locator("#main h1")).to_be_focused()
    for _ in range(20):  # on from the heading to the first result's link
        if page.evaluate("document.activeElement.closest('tbody') !== null"):
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator(".memory-text")).to_have_text("Alice likes green tea")
    page.goto(page.url.split("#")[0] + "#/graph?entity=Alice")
    node = page.locator("svg.graph .node[data-name=Acme]")
    node.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".side h2")).to_have_text("Acme")
