"""The console's pages for finding things (issue 27), in real headless Chromium on the
real API, real celery workers running the turns (tests/browser.py):

- a turn's waterfall: every step, the wait and the attempts over time, a takeover
  marked where a second worker took the lease from a killed one, and the work lost;
  checked in the DOM (each bar's geometry against the API's timeline) and in the
  screenshot's pixels (each bar's fill where the timeline puts it, not beside it);
- a session's turns on a timeline;
- the inbox: open requests across three sessions, answerable from the page, another
  tenant's never shown;
- the search page: metadata and state across pages, another tenant's never shown, a
  bad filter shown as its problem.

Screenshots go to test-output/console/.
"""

from __future__ import annotations

import itertools
import signal
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser import chromium, output_dir
from tests.integration.api_server import Api, admit, serve_api
from tests.integration.test_console import SECRET, SLOW, VIEWPORT, _refused, _says, _sign_in, _watch
from tests.pixels import decode, hex_rgb, near
from tests.procs import wait_for

#: the bars' geometry as the page drew it (waterfall.js puts it in the DOM)
GEOMETRY = """(id) => {
  const svg = document.querySelector(`[data-testid="${id}"]`);
  const bars = [...svg.querySelectorAll('[data-testid="wf-bar"]')].map((r) => {
    const row = r.closest("g");
    return {
      kind: r.dataset.kind, fill: r.getAttribute("fill"),
      x: +r.getAttribute("x"), y: +r.getAttribute("y"),
      width: +r.getAttribute("width"), height: +r.getAttribute("height"),
      startMs: +r.dataset.startMs, endMs: +r.dataset.endMs,
      step: row.dataset.step ?? null, request: row.dataset.requestId ?? null,
      attempt: row.dataset.attempt ?? null, turn: row.dataset.turnId ?? null,
    };
  });
  const markers = [...svg.querySelectorAll('[data-testid="wf-marker"]')].map((m) => ({
    x: +m.getAttribute("x1"), atMs: +m.dataset.atMs,
  }));
  return {
    x0: +svg.dataset.x0, width: +svg.dataset.width, t0: svg.dataset.t0,
    span: +svg.dataset.spanMs, bars, markers,
  };
}"""


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the workers' broker and agents; a stream token secret, so the pages go live
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        stream_token_secret=SECRET,
    ) as handle:
        yield handle


def _ms(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp() * 1000


def _state(c: httpx.Client, sid: str, tid: str) -> str:
    return str(c.get(f"/v1/sessions/{sid}/turns/{tid}").json()["state"])


def _expected_bars(timeline: dict[str, Any]) -> list[tuple[str, str | None, float, float]]:
    """(kind, step or request id, start, end) of each bar, in ms since the turn's
    admission, from the API's timeline alone."""
    t0 = _ms(timeline["turn"]["created_at"])
    attempts = timeline["attempts"]
    bars = [("queued", None, 0.0, _ms(attempts[0]["started_at"]) - t0)]
    for s in timeline["steps"]:
        bars.append(
            (s["kind"], str(s["step"]), _ms(s["started_at"]) - t0, _ms(s["committed_at"]) - t0)
        )
    for w in timeline["waits"]:
        bars.append(
            ("wait", w["request_id"], _ms(w["requested_at"]) - t0, _ms(w["resolved_at"]) - t0)
        )
    for before, a in itertools.pairwise(attempts):
        if a["kind"] == "takeover":
            bars.append(
                (
                    "lost",
                    str(before["attempt"]),
                    _ms(before["ended_at"]) - t0,
                    _ms(a["started_at"]) - t0,
                )
            )
    return bars


def test_the_waterfall_draws_each_step_wait_and_takeover_where_the_timeline_says(
    api: Api, procs: Any, sid: str
) -> None:
    shots = output_dir("console")
    c = api.client()
    procs.beat()  # its scan hands the killed worker's session to the next one
    slow = {"TURNKEEP_TEST_TOOL_SLEEP": "0.6"}
    victim = procs.worker({**slow, "TURNKEEP_FAULTS": "before_tool_effect=kill-once"})
    r = admit(c, sid, "move", agent="banker", text="Move 7, please.")
    assert r.status_code == 202, r.text
    wait_for(lambda: _state(c, sid, "move") == "waiting", 60, what="the approval asked")
    rid = c.get(f"/v1/sessions/{sid}/turns/move").json()["pending_input"]["request_id"]
    answered = c.post(f"/v1/sessions/{sid}/turns/move/inputs/{rid}", json={"approved": True})
    assert answered.status_code == 200, answered.text
    # the worker that resumes the turn dies before the transfer: a second one takes over
    wait_for(lambda: victim.popen.poll() == -signal.SIGKILL, 60, what="the worker killed")
    procs.worker(slow)
    wait_for(lambda: _state(c, sid, "move") == "completed", 90, what="the turn completed")
    timeline = c.get(f"/v1/sessions/{sid}/turns/move/timeline").json()
    assert [a["kind"] for a in timeline["attempts"]] == ["start", "resume", "takeover"]
    assert [(s["kind"], s["name"]) for s in timeline["steps"]][1] == ("tool", "transfer")
    expected = _expected_bars(timeline)

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.goto(f"{api.url}/console#/sessions/{sid}/turns/move")
        with _says(api, sid, "move"):
            expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        svg = page.get_by_test_id("waterfall")
        expect(svg.locator('[data-testid="wf-bar"]')).to_have_count(len(expected))
        expect(page.get_by_test_id("wf-marker")).to_have_count(1)
        expect(page.get_by_test_id("wf-legend")).to_contain_text("lost to a takeover")
        geometry = page.evaluate(GEOMETRY, "waterfall")
        svg.scroll_into_view_if_needed()
        image = decode(svg.screenshot())
        page.screenshot(path=shots / "waterfall.png", full_page=True)
        assert seen == [], seen

    x0, width, span = geometry["x0"], geometry["width"], geometry["span"]
    assert abs(_ms(geometry["t0"]) - _ms(timeline["turn"]["created_at"])) < 1

    def x_of(ms: float) -> int:
        return round(x0 + min(max(ms, 0.0), span) / span * width)

    drawn = {(b["kind"], b["step"] or b["request"] or b["attempt"]): b for b in geometry["bars"]}
    for kind, key, start, end in expected:
        bar = drawn[(kind, key)] if kind != "queued" else drawn[("queued", None)]
        # in the DOM: where the timeline says, in ms and in pixels
        assert abs(bar["startMs"] - start) <= 1 and abs(bar["endMs"] - end) <= 1, (kind, key, bar)
        assert abs(bar["x"] - x_of(start)) <= 1, (kind, key, bar, x_of(start))
        assert abs(bar["x"] + bar["width"] - max(x_of(end), x_of(start) + 3)) <= 1, (kind, key)
        # in the pixels: the bar's fill across its middle, and not just before it
        fill, mid_y = hex_rgb(bar["fill"]), int(bar["y"] + bar["height"] / 2)
        for px in {bar["x"] + 1, bar["x"] + bar["width"] // 2, bar["x"] + bar["width"] - 2}:
            got = image.rgb(int(px), mid_y)
            assert near(got, fill), (kind, key, px, mid_y, got, bar["fill"])
        if bar["x"] - 3 > x0 + 1:
            assert not near(image.rgb(int(bar["x"]) - 3, mid_y), fill), (kind, key, "before")
    # the takeover: marked where the second run started, in the DOM and in red pixels
    (marker,) = geometry["markers"]
    takeover = _ms(timeline["attempts"][2]["started_at"]) - _ms(timeline["turn"]["created_at"])
    assert abs(marker["x"] - x_of(takeover)) <= 1 and abs(marker["atMs"] - takeover) <= 1
    # (the lost work's bar ends there, as red: its rows are left out)
    red, lost = hex_rgb("#b42318"), drawn[("lost", "1")]
    rows = [
        y
        for y in range(30, image.height - 20)
        if not lost["y"] - 2 <= y <= lost["y"] + lost["height"] + 2
    ]
    column = max(
        sum(near(image.rgb(int(marker["x"]) + dx, y), red, 40) for y in rows) for dx in (-1, 0)
    )
    assert column >= 10, "no takeover line drawn"


def test_a_sessions_turns_show_on_a_timeline(api: Api, sid: str) -> None:
    c = api.client()
    for tid in ("one", "two", "three"):
        assert admit(c, sid, tid, agent="counter", text="steps=1").status_code == 202
    assert c.post(f"/v1/sessions/{sid}/turns/one/cancel").status_code in (200, 202)
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.goto(f"{api.url}/console#/sessions/{sid}")
        rows = page.locator('[data-testid="session-timeline"] [data-testid="turn-bar-row"]')
        expect(rows).to_have_count(3)
        states = [rows.nth(i).get_attribute("data-state") for i in range(3)]
        ids = [rows.nth(i).get_attribute("data-turn-id") for i in range(3)]
        assert ids == ["one", "two", "three"] and states == ["cancelled", "queued", "queued"]
        geometry = page.evaluate(GEOMETRY, "session-timeline")
        assert [b["turn"] for b in geometry["bars"]] == ids
        # each starts where its turn was admitted: in admission order, left to right
        assert [b["startMs"] for b in geometry["bars"]] == sorted(
            b["startMs"] for b in geometry["bars"]
        )
        rows.nth(0).locator("rect").click()
        expect(page.get_by_test_id("turn-state")).to_have_text("cancelled")
        assert seen == [], seen


def test_the_inbox_lists_open_requests_across_sessions_and_answers_them(
    api: Api, procs: Any
) -> None:
    shots = output_dir("console")
    procs.worker()
    a, b = api.client(), api.client("b")
    mine = [f"ib-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    theirs = f"ib-b-{uuid.uuid4().hex[:8]}"
    for sid in mine:
        assert admit(a, sid, "pay", agent="payer", text="Pay the invoice.").status_code == 202
    assert admit(b, theirs, "pay", agent="payer", text="Pay theirs.").status_code == 202
    for client, sid in [*((a, s) for s in mine), (b, theirs)]:
        wait_for(lambda c=client, s=sid: _state(c, s, "pay") == "waiting", 60, what=f"{sid} asks")
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.get_by_test_id("nav-inbox").click()
        items = page.get_by_test_id("inbox-item")
        expect(page.get_by_test_id("inbox")).to_have_attribute("data-loaded", "true")
        listed = {items.nth(i).get_attribute("data-session-id") for i in range(items.count())}
        assert set(mine) <= listed and theirs not in listed, listed
        first = page.locator(f'[data-testid="inbox-item"][data-session-id="{mine[0]}"]')
        expect(first.get_by_test_id("pending-kind")).to_have_text("approval")
        expect(first.get_by_test_id("pending-arguments")).to_contain_text('"amount": 9')
        page.screenshot(path=shots / "inbox.png", full_page=True)
        # answered from the inbox: the turn goes on, and leaves the list
        first.get_by_test_id("approve").click()
        expect(first).to_have_count(0)
        wait_for(lambda: _state(a, mine[0], "pay") == "completed", 60, what="the approved turn ran")
        for sid in mine[1:]:
            expect(
                page.locator(f'[data-testid="inbox-item"][data-session-id="{sid}"]')
            ).to_have_count(1)
        # another tenant's token sees its own request, none of tenant a's
        page.get_by_test_id("sign-out").click()
        _sign_in(page, api.token_b)
        page.goto(f"{api.url}/console#/inbox")
        expect(page.get_by_test_id("inbox")).to_have_attribute("data-loaded", "true")
        expect(
            page.locator(f'[data-testid="inbox-item"][data-session-id="{theirs}"]')
        ).to_have_count(1)
        for sid in mine:
            expect(
                page.locator(f'[data-testid="inbox-item"][data-session-id="{sid}"]')
            ).to_have_count(0)
        assert seen == [], seen


def test_the_search_page_finds_by_metadata_and_state_across_pages(api: Api) -> None:
    shots = output_dir("console")
    a, b = api.client(), api.client("b")
    tag = uuid.uuid4().hex[:8]
    # 27 of alice's turns carry the tag (more than the page's 25), 9 of them in sessions
    # labelled red; bob's carry it too
    expected = set()
    for i in range(27):
        sid = f"sr-{tag}-{i:02d}"
        extra = {"session_metadata": {"team": "red", "tag": tag}} if i % 3 == 0 else {}
        r = admit(a, sid, "t1", agent="counter", metadata={"case": tag, "n": str(i)}, **extra)
        assert r.status_code == 202, r.text
        expected.add(sid)
    assert admit(b, f"sr-b-{tag}", "t1", agent="counter", metadata={"case": tag}).status_code == 202
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.get_by_test_id("nav-search").click()
        page.get_by_test_id("search-metadata").fill(f"case={tag}")
        page.get_by_test_id("search-state-queued").check()
        page.get_by_test_id("search-submit").click()
        results = page.locator('[data-testid="search-results"]')
        expect(results).to_have_attribute("data-loaded", "true")
        rows = page.get_by_test_id("result-row")
        expect(rows).to_have_count(25)
        expect(page.get_by_test_id("search-count")).to_have_text("25+ found")
        assert "state=queued" in page.url and f"metadata=case%3D{tag}" in page.url
        page.get_by_test_id("search-more").click()
        expect(rows).to_have_count(27)
        expect(page.get_by_test_id("search-more")).to_be_hidden()
        found = {rows.nth(i).get_attribute("data-session-id") for i in range(27)}
        assert found == expected
        page.screenshot(path=shots / "search.png", full_page=True)
        # sessions by their labels, bookmarked in the address
        page.goto(
            f"{api.url}/console#/search?kind=sessions&metadata=tag%3D{tag}&metadata=team%3Dred"
        )
        expect(page.get_by_test_id("result-row")).to_have_count(9)
        expect(page.get_by_test_id("search-metadata")).to_have_value(f"tag={tag}\nteam=red")
        # a filter the API refuses is shown as its problem, not as no results
        page.get_by_test_id("search-metadata").fill("no equals sign")
        page.get_by_test_id("search-submit").click()
        expect(page.get_by_test_id("error-text")).to_contain_text("validation_error")
        assert _refused(seen, 422) == [], seen
