"""Metrics end to end (docs/operations.md): the real API and real celery workers, each
worker serving /metrics on its own port. A turn whose worker is SIGKILLed mid-turn
is taken over by another, a turn completes, one fails, one waits for an answer and is
cancelled by the API; the counters say so, by agent, state and code, and every step
records its duration and retries in the journal. A model call retried once, a start
refused by a newer fence, and turns queued where no worker takes them move the retry
and rejection counters by one and the backlog gauges to their counts."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_providers import FakeAPI, serve, sse, status
from tests.procs import Proc, Procs, wait_for
from turnkeep.api.auth import token_digest
from turnkeep.runtime.states import EventType
from turnkeep.store.keys import lease_key

TOKEN = f"tk-metrics-{uuid.uuid4().hex}"
WAITING_ASKER = frozenset({("agent", "asker"), ("state", "waiting")})
#: what a wait for a metric or a turn may take on a loaded 2-core machine (these
#: events normally come within a second or two; an early one ends the wait at once)
PATIENCE = 90.0
UNAVAILABLE = b'{"error": {"message": "The server is overloaded", "type": "server_error"}}'


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


def wait_value(read: Callable[[], object], want: object, what: str) -> None:
    """Poll ``read()`` until it equals ``want``; on a timeout, say what it read last."""
    last: list[object] = []

    def seen() -> bool:
        last[:] = [read()]
        return last[0] == want

    try:
        wait_for(seen, PATIENCE, interval=0.25, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: read {last[0]!r}, want {want!r}") from None


def reply(model: str, text: str) -> bytes:
    """A streamed OpenAI chat completion of ``text`` by ``model``."""
    base = {"id": "chatcmpl-m", "object": "chat.completion.chunk", "created": 1, "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


@pytest.fixture
def queue() -> dict[str, str]:
    """A Celery queue of this test's own: the victim worker must take the test's turn
    first, not a session an earlier test of the run left on the shared queue (it would
    die on that one's tool effect instead)."""
    return {"TURNKEEP_QUEUE": f"turnkeep-metrics-{uuid.uuid4().hex[:8]}"}


def api_client(procs: Procs, tenant: str, queue: dict[str, str]) -> httpx.Client:
    """A client of a new API process on ``queue`` that takes ``TOKEN`` for ``tenant``."""
    tokens = [{"sha256": token_digest(TOKEN), "tenant": tenant, "subject": "ops"}]
    proc = procs.api({"TURNKEEP_TOKENS": json.dumps(tokens), **queue})
    return httpx.Client(
        base_url=proc.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=PATIENCE
    )


@pytest.fixture
def api(procs: Procs, tenant: str, queue: dict[str, str]) -> Iterator[httpx.Client]:
    with api_client(procs, tenant, queue) as client:
        yield client


@pytest.fixture
def model() -> Iterator[FakeAPI]:
    """A local server speaking the OpenAI wire format, for the ``policy`` agent's
    model: it fails once with a retryable 503, then answers."""
    with serve() as fake:
        down = status(503, UNAVAILABLE, {"retry-after": "0"})
        with fake.lock:
            fake.scripts["policy-primary"] = [down, sse(reply("policy-primary", "hello"))]
            fake.seen["policy-primary"], fake.sent["policy-primary"] = [], 0
        yield fake


def admit(api: httpx.Client, sid: str, agent: str, text: str) -> str:
    r = api.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": agent, "input": [{"role": "user", "content": text}]},
    )
    assert r.status_code == 202, r.text
    return str(r.json()["turn_id"])


def settled(
    api: httpx.Client, sid: str, tid: str, state: str, timeout: float = PATIENCE
) -> dict[str, object]:
    def done() -> dict[str, object] | None:
        turn = api.get(f"/v1/sessions/{sid}/turns/{tid}", params={"wait": 5}).json()
        return turn if turn["state"] == state else None

    return wait_for(done, timeout, interval=0.05, what=f"turn {tid} {state}")  # type: ignore[return-value]


def test_workers_and_the_api_count_turns_steps_takeovers_and_the_backlog(
    procs: Procs,
    api: httpx.Client,
    store: object,
    tenant: str,
    queue: dict[str, str],
    model: FakeAPI,
    redis_url: str,
) -> None:
    api_url = str(api.base_url).rstrip("/") + "/metrics"
    victim: Proc = procs.worker(
        {"TURNKEEP_FAULTS": "after_tool_effect=kill-once", **queue}, name="victim", metrics=True
    )
    victim_url = f"http://127.0.0.1:{victim.port}/metrics"
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
    wait_for(lambda: not victim.alive(), PATIENCE, what="the victim SIGKILLed at after_tool_effect")

    # the scan starts once the victim is gone: it enqueues the stalled session
    beat = procs.beat(queue)
    openai = {"TURNKEEP_OPENAI_BASE_URL": model.base + "/v1", "TURNKEEP_OPENAI_API_KEY": "sk-m"}
    survivor = procs.worker({**openai, **queue}, name="survivor", metrics=True)
    survivor_url = f"http://127.0.0.1:{survivor.port}/metrics"
    settled(api, s_taken, t_taken, "completed")

    s_ok, s_bad, s_ask, s_retry = (
        f"s-{k}-{uuid.uuid4().hex[:6]}" for k in ("ok", "bad", "ask", "retry")
    )
    t_ok = admit(api, s_ok, "counter", "steps=2")
    t_bad = admit(api, s_bad, "json", "bad")
    t_ask = admit(api, s_ask, "asker", "who?")
    settled(api, s_ok, t_ok, "completed")
    failed = settled(api, s_bad, t_bad, "failed")
    assert failed["error"]["code"] == "output_invalid"  # type: ignore[index]
    settled(api, s_ask, t_ask, "waiting")

    # a model call that fails once with a 503 and then answers: one retry, of its agent
    retries = "turnkeep_model_retries_total"
    retried_before = value(scrape(survivor_url), retries, agent="policy")
    t_retry = admit(api, s_retry, "policy", "hi")
    settled(api, s_retry, t_retry, "completed")
    assert len(model.seen["policy-primary"]) == 2
    assert value(scrape(survivor_url), retries, agent="policy") - retried_before == 1
    [answered] = [
        e
        for e in store.reads.turn_events(tenant, s_retry, t_retry)  # type: ignore[attr-defined]
        if e.type == EventType.MODEL_COMPLETED
    ]
    assert answered.data["retries"] == 1, answered.data

    # a newer fence claimed in Postgres behind the lease's back (as a restored Redis
    # leaves it): the survivor's start under its older token is refused, once, and the
    # turn runs on under a token above it
    rejections = "turnkeep_stale_fence_rejections_total"
    rejected_before = value(scrape(survivor_url), rejections)
    leases = redis.Redis.from_url(redis_url)
    wait_for(
        lambda: not leases.exists(lease_key(tenant, s_ok)),
        PATIENCE,
        what="the survivor to give back its lease on the first session",
    )
    newer = store.reads.get_session(tenant, s_ok).fence + 100_000  # type: ignore[attr-defined]
    claimed = store.turns.start(tenant, s_ok, newer, claim=True, agent_hashes=[], max_attempts=4)  # type: ignore[attr-defined]
    assert claimed.claimed and claimed.turn is None
    t_fenced = admit(api, s_ok, "counter", "steps=0")
    settled(api, s_ok, t_fenced, "completed")
    assert value(scrape(survivor_url), rejections) - rejected_before == 1
    fences = {e.fence for e in store.reads.turn_events(tenant, s_ok, t_fenced)}  # type: ignore[attr-defined]
    assert fences - {0} and min(fences - {0}) > newer, fences

    # the backlog, as the API's /metrics reads it (cached for 2 s)
    def waiting_seen() -> bool:
        got = scrape(api_url, TOKEN)
        return value(got, "turnkeep_turns_waiting", agent="asker", state="waiting") >= 1

    wait_for(waiting_seen, PATIENCE, interval=0.5, what="the asker's turn in turns_waiting")
    r = api.post(f"/v1/sessions/{s_ask}/turns/{t_ask}/cancel")
    assert r.status_code == 202 and r.json()["state"] == "cancelled", r.text

    got = scrape(survivor_url)
    finished = "turnkeep_turns_finished_total"
    assert value(got, finished, agent="counter", state="completed", code="") == 3
    assert value(got, finished, agent="policy", state="completed", code="") == 1
    assert value(got, finished, agent="json", state="failed", code="output_invalid") == 1
    for kind in ("model", "tool", "checkpoint"):
        assert value(got, "turnkeep_step_seconds_count", kind=kind, agent="counter") > 0, kind
    assert value(got, "turnkeep_step_seconds_count", kind="model", agent="counter") >= 4
    assert value(got, "turnkeep_lease_takeovers_total") >= 1
    assert value(got, "turnkeep_recovery_enqueued_total") >= 1

    def cancels() -> float:  # counted as the cancellation is published, after the answer
        return value(scrape(api_url, TOKEN), finished, agent="asker", state="cancelled", code="")

    wait_value(cancels, 1, "the API's count of the cancellation")
    from_api = scrape(api_url, TOKEN)
    assert value(from_api, "turnkeep_admissions_total", outcome="created") == 6

    def waiting_asker() -> float | None:  # a 0 once the 2 s reading ran out, not absent
        return scrape(api_url, TOKEN).get(("turnkeep_turns_waiting", WAITING_ASKER))

    wait_value(waiting_asker, 0, "the cancelled turn out of turns_waiting")

    # queue depth and runnable turns, with nothing to take the turns: a queue of its own
    # (no scan or redelivery adds to it) on an API of its own (no earlier reading cached)
    survivor.stop()
    beat.stop()
    counts = store.scans.active_turn_counts()  # type: ignore[attr-defined]
    queued_before = counts.get(("counter", "queued"), 0)
    running_before = counts.get(("counter", "running"), 0)
    backlog = {"TURNKEEP_QUEUE": f"turnkeep-metrics-backlog-{uuid.uuid4().hex[:8]}"}
    with api_client(procs, tenant, backlog) as idle:
        for _ in range(3):
            admit(idle, f"s-backlog-{uuid.uuid4().hex[:6]}", "counter", "steps=1")
        idle_url = str(idle.base_url).rstrip("/") + "/metrics"

        def backlog_seen() -> tuple[float, float, float]:
            got = scrape(idle_url, TOKEN)
            return (
                value(got, "turnkeep_queue_depth"),
                value(got, "turnkeep_turns_runnable", agent="counter", state="queued"),
                value(got, "turnkeep_turns_runnable", agent="counter", state="running"),
            )

        wait_value(
            backlog_seen,
            (3, queued_before + 3, running_before),
            "queue depth 3 and 3 more queued counter turns",
        )

    # every step's outcome records its wall time and retries
    events = store.reads.turn_events(tenant, s_ok, t_ok)  # type: ignore[attr-defined]
    steps = [e for e in events if e.type in (EventType.MODEL_COMPLETED, EventType.TOOL_COMPLETED)]
    assert len(steps) == 5, [e.type for e in events]
    for e in steps:
        assert isinstance(e.data["duration_ms"], int) and e.data["duration_ms"] >= 0, e.data
        assert e.data["retries"] == 0, e.data
