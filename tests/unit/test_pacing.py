"""Provider rate limits in the worker (worker/pace.py) against the in-memory fakes and
buckets (store/testing/memory_pacer.py) on a clock the test moves: a call past its
slot gives back its attempt, lease and thread and is sent again for its time, the
attempt that resumes calls at once on the slot it booked, a 429 paces again instead
of failing, an early delivery is sent again without a statement, and nothing changes
for a call no limit is declared for. The declaration and the provider's headers
(runtime/ratelimits.py) and the journal's reading (runtime/pacing.py) are pure."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

import turnkeep.worker.pace
from tests.unit.fakes import FakeResources
from turnkeep import models, render
from turnkeep.runtime import pacing, plan, ratelimits
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.errors import ProviderRateLimited
from turnkeep.runtime.messages import Message, ModelRequest, ModelResponse, Role, Usage
from turnkeep.runtime.obs import faults
from turnkeep.runtime.providers.demo_model import demo_script
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.pacer import Mark
from turnkeep.store.records import EventRecord
from turnkeep.store.testing.memory_pacer import InMemoryPacer
from turnkeep.worker.lane import RunOutcome, run_session

T = "t1"
NOW = 1_800_000_000.0

#: what the scripted provider does on each call: None answers, a number is a 429
#: with that Retry-After (``"no-wait"``: a 429 naming none)
replies: list[Any] = []
calls: list[float] = []


@demo_script("pace-model")
def _paced_model(request: ModelRequest) -> ModelResponse:
    calls.append(turnkeep.worker.pace.clock())
    reply = replies.pop(0) if replies else None
    if reply is not None:
        retry_after = None if reply == "no-wait" else float(reply)
        raise ProviderRateLimited("demo: HTTP 429 rate_limit_exceeded", retry_after=retry_after)
    return ModelResponse(text="paced answer", usage=Usage(input_tokens=10, output_tokens=5))


def _agent(name: str, **kw: Any) -> AgentDefinition:
    return AgentDefinition(
        name=name, version="1", provider="demo", model="pace-model", instructions="i", **kw
    )


AGENT = _agent("paced")
BRIEF = _agent("brief", limits=Limits(max_seconds=5.0))
REGISTRY = AgentRegistry([AGENT, BRIEF])
#: one call every 10 s: the second call of a burst waits 10 s
LIMITS = json.dumps([{"provider": "demo", "model": "pace-model", "requests_per_minute": 6}])


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    c = Clock()
    monkeypatch.setattr(turnkeep.worker.pace, "clock", c)
    monkeypatch.setattr(faults, "_armed", {})
    replies.clear()
    calls.clear()
    yield c


def _ctx(clock: Clock, limits: str = LIMITS) -> FakeResources:
    return FakeResources(
        agents=REGISTRY,
        settings=Settings(worker={"max_attempts": 3}, pacing={"rate_limits": limits, "hold": 0.0}),
        pacer=InMemoryPacer(clock=clock),
    )


def _admit(ctx: FakeResources, sid: str, agent: AgentDefinition = AGENT) -> None:
    ctx.store.admit(T, sid, "u1", agent, "hello")


def _types(ctx: FakeResources, sid: str) -> list[tuple[str, int | None]]:
    return ctx.store.types(T, sid, "u1")


def _paced(ctx: FakeResources, sid: str) -> list[EventRecord]:
    return [e for e in ctx.store.journal(T, sid) if e.type == EventType.TURN_PACED]


STARTED, PACED = EventType.TURN_STARTED.value, EventType.TURN_PACED.value
MODEL, COMPLETED = EventType.MODEL_COMPLETED.value, EventType.TURN_COMPLETED.value


def test_a_call_past_its_slot_is_paced_then_called_on_its_booked_slot(clock: Clock) -> None:
    ctx = _ctx(clock)
    _admit(ctx, "first")
    _admit(ctx, "second")
    assert run_session(ctx, T, "first") is RunOutcome.RAN
    assert calls == [NOW]

    assert run_session(ctx, T, "second") is RunOutcome.PACED
    assert _types(ctx, "second")[-2:] == [(STARTED, None), (PACED, 1)]
    [pace] = _paced(ctx, "second")
    assert pace.data == {
        "until": datetime.fromtimestamp(NOW + 10, UTC).isoformat(),
        "wait_ms": 10_000,
        "limit": "demo/pace-model",
        "reason": "requests",
        "tokens": pace.data["tokens"],
    }
    assert pace.data["tokens"] > AGENT.reserve_output  # its estimate and its output
    turn = ctx.store.turn(T, "second", "u1")
    # the attempt is given back; the lease and the thread too; it comes back in 10 s
    assert turn.state is TurnState.RUNNING and turn.attempt == 0
    assert ctx.leases.held == {}
    assert ctx.woken == [(T, "second", 10.0)]
    mark = ctx.pacer.pending(T, "second")
    assert mark is not None and (mark.turn_id, mark.step, mark.reason) == ("u1", 1, "requests")
    assert calls == [NOW] and ctx.pacer.paced_now() == 1

    clock.now += 10
    booked = len(ctx.pacer.reservations)
    assert run_session(ctx, T, "second") is RunOutcome.RAN
    assert calls == [NOW, NOW + 10]
    assert len(ctx.pacer.reservations) == booked  # its slot was booked: none booked again
    turn = ctx.store.turn(T, "second", "u1")
    assert turn.state is TurnState.COMPLETED and turn.attempt == 1
    assert _types(ctx, "second")[1:] == [
        (STARTED, None),
        (PACED, 1),
        (STARTED, None),
        (MODEL, 1),
        (COMPLETED, None),
    ]
    done = next(e for e in ctx.store.journal(T, "second") if e.type == MODEL)
    assert "lost_tries" not in done.data  # the paced attempt made no call to charge


def test_the_wake_comes_half_a_hold_early_and_the_rest_is_waited_on_the_thread(
    clock: Clock,
) -> None:
    ctx = _ctx(clock)
    ctx.settings = Settings(worker={"max_attempts": 3}, pacing={"rate_limits": LIMITS, "hold": 0.4})
    _admit(ctx, "first")
    _admit(ctx, "second")
    run_session(ctx, T, "first")
    assert run_session(ctx, T, "second") is RunOutcome.PACED
    assert ctx.woken == [(T, "second", 9.8)]
    clock.now += 9.8
    began = time.monotonic()
    assert run_session(ctx, T, "second") is RunOutcome.RAN
    assert time.monotonic() - began >= 0.2  # the last 0.2 s on the thread
    assert ctx.store.turn(T, "second", "u1").state is TurnState.COMPLETED


def test_a_burst_keeps_its_order_and_never_books_two_calls_in_one_slot(clock: Clock) -> None:
    ctx = _ctx(clock)
    sessions = [f"s{i}" for i in range(5)]
    for sid in sessions:
        _admit(ctx, sid)
    outcomes = [run_session(ctx, T, sid) for sid in sessions]
    assert outcomes == [RunOutcome.RAN] + [RunOutcome.PACED] * 4
    assert [w for _, _, w in ctx.woken] == [10.0, 20.0, 30.0, 40.0]
    for _, sid, wait in list(ctx.woken):
        clock.now = NOW + wait
        assert run_session(ctx, T, sid) is RunOutcome.RAN
    assert calls == [NOW + 10.0 * i for i in range(5)]
    assert all(ctx.store.turn(T, sid, "u1").state is TurnState.COMPLETED for sid in sessions)


def test_an_early_delivery_is_sent_again_for_the_slot_without_a_statement(clock: Clock) -> None:
    ctx = _ctx(clock)
    _admit(ctx, "first")
    _admit(ctx, "second")
    run_session(ctx, T, "first")
    run_session(ctx, T, "second")
    statements = sum(ctx.store.calls.values())
    grants = len(ctx.leases.grants)

    clock.now += 4  # a duplicate (another admission's enqueue, say) comes 6 s early
    assert run_session(ctx, T, "second") is RunOutcome.PACED
    assert ctx.woken[-1] == (T, "second", 6.0)
    assert len(ctx.leases.grants) == grants  # no lease taken
    assert sum(ctx.store.calls.values()) == statements + 1  # one read: is it cancelled?
    assert ctx.store.calls["get_turn"] == 1
    assert calls == [NOW]


def test_a_paced_turn_asked_to_stop_is_cancelled_at_once(clock: Clock) -> None:
    ctx = _ctx(clock)
    _admit(ctx, "first")
    _admit(ctx, "second")
    run_session(ctx, T, "first")
    run_session(ctx, T, "second")
    ctx.store.request_cancel(T, "second", "u1")

    assert run_session(ctx, T, "second") is RunOutcome.RAN  # well before its slot
    assert ctx.store.turn(T, "second", "u1").state is TurnState.CANCELLED
    assert calls == [NOW]


def test_a_429_under_a_limit_paces_again_and_never_fails(clock: Clock) -> None:
    # a limit the provider does not keep to (it refuses far below it)
    loose = json.dumps([{"provider": "demo", "model": "pace-model", "requests_per_minute": 600}])
    ctx = _ctx(clock, limits=loose)
    replies.extend([30, "no-wait"])  # a 429 asking for 30 s, then one asking nothing
    _admit(ctx, "s")

    assert run_session(ctx, T, "s") is RunOutcome.PACED
    [pace] = _paced(ctx, "s")
    assert (pace.data["reason"], pace.data["refusals"], pace.data["wait_ms"]) == (
        "provider",
        1,
        30_000,
    )
    clock.now += 30
    assert run_session(ctx, T, "s") is RunOutcome.PACED
    second = _paced(ctx, "s")[-1]
    # no Retry-After: the backoff doubles with the call's refusals (2 s, then 4 s)
    assert (second.data["refusals"], second.data["wait_ms"]) == (2, 4_000)
    clock.now += 4
    assert run_session(ctx, T, "s") is RunOutcome.RAN
    turn = ctx.store.turn(T, "s", "u1")
    assert turn.state is TurnState.COMPLETED and turn.attempt == 1
    assert calls == [NOW, NOW + 30, NOW + 34]


def test_a_slot_past_the_turns_time_bound_ends_it_with_its_budget(clock: Clock) -> None:
    ctx = _ctx(clock)
    _admit(ctx, "first")
    _admit(ctx, "brief", BRIEF)  # 5 s of wall clock; the slot is 10 s ahead
    run_session(ctx, T, "first")

    assert run_session(ctx, T, "brief") is RunOutcome.RAN
    turn = ctx.store.turn(T, "brief", "u1")
    assert turn.state is TurnState.FAILED and turn.error is not None
    assert turn.error["code"] == "budget_exceeded"
    assert "demo/pace-model" in turn.error["message"]
    assert _paced(ctx, "brief") == [] and ctx.woken == []


def test_no_limit_declared_reads_and_writes_nothing_more(clock: Clock) -> None:
    ctx = _ctx(clock, limits="")
    _admit(ctx, "s")
    ctx.pacer.mark(T, "s", _mark(), until_ms=int((NOW + 60) * 1000), ttl=60)

    assert run_session(ctx, T, "s") is RunOutcome.RAN  # a stale mark is not read
    assert ctx.pacer.reservations == [] and ctx.woken == []
    assert ctx.store.calls["start"] == 1 and ctx.store.calls["append"] == 1
    assert sum(ctx.store.calls.values()) == 2


def test_a_limit_for_another_model_leaves_the_call_alone(clock: Clock) -> None:
    other = json.dumps([{"provider": "demo", "model": "other", "requests_per_minute": 1}])
    ctx = _ctx(clock, limits=other)
    _admit(ctx, "s")
    assert run_session(ctx, T, "s") is RunOutcome.RAN
    assert ctx.pacer.reservations == []


def _mark() -> Mark:
    return Mark(turn_id="u1", step=1, until="2027-01-15T08:00:00+00:00", limit="x", reason="r")


# -- the declaration ----------------------------------------------------------------


def test_the_declaration_parses_and_names_what_is_wrong() -> None:
    [lim] = ratelimits.parse(
        '[{"provider": "openai", "model": "gpt-4o", "requests_per_minute": 500,'
        ' "tokens_per_minute": 30000, "burst_seconds": 2}]'
    )
    assert (lim.name, lim.request_interval_ms, lim.token_interval_ms) == (
        "openai/gpt-4o",
        120.0,
        2.0,
    )
    assert ratelimits.parse("") == ()
    bad = {
        "{}": "a JSON list",
        "[1]": "is not an object",
        '[{"provider": "openai"}]': "requests_per_minute or tokens_per_minute",
        '[{"provider": "openai", "requests_per_minute": 0}]': "must be above 0",
        '[{"provider": "openai", "requests_per_minute": true}]': "a number",
        '[{"provider": "openai", "rpm": 5}]': "unknown key 'rpm'",
        '[{"requests_per_minute": 5}]': "provider",
        json.dumps(
            [{"provider": "a", "requests_per_minute": 5}, {"provider": "a", "tokens_per_minute": 5}]
        ): "declared twice",
        '[{"provider": "a", "name": "a b", "requests_per_minute": 5}]': "name must match",
    }
    for raw, said in bad.items():
        with pytest.raises(ValueError, match=said):
            ratelimits.parse(raw)


def test_a_call_counts_against_its_models_limit_and_its_providers() -> None:
    raw = json.dumps(
        [
            {"provider": "openai", "model": "gpt-4o", "requests_per_minute": 5},
            {"provider": "openai", "tokens_per_minute": 9000},
            {"provider": "anthropic", "requests_per_minute": 5},
        ]
    )
    assert [lim.name for lim in ratelimits.applicable(raw, "openai", "gpt-4o")] == [
        "openai/gpt-4o",
        "openai/*",
    ]
    assert [lim.name for lim in ratelimits.applicable(raw, "openai", "o3")] == ["openai/*"]
    assert ratelimits.applicable("", "openai", "gpt-4o") == ()


def test_the_bucket_is_the_endpoint_and_a_digest_of_the_key_never_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from turnkeep.runtime.providers.registry import endpoint_id

    [lim] = ratelimits.parse('[{"provider": "openai", "requests_per_minute": 5}]')
    monkeypatch.setenv("TURNKEEP_OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TURNKEEP_OPENAI_API_KEY", "sk-secret-one")
    one = endpoint_id("openai")
    assert "sk-secret-one" not in one and one.startswith("http://127.0.0.1:1/v1#")
    monkeypatch.setenv("TURNKEEP_OPENAI_API_KEY", "sk-secret-two")
    two = endpoint_id("openai")
    assert ratelimits.bucket_id(lim, one) != ratelimits.bucket_id(lim, two)
    assert endpoint_id("demo") == "demo"


def test_the_reserved_tokens_are_the_estimate_and_the_output_asked_for() -> None:
    request = ModelRequest(model="m", instructions="", messages=(Message(Role.USER, "hi"),))
    assert ratelimits.reserved_tokens(request, 100, 4096) == 4196
    capped = ModelRequest(model="m", instructions="", messages=(), options={"max_tokens": 300})
    assert ratelimits.reserved_tokens(capped, 100, 4096) == 400


def test_a_provider_reports_a_limit_used_up_in_either_wire_format() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    openai = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0.5s",
        "x-ratelimit-remaining-tokens": "1200",
        "x-ratelimit-reset-tokens": "20ms",
    }
    assert ratelimits.exhausted_for(openai, now) == 360.5
    assert ratelimits.exhausted_for({**openai, "x-ratelimit-remaining-requests": "3"}, now) is None
    anthropic = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": "2026-01-01T00:00:42Z",
    }
    assert ratelimits.exhausted_for(anthropic, now) == 42.0
    assert ratelimits.exhausted_for({"x-ratelimit-remaining-requests": "0"}, now) is None
    garbled = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "soon"}
    assert ratelimits.exhausted_for(garbled, now) is None


# -- the journal's reading ------------------------------------------------------------


def _e(seq: int, type: EventType, step: int | None = None, **data: Any) -> EventRecord:
    return EventRecord(
        tenant_id=T,
        session_id="s",
        seq=seq,
        turn_id="u1",
        type=type.value,
        step=step,
        fence=1,
        data=data,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


PACE = {"until": "2026-01-01T00:00:10+00:00", "limit": "x", "reason": "requests", "tokens": 9}


def test_the_resuming_attempt_finds_its_slot_booked_and_no_other() -> None:
    paced = [
        _e(1, EventType.TURN_ACCEPTED),
        _e(2, EventType.TURN_STARTED),
        _e(3, EventType.TURN_PACED, 1, **PACE),
        _e(4, EventType.TURN_CANCEL_REQUESTED),
        _e(5, EventType.TURN_STARTED),
    ]
    found = pacing.booked(paced, 1)
    assert found is not None and found.until == PACE["until"]
    assert pacing.booked(paced, 2) is None
    later = [*paced, _e(6, EventType.MODEL_COMPLETED, 1), _e(7, EventType.TURN_STARTED)]
    assert pacing.booked(later, 1) is None
    at = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert pacing.paced_now(paced[:4], at) is not None
    assert pacing.paced_now(paced, at) is None  # a worker started it again
    assert pacing.paced_now(paced[:3], datetime(2026, 1, 1, 0, 0, 11, tzinfo=UTC)) is None


def test_a_paced_attempt_is_no_lost_try() -> None:
    started = [_e(1, EventType.TURN_ACCEPTED), _e(2, EventType.TURN_STARTED)]
    paced = [*started, _e(3, EventType.TURN_PACED, 1, **PACE), _e(4, EventType.TURN_STARTED)]
    assert plan.lost_tries(paced) == 0
    crashed = [*paced, _e(5, EventType.TURN_STARTED)]  # the resumed attempt died
    assert plan.lost_tries(crashed) == 1


def test_turnkeep_show_says_a_turn_is_paced() -> None:
    turn = models.Turn.model_validate(
        {
            "session_id": "s",
            "turn_id": "u1",
            "state": "running",
            "agent": "paced",
            "attempt": 0,
            "accepted_seq": 1,
            "created_at": "2026-12-05T21:40:00Z",
            "updated_at": "2026-12-05T21:40:00Z",
            "paced": {
                "until": "2026-12-05T21:40:12Z",
                "limit": "openai/gpt-4o-mini",
                "reason": "tokens",
                "step": 1,
            },
        }
    )
    assert "paced until 2026-12-05 21:40:12: openai/gpt-4o-mini" in render.turn_text(turn).plain
