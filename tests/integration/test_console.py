"""The web console (api/console.py) as a person uses it: real headless Chromium
(tests/browser.py) on the real API, a real celery worker running the turns.

A turn admitted over HTTP shows in the tenant's sessions list; its page shows the
approval the turn waits on, live over SSE with a stream token; Approve on the page
lets the turn finish, and the page shows it completed with its model and tool steps.
Another tenant's token sees none of it. Without a stream token secret the page polls
the timeline, and says so. Screenshots go to test-output/console/.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from tests.browser import chromium, output_dir
from tests.integration.api_server import Api, serve_api

#: how long the page may take to show what a worker does (a DOM wait, never a sleep)
SLOW = 30_000
VIEWPORT = {"width": 1280, "height": 800}
SECRET = "console-test-stream-secret"


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the workers' broker and agents; a stream token secret, so the page goes live
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        stream_token_secret=SECRET,
    ) as handle:
        yield handle


def _submit(api: Api, sid: str, text: str, agent: str = "payer") -> str:
    r = api.client().post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": agent, "input": [{"role": "user", "content": text}]},
    )
    assert r.status_code == 202, r.text
    return str(r.json()["turn_id"])


def _watch(page: Page) -> list[str]:
    """Every console error or warning and uncaught exception of the page, as text."""
    seen: list[str] = []

    def on_console(msg: ConsoleMessage) -> None:
        if msg.type in ("error", "warning"):
            seen.append(f"console.{msg.type}: {msg.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: seen.append(f"pageerror: {exc}"))
    return seen


def _sign_in(page: Page, token: str) -> None:
    expect(page.get_by_test_id("login-form")).to_be_visible()
    page.get_by_test_id("token-input").fill(token)
    page.get_by_test_id("token-save").click()
    expect(page.get_by_test_id("sessions")).to_have_attribute("data-loaded", "true")


@contextmanager
def _says(api: Api, sid: str, tid: str) -> Iterator[None]:
    """On a failed DOM wait, what the API says of the turn: the page or the turn?"""
    try:
        yield
    except AssertionError as exc:
        turn = api.client().get(f"/v1/sessions/{sid}/turns/{tid}/timeline").text
        raise AssertionError(f"{exc}\nthe API says: {turn}") from None


def _refused(seen: list[str], status: int) -> list[str]:
    """``seen`` without Chromium's own notes of responses with ``status``: the API's
    refusals the test provokes on purpose (the page shows them as problems)."""
    note = re.compile(rf"Failed to load resource: .* status of {status}\b")
    return [s for s in seen if not note.search(s)]


def test_console_shell_is_static_and_locked_down(api: Api) -> None:
    """The shell needs no token and holds no data; /v1 still needs one."""
    with httpx.Client(base_url=api.url, timeout=10) as anyone:
        page = anyone.get("/console")
        js = anyone.get("/console/static/console.js")
        css = anyone.get("/console/static/console.css")
        again = anyone.get(
            "/console/static/console.js", headers={"If-None-Match": js.headers["etag"]}
        )
        missing = anyone.get("/console/static/nothing.js")
        slash = anyone.get("/console/")
        # nothing but the two assets is public under /console
        beside = anyone.get("/console/static/../../v1/sessions")
        other = anyone.get("/console/anything")
        sessions = anyone.get("/v1/sessions")
        wrong = anyone.get("/v1/sessions", headers={"Authorization": "Bearer not-a-token"})
        # the token of a tenant changes nothing about the shell
        with_token = anyone.get("/console", headers={"Authorization": f"Bearer {api.token_a}"})
    assert page.status_code == 200, page.text
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    html = page.text
    # no inline script, no inline handlers: all of the page's code is the served file
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert len(scripts) == 1 and ' src="/console/static/console.js?v=' in scripts[0], scripts
    assert not re.search(r"\son[a-z]+\s*=", html)
    # no data: nothing of either tenant, nor a session, nor a token
    for secret in (api.tenant_a, api.tenant_b, api.token_a, api.token_b, "alice", "bob"):
        assert secret not in html
    assert with_token.text == html
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "content-security-policy" in js.headers and js.headers["cache-control"] == "no-cache"
    assert again.status_code == 304
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert slash.status_code == 307 and slash.headers["location"].endswith("/console")
    for refused in (sessions, wrong, beside, other):
        assert refused.status_code == 401
        assert refused.json()["code"] == "unauthorized"


def test_console_approves_a_turn_in_the_browser(api: Api, procs: Any, sid: str) -> None:
    shots = output_dir("console")
    procs.worker()
    started = time.monotonic()
    tid = _submit(api, sid, "Pay the invoice, please.")
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)

        # the turn admitted over HTTP is in the tenant's sessions list
        row = page.locator(f'[data-testid="session-row"][data-session-id="{sid}"]')
        expect(row).to_be_visible()
        expect(row.get_by_test_id("session-link")).to_have_text(sid)
        page.screenshot(path=shots / "sessions.png")

        # the session, then the turn
        row.get_by_test_id("session-link").click()
        turn_row = page.locator(f'[data-testid="turn-row"][data-turn-id="{tid}"]')
        expect(turn_row).to_be_visible()
        turn_row.get_by_test_id("turn-link").click()

        # live over SSE; the approval the turn waits on, with the call's arguments
        expect(page.get_by_test_id("live-status")).to_have_attribute("data-mode", "live")
        pending = page.get_by_test_id("pending-input")
        expect(pending).to_be_visible(timeout=SLOW)
        expect(page.get_by_test_id("turn-state")).to_have_text("waiting")
        expect(page.get_by_test_id("pending-kind")).to_have_text("approval")
        expect(page.get_by_test_id("pending-arguments")).to_contain_text('"amount": 9')
        expect(pending).to_contain_text("pay")
        page.get_by_test_id("field-reason").fill("checked in the console")
        expect(
            page.locator('[data-testid="event-row"][data-type="input.requested"]')
        ).to_have_count(1)
        page.screenshot(path=shots / "pending-approval.png")

        page.get_by_test_id("approve").click()

        # the page follows the turn to its end, from the stream
        with _says(api, sid, tid):
            expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        expect(page.locator('[data-testid="step-row"][data-kind="model"]')).to_have_count(2)
        expect(page.locator('[data-testid="step-row"][data-kind="tool"]')).to_have_count(1)
        tool_row = page.locator('[data-testid="step-row"][data-kind="tool"]')
        expect(tool_row).to_contain_text("pay")
        expect(tool_row).to_contain_text("ok")
        wait_row = page.get_by_test_id("wait-row")
        expect(wait_row).to_contain_text("approved")
        expect(wait_row).to_contain_text("alice")
        expect(page.get_by_test_id("turn-result-text")).to_contain_text("ok: ")
        events = page.get_by_test_id("event-row")
        expect(events.and_(page.locator('[data-type="turn.completed"]'))).to_have_count(1)
        # the events carry what the timeline leaves out: the model's words, the result
        expect(events.and_(page.locator('[data-type="model.completed"]')).first).to_contain_text(
            "calling pay"
        )
        expect(events.and_(page.locator('[data-type="tool.completed"]'))).to_contain_text("charged")
        expect(page.get_by_test_id("live-status")).to_have_attribute("data-mode", "ended")
        expect(page.get_by_test_id("pending-input")).to_be_hidden()
        expect(page.get_by_test_id("cancel-turn")).to_be_hidden()
        page.screenshot(path=shots / "completed-turn.png")
        elapsed = time.monotonic() - started
        assert seen == [], seen

        # what the page did is what the API recorded: alice approved, with her reason
        turn = api.client().get(f"/v1/sessions/{sid}/turns/{tid}").json()
        assert turn["state"] == "completed" and turn["result"]["text"].startswith("ok: ")
        timeline = api.client().get(f"/v1/sessions/{sid}/turns/{tid}/timeline").json()
        assert [(w["outcome"], w["answered_by"]) for w in timeline["waits"]] == [
            ("approved", "alice")
        ]

        # another tenant's token: no such session in its list, nor by its address
        page.get_by_test_id("sign-out").click()
        _sign_in(page, api.token_b)
        expect(page.locator(f'[data-testid="session-row"][data-session-id="{sid}"]')).to_have_count(
            0
        )
        page.goto(f"{api.url}/console#/sessions/{sid}/turns/{tid}")
        expect(page.get_by_test_id("error-text")).to_contain_text("not_found")
        expect(page.get_by_test_id("step-row")).to_have_count(0)
        page.goto(f"{api.url}/console#/sessions/{sid}")
        expect(page.get_by_test_id("error-text")).to_contain_text("not_found")
        expect(page.get_by_test_id("turn-row")).to_have_count(0)
        assert _refused(seen, 404) == [], seen
    print(f"console scenario: turn admitted to completed on the page in {elapsed:.1f} s")


def test_console_polls_without_stream_tokens(
    service_env: dict[str, str], procs: Any, sid: str
) -> None:
    """No stream token secret: the page says it polls, and still follows the turn."""
    shots = output_dir("console")
    procs.worker()
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        stream_token_secret="",
        webhook_secret="",
    ) as bare:
        tid = _submit(bare, sid, "Pay it.")
        with chromium() as browser:
            page = browser.new_page(viewport=VIEWPORT)
            seen = _watch(page)
            page.goto(f"{bare.url}/console")
            _sign_in(page, bare.token_a)
            page.goto(f"{bare.url}/console#/sessions/{sid}/turns/{tid}")
            live = page.get_by_test_id("live-status")
            expect(live).to_have_attribute("data-mode", "polling")
            expect(live).to_contain_text("every 2 s")
            expect(live).to_contain_text("stream tokens")
            expect(page.get_by_test_id("deny")).to_be_visible(timeout=SLOW)
            page.get_by_test_id("deny").click()
            expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
            expect(page.get_by_test_id("wait-row")).to_contain_text("denied")
            expect(page.get_by_test_id("turn-result-text")).to_contain_text("error: ")
            expect(live).to_have_attribute("data-mode", "ended")
            # the journal, read as JSON pages while polling
            turn_events = page.locator('[data-testid="event-row"][data-type="turn.completed"]')
            expect(turn_events).to_have_count(1)
            page.screenshot(path=shots / "polling-denied.png")
            # the one refusal is the stream token's 503, which the page turns into polling
            assert _refused(seen, 503) == [], seen


def test_console_answers_a_question_and_a_reconciliation(api: Api, procs: Any) -> None:
    """Forms made from other response schemas (a question, credentials, a
    reconciliation); the API's refusals shown as problems."""
    shots = output_dir("console")
    procs.worker()
    ask_sid, rec_sid, auth_sid = (f"s-{uuid.uuid4().hex[:8]}" for _ in range(3))
    ask = _submit(api, ask_sid, "Who are you?", agent="asker")
    auth = _submit(api, auth_sid, "Read the private repo.", agent="reader")
    rec = _submit(api, rec_sid, "Do the slow thing.", agent="hanger-reconcile")
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)

        # a question: its answer schema is a string of at least one character
        page.goto(f"{api.url}/console#/sessions/{ask_sid}/turns/{ask}")
        expect(page.get_by_test_id("pending-kind")).to_have_text("question", timeout=SLOW)
        page.get_by_test_id("input-submit").click()
        expect(page.get_by_test_id("error-text")).to_contain_text("validation_error")
        page.get_by_test_id("field-answer").fill("Ada")
        page.get_by_test_id("input-submit").click()
        expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        expect(page.get_by_test_id("turn-result-text")).to_have_text('ok: "Ada"')
        expect(page.get_by_test_id("error")).to_be_hidden()

        # credentials for a tool (external_auth): typed into a password field
        page.goto(f"{api.url}/console#/sessions/{auth_sid}/turns/{auth}")
        expect(page.get_by_test_id("pending-kind")).to_have_text("external_auth", timeout=SLOW)
        expect(page.get_by_test_id("field-token")).to_have_attribute("type", "password")
        page.get_by_test_id("field-token").fill("s3cret")
        page.get_by_test_id("input-submit").click()
        expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        expect(page.get_by_test_id("turn-result-text")).to_contain_text("6 characters")
        expect(page.locator("body")).not_to_contain_text("s3cret")

        # a reconciliation, bound to the admin role: alice (a member) is refused
        page.goto(f"{api.url}/console#/sessions/{rec_sid}/turns/{rec}")
        form = page.get_by_test_id("reconcile-form")
        expect(form).to_be_visible(timeout=SLOW)
        expect(page.get_by_test_id("turn-state")).to_have_text("needs_reconciliation")
        # the fields follow the outcome: a result for succeeded, a reason for failed
        expect(page.get_by_test_id("reconcile-result")).to_be_visible()
        expect(page.get_by_test_id("reconcile-error")).to_be_hidden()
        page.get_by_test_id("reconcile-outcome").select_option("failed")
        expect(page.get_by_test_id("reconcile-result")).to_be_hidden()
        page.get_by_test_id("reconcile-error").fill("the provider refused it")
        page.get_by_test_id("reconcile-submit").click()
        expect(page.get_by_test_id("error-text")).to_contain_text("input_forbidden")
        page.screenshot(path=shots / "reconcile-forbidden.png")

        # an admin's token records the outcome; the turn goes on with it
        page.get_by_test_id("sign-out").click()
        _sign_in(page, api.more["a-admin"])
        page.goto(f"{api.url}/console#/sessions/{rec_sid}/turns/{rec}")
        expect(form).to_be_visible()
        page.get_by_test_id("reconcile-outcome").select_option("failed")
        page.get_by_test_id("reconcile-error").fill("the provider refused it")
        page.get_by_test_id("reconcile-submit").click()
        expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        expect(page.get_by_test_id("turn-result-text")).to_have_text(
            "error: error: the provider refused it"
        )
        expect(page.get_by_test_id("wait-row")).to_contain_text("failed")
        expect(page.get_by_test_id("wait-row")).to_contain_text("erin")
        # the refusals above, on purpose: 422 (the empty answer), 403 (alice)
        assert _refused(_refused(seen, 422), 403) == [], seen


def test_console_reruns_a_turn_from_a_step(api: Api, procs: Any, sid: str) -> None:
    """Re-run from here on a step of a settled turn: the page moves to the new turn,
    which shows where it came from, its reused steps, and completes (docs/reruns.md)."""
    procs.worker()
    tid = _submit(api, sid, "steps=1", agent="counter")
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.goto(f"{api.url}/console#/sessions/{sid}/turns/{tid}")
        with _says(api, sid, tid):
            expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        steps = page.get_by_test_id("step-row")
        expect(steps).to_have_count(3)  # model, count, the answer
        steps.nth(2).get_by_test_id("rerun-step").click()

        expect(page.get_by_test_id("rerun-of")).to_contain_text(f"{tid} from step 3")
        new = page.url.rsplit("/", 1)[-1]
        assert new != tid
        with _says(api, sid, new):
            expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        expect(page.locator('[data-testid="step-row"][data-origin="reused"]')).to_have_count(2)
        expect(page.locator('[data-testid="step-row"][data-origin="live"]')).to_have_count(1)
        page.screenshot(path=output_dir("console") / "rerun.png")
        assert seen == []
    rerun = api.client().get(f"/v1/sessions/{sid}/turns/{new}").json()
    assert rerun["rerun_of"]["turn_id"] == tid and rerun["rerun_of"]["from_step"] == 3


def test_console_approves_the_approvals_of_one_wait_together(
    api: Api, procs: Any, sid: str
) -> None:
    procs.worker()
    tid = _submit(api, sid, "pay them", agent="payroll")
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.goto(f"{api.url}/console#/sessions/{sid}/turns/{tid}")
        requests = page.get_by_test_id("pending-request")
        with _says(api, sid, tid):
            expect(requests).to_have_count(3, timeout=SLOW)
        for i, amount in enumerate((1, 2, 3)):
            expect(requests.nth(i).get_by_test_id("pending-arguments")).to_contain_text(
                f'"amount": {amount}'
            )
        page.screenshot(path=output_dir("console") / "approvals-together.png")
        page.get_by_test_id("approve-all").click()
        with _says(api, sid, tid):
            expect(page.get_by_test_id("turn-state")).to_have_text("completed", timeout=SLOW)
        expect(page.locator('[data-testid="step-row"][data-kind="tool"]')).to_have_count(3)
        expect(page.get_by_test_id("wait-row")).to_have_count(3)
        expect(page.get_by_test_id("pending-input")).to_be_hidden()
        assert seen == []


def test_console_deletes_a_session_after_asking(api: Api, procs: Any, sid: str) -> None:
    """Delete session asks first (Keep it changes nothing); confirmed, the page shows the
    tombstone in place of the turns, and so does the page of the session opened again
    (the API answers it 410 session_deleted): docs/erasure.md."""
    procs.worker()
    tid = _submit(api, sid, "steps=1", agent="counter")
    c = api.client()
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.goto(f"{api.url}/console#/sessions/{sid}")
        expect(page.get_by_test_id("turn-row")).to_have_count(1, timeout=SLOW)
        page.get_by_test_id("session-delete").click()
        expect(page.get_by_test_id("session-delete-ask")).to_be_visible()
        page.get_by_test_id("session-delete-cancel").click()
        expect(page.get_by_test_id("session-delete-ask")).to_be_hidden()
        assert c.get(f"/v1/sessions/{sid}").status_code == 200  # kept

        page.get_by_test_id("session-delete").click()
        page.get_by_test_id("session-delete-confirm").click()
        summary = page.get_by_test_id("session-summary")
        expect(summary).to_have_attribute("data-deleted", "true")
        expect(summary).to_contain_text("alice")
        expect(page.get_by_test_id("turns")).to_be_hidden()
        gone = c.get(f"/v1/sessions/{sid}/turns/{tid}")
        assert gone.status_code == 410 and gone.json()["code"] == "session_deleted"

        page.reload()
        expect(page.get_by_test_id("session-summary")).to_have_attribute("data-deleted", "true")
        expect(page.get_by_test_id("session-delete")).to_be_hidden()
        page.screenshot(path=output_dir("console") / "deleted.png")
        assert _refused(seen, 410) == []
