"""Workers against real Postgres, Redis and `celery worker` / `celery beat` processes."""

from __future__ import annotations

import itertools
import signal
import time

import psycopg

from tests.invariants import FenceWatch, check_all, steps_after_cancel
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState
from turnkeep.store.keys import fence_key


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _calls(database_url: str, prefix: str) -> list[tuple[str, int]]:
    with psycopg.connect(_pg(database_url)) as conn:
        return conn.execute(
            "SELECT key, pid FROM test_tool_calls WHERE key LIKE %s ORDER BY at", (prefix + "%",)
        ).fetchall()


def test_three_step_demo_turn_completes_one_outcome_per_step(
    procs, client, store, tenant, sid, database_url
):
    procs.worker()
    tid = client.admit(tenant, sid, "demo", "What is the weather in Oslo?")
    turn = client.wait_terminal(tenant, sid, tid, timeout=90)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert "Oslo" in turn.result["text"]
    events = store.reads.turn_events(tenant, sid, tid)
    assert [e.type for e in events] == [
        "turn.accepted",
        "turn.started",
        "model.completed",
        "tool.completed",
        "model.completed",
        "turn.completed",
    ]
    assert [e.step for e in events if e.step is not None] == [1, 2, 3]
    assert [e.seq for e in events] == list(range(1, 7))
    assert check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, tid)]) == []


def test_lane_runs_a_sessions_turns_one_at_a_time_oldest_first(
    procs, client, store, tenant, sid, database_url
):
    procs.worker(concurrency=8)
    tids = [client.admit(tenant, sid, "counter", f"steps=2 turn {i}") for i in range(4)]
    for tid in tids:
        assert client.wait_terminal(tenant, sid, tid).state is TurnState.COMPLETED
    events, _ = store.reads.list_events(tenant, sid, after=0)
    started = [e.turn_id for e in events if e.type == "turn.started"]
    assert started == tids
    # each turn made its own two tool calls: earlier turns' results are context, not progress
    assert [e.turn_id for e in events if e.type == "tool.completed"] == [
        t for t in tids for _ in range(2)
    ]
    # no turn starts before the previous one settled
    order = [(e.turn_id, e.type) for e in events if e.type in ("turn.started", "turn.completed")]
    assert order == [x for tid in tids for x in ((tid, "turn.started"), (tid, "turn.completed"))]
    assert (
        check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, t) for t in tids]) == []
    )


def test_output_schema_is_enforced(procs, client, tenant, sid):
    procs.worker()
    good = client.admit(tenant, sid, "json", "good please")
    bad = client.admit(tenant, sid, "json", "bad please")
    assert client.wait_terminal(tenant, sid, good).result["output"] == {"answer": 42}
    failed = client.wait_terminal(tenant, sid, bad)
    assert failed.state is TurnState.FAILED
    assert failed.error["code"] == "output_invalid"


def test_sigkill_during_tool_call_recovers_by_scan_and_counts_effect_once(
    procs, client, store, tenant, sid, database_url
):
    slow = {"TURNKEEP_TEST_TOOL_SLEEP": "3"}
    victim = procs.worker(slow)
    procs.beat()
    tid = client.admit(tenant, sid, "counter", "steps=1")
    key = f"{tenant}/{sid}/{tid}/2"
    wait_for(lambda: _calls(database_url, key), 30, what="tool call started")
    victim.signal(signal.SIGKILL)
    procs.worker()  # a healthy worker; the killed one's message is never redelivered in time
    # lease TTL 2s + scan interval 1s + grace + the tool's 3s (more on a loaded machine):
    # within 180 s it is the scan's doing, as a redelivery waits out the broker's
    # visibility timeout (over an hour)
    turn = client.wait_terminal(tenant, sid, tid, timeout=180)
    assert turn.state is TurnState.COMPLETED
    calls = _calls(database_url, key)
    assert len(calls) == 2 and calls[0][1] != calls[1][1], calls  # ran again, elsewhere
    assert check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, tid)]) == []


def test_sigstop_past_ttl_then_sigcont_stale_writes_are_rejected(
    procs, client, store, tenant, sid, database_url
):
    slow = {"TURNKEEP_TEST_TOOL_SLEEP": "2"}
    stale = procs.worker(slow)
    procs.beat()
    tid = client.admit(tenant, sid, "counter", "steps=2")
    key = f"{tenant}/{sid}/{tid}/2"
    wait_for(lambda: _calls(database_url, key), 30, what="tool call started")
    stale.signal(signal.SIGSTOP)
    fence_before = store.reads.get_session(tenant, sid).fence
    procs.worker()
    wait_for(
        lambda: store.reads.get_session(tenant, sid).fence > fence_before,
        90,
        what="takeover under a new fence",
    )
    turn = client.wait_terminal(tenant, sid, tid, timeout=90)
    assert turn.state is TurnState.COMPLETED
    events = store.reads.turn_events(tenant, sid, tid)
    # the takeover's fence is the one its terminal commit carries: the session's may
    # be higher by now, as the scan's extra deliveries of the stalled session take the
    # lease after the turn settled and find nothing to run
    new_fence = events[-1].fence
    assert events[-1].type == "turn.completed" and new_fence > fence_before
    assert store.reads.get_session(tenant, sid).fence >= new_fence  # fences never go down
    stale.signal(signal.SIGCONT)
    # the stale worker wakes inside its tool call, finishes it and tries to commit
    wait_for(lambda: "lease lost" in stale.text().lower(), 60, what="stale worker stops")
    after_takeover = [e for e in events if e.fence == new_fence]
    assert after_takeover and after_takeover[0].type == "turn.started"
    assert all(e.fence in (0, fence_before, new_fence) for e in events)
    assert [e for e in events if e.fence == fence_before and e.seq > after_takeover[0].seq] == []
    assert store.reads.turn_events(tenant, sid, tid) == events  # nothing arrived late
    assert check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, tid)]) == []


def test_poison_turn_ends_retry_exhausted(procs, client, store, tenant, sid, database_url):
    procs.beat()
    poison = {"TURNKEEP_FAULTS": "before_tool_effect=kill"}
    tid = client.admit(tenant, sid, "counter", "steps=1")
    deadline = time.monotonic() + 120
    kills = 0
    while time.monotonic() < deadline:
        turn = store.reads.get_turn(tenant, sid, tid)
        if turn.state.terminal:
            break
        w = procs.worker(poison, wait_ready=False)
        while w.alive() and not store.reads.get_turn(tenant, sid, tid).state.terminal:
            time.sleep(0.1)
        kills += 0 if w.alive() else 1
        w.stop()
    turn = store.reads.get_turn(tenant, sid, tid)
    assert turn.state is TurnState.FAILED
    assert turn.error["code"] == "retry_exhausted"
    assert kills == 4  # TURNKEEP_MAX_ATTEMPTS in the test env
    assert check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, tid)]) == []


def test_many_turns_in_flight_in_one_worker_process(procs, client, store, tenant, database_url):
    procs.worker({"TURNKEEP_DEMO_LATENCY": "2.0"}, concurrency=16)
    sessions = [f"s-many-{i}" for i in range(16)]
    # all admitted first, then all enqueued at once: on a loaded machine the admissions
    # alone may take longer than a turn
    tids = [
        (s, client.admit(tenant, s, "demo", "Weather in Rome?", enqueue=False)) for s in sessions
    ]
    for s in sessions:
        client.enqueue(tenant, s)
    spans = []
    for s, tid in tids:
        assert client.wait_terminal(tenant, s, tid, timeout=120).state is TurnState.COMPLETED
        events = store.reads.turn_events(tenant, s, tid)
        spans.append((events[1].created_at, events[-1].created_at))
    # one process, a model that takes two seconds: the turns' running spans overlap
    peak = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert peak >= 8, peak
    assert check_all(database_url, tenants=[tenant]) == []


def test_effectful_tool_without_outcome_is_interrupted_not_rerun(
    procs, client, store, tenant, sid, database_url
):
    procs.beat()
    tid = client.admit(tenant, sid, "charger", "steps=1")
    w = procs.worker({"TURNKEEP_FAULTS": "after_tool_effect=kill-once"}, wait_ready=False)
    wait_for(lambda: not w.alive(), 60, what="worker killed after the charge")
    procs.worker()
    turn = client.wait_terminal(tenant, sid, tid, timeout=90)
    assert turn.state is TurnState.COMPLETED
    events = store.reads.turn_events(tenant, sid, tid)
    assert "tool.interrupted" in [e.type for e in events]
    assert "1 errors" in turn.result["text"]
    assert len(_calls(database_url, f"{tenant}/{sid}/{tid}/2")) == 1  # never charged twice
    assert check_all(database_url, tenants=[tenant]) == []


def test_effectful_tool_with_reconcile_policy_parks_the_turn(
    procs, client, store, tenant, sid, database_url
):
    procs.beat()
    tid = client.admit(tenant, sid, "charger-reconcile", "steps=1")
    w = procs.worker({"TURNKEEP_FAULTS": "after_tool_effect=kill-once"}, wait_ready=False)
    wait_for(lambda: not w.alive(), 60, what="worker killed after the charge")
    procs.worker()
    wait_for(
        lambda: store.reads.get_turn(tenant, sid, tid).state is TurnState.NEEDS_RECONCILIATION,
        90,
        what="parked",
    )
    assert len(_calls(database_url, f"{tenant}/{sid}/{tid}/2")) == 1
    # a parked turn is not a wedged session: a turn admitted behind it waits, and a
    # cancellation settles the parked one at once (no worker steps it), then the
    # lane runs the next turn
    nxt = client.admit(tenant, sid, "charger-reconcile", "steps=0")
    # settled by the request's own statement: both events come back from it
    events = store.turns.request_cancel(tenant, sid, tid, subject="tester")
    assert [e.type for e in events] == ["turn.cancel_requested", "turn.cancelled"]
    assert store.reads.get_turn(tenant, sid, tid).state is TurnState.CANCELLED
    client.enqueue(tenant, sid)  # as the API does after it settled a turn
    assert client.wait_terminal(tenant, sid, nxt, timeout=90).state is TurnState.COMPLETED
    assert len(_calls(database_url, f"{tenant}/{sid}/{tid}/2")) == 1  # never charged again
    assert check_all(database_url, tenants=[tenant]) == []


def _stale_rejections(port: int) -> float:
    """The worker's ``turnkeep_stale_fence_rejections_total``, scraped."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    [value] = [
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "turnkeep_stale_fence_rejections_total"
    ]
    return value


def test_fences_never_go_down_across_runs(
    procs, client, store, tenant, sid, database_url, redis_url
):
    """Redis loses its fence counter after every run (as after a FLUSHALL): the grant
    floors the counter to the highest fence Postgres accepted, so the next run's first
    token is above it and no start is refused as stale. Without the floor, the start
    would be refused and the lane's recovery (raise the counter, run again) would still
    end above: the stale-fence count is what tells the two apart."""
    import redis as redis_lib

    port = procs.worker(metrics=True).port
    r = redis_lib.Redis.from_url(redis_url)
    watch = FenceWatch()
    fences = []
    for i in range(3):
        tid = client.admit(tenant, sid, "demo", f"Weather in Lima {i}?")
        assert client.wait_terminal(tenant, sid, tid).state is TurnState.COMPLETED
        assert watch.observe(database_url) == []
        [started] = [
            e for e in store.reads.turn_events(tenant, sid, tid) if e.type == "turn.started"
        ]
        fences.append(started.fence)
        assert r.delete(fence_key()) == 1  # the counter is gone, as after a FLUSHALL
    assert fences == sorted(set(fences)), fences  # each run above the one before
    assert store.reads.get_session(tenant, sid).fence == fences[-1]
    assert _stale_rejections(port) == 0


def test_redis_flushall_mid_turn_completes_and_no_fence_goes_down(
    procs, client, store, tenant, sid, database_url, service_env
):
    port = procs.redis_server().port
    private = {"TURNKEEP_REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    procs.env.update(private)
    import redis as redis_lib

    from tests.conftest import Client, broker_or

    r = redis_lib.Redis(port=port)
    c = Client(store, broker_or(private["TURNKEEP_REDIS_URL"]))
    watch = FenceWatch()
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "1"})
    procs.beat()
    tid = c.admit(tenant, sid, "counter", "steps=4")
    wait_for(lambda: _calls(database_url, f"{tenant}/{sid}/{tid}/2"), 30, what="first tool")
    fence_before = store.reads.get_session(tenant, sid).fence
    r.flushall()
    assert watch.observe(database_url) == []
    turn = c.wait_terminal(tenant, sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED
    # the flush took the lease: the holder stopped, and the turn finished under a new
    # fence that the Postgres floor kept above every old one, though Redis's counter
    # restarted from nothing
    assert store.reads.get_session(tenant, sid).fence > fence_before
    assert int(r.get(fence_key())) == store.reads.get_session(tenant, sid).fence
    assert watch.observe(database_url) == []
    assert check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, tid)]) == []


def test_budget_bounds_end_the_turn_with_a_typed_error(
    procs, client, store, tenant, sid, database_url
):
    procs.worker()
    tid = client.admit(tenant, sid, "counter", "steps=5", budget={"max_tool_calls": 2})
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.FAILED
    assert turn.error["code"] == "budget_exceeded"
    assert "tool call limit 2 reached" in turn.error["message"]
    # the bound is exact: two calls reached the tool, the third was refused before it ran
    assert len(_calls(database_url, f"{tenant}/{sid}/{tid}/")) == 2
    types = [e.type for e in store.reads.turn_events(tenant, sid, tid)]
    assert types.count("tool.completed") == 2


def test_cancellation_request_stops_the_turn_at_a_safe_point(
    procs, client, store, tenant, sid, database_url
):
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "0.5"})
    tid = client.admit(tenant, sid, "counter", "steps=50")
    wait_for(lambda: _calls(database_url, f"{tenant}/{sid}/{tid}/"), 30, what="running")
    assert store.turns.request_cancel(tenant, sid, tid, subject="tester")  # the request event
    assert store.turns.request_cancel(tenant, sid, tid, subject="tester") == ()  # once
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.CANCELLED
    events = store.reads.turn_events(tenant, sid, tid)
    types = [e.type for e in events]
    assert types.index("turn.cancel_requested") < types.index("turn.cancelled")
    assert types[-1] == "turn.cancelled"
    assert steps_after_cancel(events) <= 1  # the step in flight when it landed, no other
    # and no tool ran past that step: every call at the tool committed its outcome
    assert len(_calls(database_url, f"{tenant}/{sid}/{tid}/")) == types.count("tool.completed")
    assert check_all(database_url, tenants=[tenant]) == []


def test_committed_events_and_live_deltas_are_published(
    procs, client, store, tenant, sid, redis_url
):
    import redis as redis_lib

    from turnkeep.store import channel
    from turnkeep.store.keys import events_channel

    r = redis_lib.Redis.from_url(redis_url)
    pubsub = r.pubsub()
    pubsub.subscribe(events_channel(tenant, sid))
    wait_for(lambda: pubsub.get_message(timeout=0.1), 60, what="subscribed")
    procs.worker()
    tid = client.admit(tenant, sid, "demo", "Weather in Quito?")
    client.wait_terminal(tenant, sid, tid)
    got = []
    end = time.monotonic() + 60  # left at the turn.completed message
    while time.monotonic() < end:
        m = pubsub.get_message(timeout=0.2)
        if m and m["type"] == "message":
            got += channel.decode(m["data"])  # a commit's events come as one batch
            if got[-1].get("event", {}).get("type") == "turn.completed":
                break
    seqs = [g["event"]["seq"] for g in got if g["kind"] == "event"]
    assert seqs == [2, 3, 4, 5, 6]  # every worker commit, in order (1 was the admission)
    deltas = [g for g in got if g["kind"] == "delta"]
    assert deltas and all("seq" not in d for d in deltas)
    text = "".join(d["text"] for d in deltas if d["step"] == 3).strip()
    assert text == store.reads.get_turn(tenant, sid, tid).result["text"]
    # deltas are speculative: never in the journal
    assert all("delta" not in e.type for e in store.reads.turn_events(tenant, sid, tid))


def test_later_turns_see_the_sessions_earlier_conversation(procs, client, tenant, sid):
    procs.worker()
    first = client.admit(tenant, sid, "memory", "one")
    second = client.admit(tenant, sid, "memory", "two")
    assert client.wait_terminal(tenant, sid, first).result["text"] == "seen 1: one"
    assert client.wait_terminal(tenant, sid, second).result["text"] == "seen 2: one | two"


def test_context_overflow_compacts_and_retries_once_per_call(procs, client, store, tenant, sid):
    procs.worker()
    ok = client.admit(tenant, sid, "compactor", "steps=3")
    turn = client.wait_terminal(tenant, sid, ok)
    assert turn.state is TurnState.COMPLETED, turn.error
    compactions = [
        e for e in store.reads.turn_events(tenant, sid, ok) if e.type == "context.compacted"
    ]
    assert len(compactions) == 1
    assert compactions[0].data["from_seq"] is not None and compactions[0].data["summary"]
    assert compactions[0].data["reason"] == "overflow"
    # a long turn compacts again when it overflows again; each summary supersedes the last
    longer = client.admit(tenant, f"{sid}-b", "compactor", "steps=9")
    turn = client.wait_terminal(tenant, f"{sid}-b", longer)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["text"] == "done after 9 calls"
    lineage = [
        e
        for e in store.reads.turn_events(tenant, f"{sid}-b", longer)
        if e.type == "context.compacted"
    ]
    assert len(lineage) >= 2
    for older, newer in itertools.pairwise(lineage):
        assert newer.data["supersedes"] == older.seq
        assert newer.data["from_seq"] == lineage[0].data["from_seq"]
    # a call that overflows even after its compaction is a typed failure
    hopeless = client.admit(tenant, f"{sid}-c", "overflowing", "hello")
    turn = client.wait_terminal(tenant, f"{sid}-c", hopeless)
    assert turn.state is TurnState.FAILED and turn.error["code"] == "context_overflow"


def test_task_events_are_sent_once_a_monitor_asks_for_them(procs, client, tenant, sid):
    """Celery's task events cost Redis PUBLISHes on every task: a worker sends none
    until a monitor broadcasts ``enable_events``, as Flower does when it connects (and
    every 5 s after), so Flower's task pages fill as before."""
    import socket
    import threading
    from typing import Any

    from turnkeep.runtime.names import TASK_RUN_SESSION
    from turnkeep.runtime.settings import Settings
    from turnkeep.store.producer import celery_app

    app = celery_app(Settings())
    events: list[dict[str, Any]] = []
    bound, seen = threading.Event(), threading.Event()

    class Receiver(app.events.Receiver):  # type: ignore[misc, name-defined]
        def on_consume_ready(self, *args: Any, **kwargs: Any) -> None:
            super().on_consume_ready(*args, **kwargs)
            bound.set()  # its queue is bound: no event is missed from here

    def on_event(event: dict[str, Any]) -> None:
        # task-received is sent from the worker's event loop (a task's later events,
        # from its pool thread, may wait in Celery's buffer for the next one)
        if event.get("type") == "task-received" and event.get("name") == TASK_RUN_SESSION:
            events.append(event)
            seen.set()

    def listen() -> None:
        with app.connection_for_read() as conn:
            receiver = Receiver(conn, handlers={"*": on_event})
            receiver.should_stop = False
            receiver.capture(limit=None, timeout=None, wakeup=False)

    hostname = f"worker{len(procs.started)}@{socket.gethostname()}"
    procs.worker()
    threading.Thread(target=listen, daemon=True).start()
    assert bound.wait(30)
    tid = client.admit(tenant, sid, "demo", "Weather in Lima?")
    client.wait_terminal(tenant, sid, tid)
    replies = app.control.enable_events(destination=[hostname], reply=True, timeout=30, limit=1)
    assert replies, "the worker did not answer enable_events"
    other = f"{sid}-b"
    second = client.admit(tenant, other, "demo", "Weather in Tunis?")
    client.wait_terminal(tenant, other, second)
    assert seen.wait(30), "no task-received event once events were enabled"
    # the worker's events leave in order: had the first turn's delivery, before a
    # monitor asked, sent its task-received, it would have come first
    assert events[0]["args"] == repr([tenant, other])
