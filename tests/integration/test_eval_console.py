"""The console's experiments pages (api/console/evaluation.js) in real headless Chromium
(tests/browser.py) on the real API, a real worker and beat running two experiments of
evalbot (tests/eval_agents.py): the list, one experiment's cases, and the two side by
side, picked on the page. Another tenant's token sees none of them. Screenshots go to
test-output/console/."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import chromium, output_dir
from tests.integration.api_server import Api, serve_api
from tests.integration.test_console import VIEWPORT, _sign_in, _watch
from tests.integration.test_evaluation import DATASET, EVAL_ENV, run

SLOW = 30_000


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    broker = service_env["TURNKEEP_REDIS_URL"]
    with serve_api(service_env, agents="tests.eval_agents", broker_url=broker) as handle:
        yield handle


def test_experiments_side_by_side_in_the_browser(api: Api, procs: Any) -> None:
    shots = output_dir("console")
    procs.worker(EVAL_ENV, concurrency=8)
    procs.beat(EVAL_ENV)
    c = api.client()
    name = f"console-{uuid.uuid4().hex[:6]}"
    r = c.post(f"/v1/datasets/{name}/versions", json={"cases": DATASET[:5]})
    assert r.status_code == 201, r.text
    spec = {"dataset": name, "agent": "evalbot", "concurrency": 5}
    v1 = run(c, {**spec, "agent_version": "1"}, key=f"{name}-v1")
    v2 = run(c, {**spec, "agent_version": "2"}, key=f"{name}-v2")
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        seen = _watch(page)
        page.goto(f"{api.url}/console")
        _sign_in(page, api.token_a)
        page.get_by_test_id("nav-experiments").click()
        listed = page.get_by_test_id("experiments")
        expect(listed).to_have_attribute("data-loaded", "true")
        for exp in (v1, v2):
            row = page.locator(
                f'[data-testid="experiment-row"][data-experiment-id="{exp["experiment_id"]}"]'
            )
            expect(row).to_contain_text("completed")
        v1_row = page.locator(
            f'[data-testid="experiment-row"][data-experiment-id="{v1["experiment_id"]}"]'
        )
        expect(v1_row).to_contain_text("60%")  # weather x2 and book-oslo of the five
        page.screenshot(path=shots / "experiments.png")

        # one experiment: its figures and its cases, a failed assertion named
        v1_row.get_by_test_id("experiment-link").click()
        expect(page.get_by_test_id("cases")).to_have_attribute("data-loaded", "true")
        expect(page.get_by_test_id("pass-rate")).to_have_text("60%")
        rome = page.locator('[data-testid="case-row"][data-case-id="book-rome"]')
        expect(rome.get_by_test_id("case-result")).to_have_text("fail")
        expect(rome).to_contain_text("tool_order")

        # two side by side, picked on the list's page
        page.get_by_test_id("nav-experiments").click()
        expect(page.get_by_test_id("experiments")).to_have_attribute("data-loaded", "true")
        page.get_by_test_id("compare-a").select_option(v1["experiment_id"])
        page.get_by_test_id("compare-b").select_option(v2["experiment_id"])
        page.get_by_test_id("compare-go").click()
        expect(page.get_by_test_id("comparison")).to_have_attribute(
            "data-loaded", "true", timeout=SLOW
        )
        expect(page.get_by_test_id("rates")).to_have_text("60% → 100% (+40 points)")
        expect(page.get_by_test_id("changes")).to_have_text("2 fixed, 0 regressed")
        fixed = page.locator('[data-testid="case-change"][data-change="fixed"]')
        expect(fixed).to_have_count(2)
        wipe = page.locator('[data-testid="comparison-row"][data-case-id="wipe"]')
        expect(wipe.get_by_test_id("case-a")).to_have_text("fail")
        expect(wipe.get_by_test_id("case-b")).to_have_text("pass")
        expect(wipe).to_contain_text("#0 tool_not_called: fail → pass")
        page.screenshot(path=shots / "comparison.png")
        assert seen == []

        # another tenant: no experiments, and the comparison is not found
        other = browser.new_page(viewport=VIEWPORT)
        other.goto(f"{api.url}/console")
        _sign_in(other, api.token_b)
        other.goto(f"{api.url}/console#/experiments")
        expect(other.get_by_test_id("experiments")).to_have_attribute("data-loaded", "true")
        expect(other.get_by_test_id("experiment-row")).to_have_count(0)
        other.goto(
            f"{api.url}/console#/experiments/{v1['experiment_id']}/compare/{v2['experiment_id']}"
        )
        expect(other.get_by_test_id("error-text")).to_contain_text("not found", timeout=SLOW)
