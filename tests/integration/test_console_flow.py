"""The console's flow control (docs/flow-control.md, docs/console.md) as a person sees
it, in real headless Chromium (tests/browser.py) on the real API and a real worker.

A turn whose model call waits for a provider rate limit's slot (a local provider on
the OpenAI wire, tests/ratelimited_server.py, under a declared limit of one call every
10 s): its page says it is paced, until when and by which limit, and the journal's
``turn.paced`` row says so too; the API's turn JSON carries the same ``paced``; once
the slot came the page shows it completed and paced no more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import chromium, output_dir
from tests.integration.api_server import Api, serve_api
from tests.integration.test_console import (
    SLOW,
    VIEWPORT,
    _refused,
    _says,
    _sign_in,
    _submit,
    _watch,
)
from tests.procs import wait_for
from tests.ratelimited_server import serve

#: one call every 10 s
LIMITS = json.dumps([{"provider": "openai", "model": "paced-model", "requests_per_minute": 6}])


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        stream_token_secret="console-flow-stream-secret",
    ) as handle:
        yield handle


def _state(api: Api, sid: str, tid: str) -> dict[str, Any]:
    body: dict[str, Any] = api.client().get(f"/v1/sessions/{sid}/turns/{tid}").json()
    return body


def test_console_shows_a_turn_paced_by_a_rate_limit(api: Api, procs: Any, sid: str) -> None:
    shots = output_dir("console")
    with serve(requests=100, tokens=1_000_000, window=60.0) as provider:
        procs.worker(
            {
                "TURNKEEP_OPENAI_BASE_URL": provider.base,
                "TURNKEEP_OPENAI_API_KEY": "sk-test-console-flow",
                "TURNKEEP_RATE_LIMITS": LIMITS,
            }
        )
        # another session's call takes the slot; this one's comes 10 s later
        first = _submit(api, f"{sid}-first", "first", agent="paced")
        wait_for(
            lambda: _state(api, f"{sid}-first", first)["state"] == "completed",
            60,
            what="the first call answered",
        )
        tid = _submit(api, sid, "then me", agent="paced")
        paced = wait_for(lambda: _state(api, sid, tid).get("paced"), 30, what="the turn paced")
        assert isinstance(paced, dict)
        assert (paced["limit"], paced["reason"], paced["step"]) == (
            "openai/paced-model",
            "requests",
            1,
        )
        assert datetime.fromisoformat(paced["until"]) > datetime.now(UTC)
        assert _state(api, sid, tid)["state"] == "running"

        with chromium() as browser:
            page = browser.new_page(viewport=VIEWPORT)
            seen = _watch(page)
            page.goto(f"{api.url}/console")
            _sign_in(page, api.token_a)
            page.goto(f"{api.url}/console#/sessions/{sid}/turns/{tid}")
            shown = page.get_by_test_id("turn-paced")
            expect(shown).to_contain_text("by rate limit openai/paced-model (requests)")
            expect(page.get_by_test_id("turn-state")).to_have_text("running")
            row = page.locator('[data-testid="event-row"][data-type="turn.paced"]')
            expect(row).to_contain_text("openai/paced-model")
            page.screenshot(path=shots / "paced-turn.png")

            with _says(api, sid, tid):
                expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
            expect(shown).to_have_count(0)
            expect(page.get_by_test_id("turn-result-text")).to_contain_text("paced")
            assert seen == [], seen
        assert "paced" not in _state(api, sid, tid)
        assert [s.served for s in provider.asked("then me")] == [True]


def test_console_lists_pauses_resumes_and_deletes_schedules(api: Api, procs: Any, sid: str) -> None:
    """The schedules page: a cron schedule made over the API and a turn's follow-up
    (with the turn it came from); Pause and Resume on the page change the schedule the
    API keeps, Delete (pressed twice) cancels the follow-up; another tenant sees none."""
    shots = output_dir("console")
    procs.worker()
    every = f"nightly-{sid}"
    made = api.client().post(
        "/v1/schedules",
        json={
            "schedule_id": every,
            "agent": "counter",
            "input": [{"role": "user", "content": "steps=1"}],
            "cron": "0 3 * * *",
            "timezone": "Europe/Lisbon",
        },
    )
    assert made.status_code == 201, made.text
    tid = _submit(api, sid, "later:3600:is the build green?", agent="reminder")
    wait_for(lambda: _state(api, sid, tid)["state"] == "completed", 60, what="the turn completed")
    listed = api.client().get("/v1/schedules?limit=100").json()["schedules"]
    [followup] = [s for s in listed if (s.get("origin") or {}).get("turn_id") == tid]
    assert followup["at"] == followup["next_at"] and followup["cron"] is None

    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.get_by_test_id("nav-schedules").click()
        expect(page.get_by_test_id("schedules")).to_have_attribute("data-loaded", "true")
        nightly = page.locator(f'[data-testid="schedule-row"][data-schedule-id="{every}"]')
        expect(nightly).to_contain_text("0 3 * * * (Europe/Lisbon)")
        expect(nightly.get_by_test_id("schedule-state")).to_have_text("active")
        later = page.locator(
            f'[data-testid="schedule-row"][data-schedule-id="{followup["schedule_id"]}"]'
        )
        expect(later).to_contain_text("once at ")
        expect(later.get_by_test_id("schedule-origin")).to_have_text(f"turn {tid}, step 2")
        page.screenshot(path=shots / "schedules.png")

        nightly.get_by_test_id("schedule-pause").click()
        expect(nightly.get_by_test_id("schedule-state")).to_have_text("paused")
        assert api.client().get(f"/v1/schedules/{every}").json()["paused"] is True
        nightly.get_by_test_id("schedule-resume").click()
        expect(nightly.get_by_test_id("schedule-state")).to_have_text("active")
        assert api.client().get(f"/v1/schedules/{every}").json()["paused"] is False

        # the follow-up's origin opens the turn that asked for it; back to the list
        later.get_by_test_id("schedule-origin").click()
        expect(page.get_by_test_id("turn-view")).to_contain_text(tid)
        page.go_back()
        expect(page.get_by_test_id("schedules")).to_have_attribute("data-loaded", "true")
        remove = later.get_by_test_id("schedule-delete")
        remove.click()
        expect(remove).to_have_text("Confirm delete")
        assert api.client().get(f"/v1/schedules/{followup['schedule_id']}").status_code == 200
        remove.click()
        expect(later).to_have_count(0)
        gone = api.client().get(f"/v1/schedules/{followup['schedule_id']}")
        assert gone.status_code == 404

        expect(nightly.get_by_test_id("schedule-origin")).to_have_count(0)  # the API's: none
        assert seen == [], seen

        page.get_by_test_id("sign-out").click()
        _sign_in(page, api.token_b)
        page.get_by_test_id("nav-schedules").click()
        expect(page.get_by_test_id("schedules")).to_have_attribute("data-loaded", "true")
        expect(page.get_by_test_id("schedule-row")).to_have_count(0)
        expect(page.get_by_test_id("schedules")).to_contain_text("No schedules.")


def _limits(api: Api, who: str = "a") -> dict[str, Any]:
    r = api.client(who).get("/v1/limits")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_console_sets_and_clears_the_tenants_limit(api: Api) -> None:
    """The limits page (#/limits): an admin sets the tenant's max_running and clears it,
    the API keeping what the page shows; a value out of bounds and a token that lost
    its admin role are refused and shown as problems, changing nothing; a member sees
    it read only, another tenant sees its own (none)."""
    shots = output_dir("console")
    admin, member = api.more["a-admin"], api.more["a-member"]
    try:
        with chromium() as browser:
            page = browser.new_page(viewport=VIEWPORT)
            seen = _watch(page)
            page.goto(f"{api.url}/console")
            _sign_in(page, admin)
            page.get_by_test_id("nav-limits").click()
            expect(page.get_by_test_id("limits")).to_have_attribute("data-loaded", "true")
            expect(page.get_by_test_id("nav-limits")).to_have_attribute("aria-current", "page")
            expect(page.get_by_test_id("limits-declared")).to_have_text("none")
            expect(page.get_by_test_id("limits-effective")).to_have_text("no limit")
            expect(page.get_by_test_id("limits-updated-by")).to_have_text("—")
            expect(page.get_by_test_id("limits-clear")).to_be_disabled()

            # out of bounds: the API's validation problem, nothing declared
            page.get_by_test_id("limits-input").fill("0")
            page.get_by_test_id("limits-set").click()
            expect(page.get_by_test_id("error-text")).to_contain_text("validation_error")
            expect(page.get_by_test_id("error-text")).to_contain_text("max_running")
            assert _limits(api)["max_running"] is None

            page.get_by_test_id("limits-input").fill("3")
            page.get_by_test_id("limits-set").click()
            expect(page.get_by_test_id("limits-declared")).to_have_text("3")
            expect(page.get_by_test_id("error")).to_be_hidden()
            expect(page.get_by_test_id("limits-effective")).to_have_text("3")
            expect(page.get_by_test_id("limits-updated-by")).to_have_text("erin")
            expect(page.get_by_test_id("limits-updated-at")).not_to_have_text("—")
            declared = _limits(api)
            assert (declared["max_running"], declared["effective_max_running"]) == (3, 3)
            assert (declared["updated_by"], declared["may_declare"]) == ("erin", False)
            assert _limits(api, "a-admin")["may_declare"] is True
            page.screenshot(path=shots / "limits.png")

            # the page was opened by an admin; its token is now one whose role may not
            # declare (an operator lowered it): Clear is refused, shown as the problem
            page.evaluate("t => sessionStorage.setItem('turnkeep.console.token', t)", member)
            page.get_by_test_id("limits-clear").click()
            expect(page.get_by_test_id("error-text")).to_have_text(
                "forbidden_role: only a tenant's admin may do this"
            )
            expect(page.get_by_test_id("limits-declared")).to_have_text("3")
            assert _limits(api)["max_running"] == 3

            # a member: the same figures, read only
            page.get_by_test_id("sign-out").click()
            _sign_in(page, member)
            page.get_by_test_id("nav-limits").click()
            expect(page.get_by_test_id("limits")).to_have_attribute("data-loaded", "true")
            expect(page.get_by_test_id("limits-declared")).to_have_text("3")
            expect(page.get_by_test_id("limits-updated-by")).to_have_text("erin")
            expect(page.get_by_test_id("limits-read-only")).to_be_visible()
            expect(page.get_by_test_id("limits-form")).to_have_count(0)
            page.screenshot(path=shots / "limits-read-only.png")

            # another tenant: its own, none
            page.get_by_test_id("sign-out").click()
            _sign_in(page, api.token_b)
            page.get_by_test_id("nav-limits").click()
            expect(page.get_by_test_id("limits")).to_have_attribute("data-loaded", "true")
            expect(page.get_by_test_id("limits-declared")).to_have_text("none")

            # the admin clears it
            page.get_by_test_id("sign-out").click()
            _sign_in(page, admin)
            page.goto(f"{api.url}/console#/limits")
            expect(page.get_by_test_id("limits-declared")).to_have_text("3")
            page.get_by_test_id("limits-clear").click()
            expect(page.get_by_test_id("limits-declared")).to_have_text("none")
            expect(page.get_by_test_id("limits-effective")).to_have_text("no limit")
            cleared = _limits(api)
            assert (cleared["max_running"], cleared["updated_by"]) == (None, "erin")
            assert _refused(_refused(seen, 422), 403) == [], seen
    finally:
        # the module's other tests run tenant a's turns: no limit left behind
        api.client("a-admin").put("/v1/limits", json={"max_running": None})
