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
from tests.integration.test_console import SLOW, VIEWPORT, _says, _sign_in, _submit, _watch
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
