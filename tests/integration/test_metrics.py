"""Metrics end to end (docs/operations.md): the real API and real celery workers, each
worker serving /metrics on its own port. A turn whose worker is SIGKILLed mid-turn
is taken over by another, a turn completes, one fails, one waits for an answer and is
cancelled by the API; the counters say so, by agent, state and code, and every step
records its duration and retries in the journal."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from api.auth import token_digest
from runtime.states import EventType
from tests.procs import Proc, Procs, free_port, wait_for

TOKEN = f"tk-metrics-{uuid.uuid4().hex}"
WAITING_ASKER = frozenset({("agent", "asker"), ("state", "waiting")})


def scrape(
    url: str, token: str | None = None
) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a /metrics page by (name, labels)."""
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as resp:
        text = resp.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def families(url: str, token: str | None = None) -> set[str]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as resp:
        return {f.name for f in text_string_to_metric_families(resp.read().decode())}


def value(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def queue() -> dict[str, str]:
    """A Celery queue of this test's own: the victim worker must take the test's turn
    first, not a session an earlier test of the run left on the shared queue (it would
    die on that one's tool effect instead)."""
    return {"TURNKEEP_QUEUE": f"turnkeep-metrics-{uuid.uuid4().hex[:8]}"}


@pytest.fixture
def api(procs: Procs, tenant: str, queue: dict[str, str]) -> Iterator[httpx.Client]:
    tokens = [{"sha256": token_digest(TOKEN), "tenant": tenant, "subject": "ops"}]
    proc = procs.api({"TURNKEEP_TOKENS": json.dumps(tokens), **queue})
    with httpx.Client(
        base_url=proc.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20
    ) as client:
        yield client


def admit(api: httpx.Client, sid: str, agent: str, text: str) -> str:
    r = api.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": agent, "input": [{"role": "user", "content": text}]},
    )
    assert r.status_code == 202, r.text
    return str(r.json()["turn_id"])


def settled(
    api: httpx.Client, sid: str, tid: str, state: str, timeout: float = 30
) -> dict[str, object]:
    def done() -> dict[str, object] | None:
        turn = api.get(f"/v1/sessions/{sid}/turns/{tid}", params={"wait": 5}).json()
        return turn if turn["state"] == state else None

    return wait_for(done, timeout, interval=0.05, what=f"turn {tid} {state}")  # type: ignore[return-value]


def test_workers_and_the_api_count_turns_steps_takeovers_and_the_backlog(
    procs: Procs, api: httpx.Client, store: object, tenant: str, queue: dict[str, str]
) -> None:
    api_url = str(api.base_url).rstrip("/") + "/metrics"
    victim_port, survivor_port = free_port(), free_port()
    victim: Proc = procs.worker(
        {
            "TURNKEEP_METRICS_PORT": str(victim_port),
            "TURNKEEP_FAULTS": "after_tool_effect=kill-once",
            # its own turn only: its start-up scan may hand it other tests' sessions
            "TURNKEEP_FAULTS_SESSIONS": "s-take-",
            **queue,
        },
        name="victim",
    )
    victim_url = f"http://127.0.0.1:{victim_port}/metrics"
    # served from the start, every worker metric there before anything happened
    before = families(victim_url)
    assert {
        "turnkeep_turns_finished",
        "turnkeep_step_seconds",
        "turnkeep_lease_takeovers",
        "turnkeep_stale_fence_rejections",
        "turnkeep_recovery_enqueued",
        "turnkeep_model_retries",
        "turnkeep_queue_depth",
        "turnkeep_turns_waiting",
        "turnkeep_turns_runnable",
    } <= before, before

    # the victim dies with the tool's effect done and not committed
    s_taken = f"s-take-{uuid.uuid4().hex[:6]}"
    t_taken = admit(api, s_taken, "counter", "steps=1")
    wait_for(lambda: not victim.alive(), 30, what="the victim SIGKILLed at after_tool_effect")

    # the scan starts once the victim is gone: it enqueues every stalled session of the
    # database (other tests' too), which the survivor may run
    procs.beat(queue)
    procs.worker({"TURNKEEP_METRICS_PORT": str(survivor_port), **queue}, name="survivor")
    survivor_url = f"http://127.0.0.1:{survivor_port}/metrics"
    settled(api, s_taken, t_taken, "completed")

    s_ok, s_bad, s_ask = (f"s-{k}-{uuid.uuid4().hex[:6]}" for k in ("ok", "bad", "ask"))
    t_ok = admit(api, s_ok, "counter", "steps=2")
    t_bad = admit(api, s_bad, "json", "bad")
    t_ask = admit(api, s_ask, "asker", "who?")
    settled(api, s_ok, t_ok, "completed")
    failed = settled(api, s_bad, t_bad, "failed")
    assert failed["error"]["code"] == "output_invalid"  # type: ignore[index]
    settled(api, s_ask, t_ask, "waiting")

    # the backlog, as the API's /metrics reads it (cached for 2 s)
    def waiting_seen() -> bool:
        got = scrape(api_url, TOKEN)
        return value(got, "turnkeep_turns_waiting", agent="asker", state="waiting") >= 1

    wait_for(waiting_seen, 10, interval=0.5, what="the asker's turn in turnkeep_turns_waiting")
    r = api.post(f"/v1/sessions/{s_ask}/turns/{t_ask}/cancel")
    assert r.status_code == 202 and r.json()["state"] == "cancelled", r.text

    got = scrape(survivor_url)
    finished = "turnkeep_turns_finished_total"
    assert value(got, finished, agent="counter", state="completed", code="") == 2
    assert value(got, finished, agent="json", state="failed", code="output_invalid") == 1
    for kind in ("model", "tool", "checkpoint"):
        assert value(got, "turnkeep_step_seconds_count", kind=kind, agent="counter") > 0, kind
    assert value(got, "turnkeep_step_seconds_count", kind="model", agent="counter") >= 4
    assert value(got, "turnkeep_lease_takeovers_total") >= 1
    assert value(got, "turnkeep_recovery_enqueued_total") >= 1
    assert ("turnkeep_stale_fence_rejections_total", frozenset()) in got
    assert ("turnkeep_queue_depth", frozenset()) in got

    def cancel_counted() -> bool:  # counted as the cancellation is published, after the answer
        got = scrape(api_url, TOKEN)
        return value(got, finished, agent="asker", state="cancelled", code="") == 1

    wait_for(cancel_counted, 10, interval=0.2, what="the API's count of the cancellation")
    from_api = scrape(api_url, TOKEN)
    assert ("turnkeep_queue_depth", frozenset()) in from_api
    assert value(from_api, "turnkeep_admissions_total", outcome="created") == 4

    def waiting_gone() -> bool:  # read again once the 2 s reading ran out: a 0, not absent
        got = scrape(api_url, TOKEN)
        return got.get(("turnkeep_turns_waiting", WAITING_ASKER)) == 0

    wait_for(waiting_gone, 10, interval=0.5, what="the cancelled turn out of turns_waiting")

    # every step's outcome records its wall time and retries
    events = store.turn_events(tenant, s_ok, t_ok)  # type: ignore[attr-defined]
    steps = [e for e in events if e.type in (EventType.MODEL_COMPLETED, EventType.TOOL_COMPLETED)]
    assert len(steps) == 5, [e.type for e in events]
    for e in steps:
        assert isinstance(e.data["duration_ms"], int) and e.data["duration_ms"] >= 0, e.data
        assert e.data["retries"] == 0, e.data
