"""The shared rate-limit buckets and pace marks held to one behaviour: the Lua scripts
on a real Redis (store/pacer.py) and the in-memory buckets the worker's unit tests use
(store/testing/memory_pacer.py), case by case. Waits are read to a tolerance: the
cases run on the wall clock, Redis's and this process's."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from turnkeep.runtime.ratelimits import RateLimit
from turnkeep.store.pacer import Bucket, Mark, Pacer
from turnkeep.store.testing.memory_pacer import InMemoryPacer

#: a case's own time may pass between two calls
SLACK = 0.5


@pytest.fixture(params=["memory", "redis"])
def pacer(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemoryPacer()
        return
    url = request.getfixturevalue("redis_url")  # this module's Redis prefix
    client = redis.Redis.from_url(url)
    yield Pacer(client)
    client.close()


def bucket(name: str = "lim", **rates: float) -> Bucket:
    return Bucket(RateLimit(name=name, provider="p", **rates), uuid.uuid4().hex)


def near(value: float, expected: float) -> bool:
    return expected - SLACK <= value <= expected + SLACK


def test_the_first_call_goes_at_once_the_next_one_interval_later(pacer: Any) -> None:
    b = bucket(requests_per_minute=6)
    first = pacer.reserve([b], 10)
    assert first.booked and first.wait == 0 and first.reason == ""
    second = pacer.reserve([b], 10)
    assert second.booked and near(second.wait, 10) and second.reason == "requests"
    assert second.limit == "lim"
    assert near(second.until_ms / 1000 - time.time(), 10)
    third = pacer.reserve([b], 10)
    assert near(third.wait, 20)  # each keeps its place: no two calls in one slot


def test_tokens_are_paced_by_what_each_call_books(pacer: Any) -> None:
    b = bucket(tokens_per_minute=600)  # 100 ms a token
    assert pacer.reserve([b], 50).wait == 0
    nxt = pacer.reserve([b], 10)
    assert near(nxt.wait, 5) and nxt.reason == "tokens"


def test_a_call_that_used_less_than_it_booked_gives_the_rest_back(pacer: Any) -> None:
    b = bucket(tokens_per_minute=600)
    pacer.reserve([b], 50)
    pacer.settle([b], 50, 10)
    assert near(pacer.reserve([b], 1).wait, 1)
    more = bucket(tokens_per_minute=600)
    pacer.reserve([more], 10)
    pacer.settle([more], 10, 40)  # and one that used more is charged the rest
    assert near(pacer.reserve([more], 1).wait, 4)


def test_a_slot_past_the_wait_accepted_is_not_booked(pacer: Any) -> None:
    b = bucket(requests_per_minute=6)
    pacer.reserve([b], 1)
    refused = pacer.reserve([b], 1, max_wait=5)
    assert not refused.booked and near(refused.wait, 10) and refused.limit == "lim"
    assert near(pacer.reserve([b], 1).wait, 10)  # the refusal took nothing


def test_a_wait_the_provider_asked_for_holds_every_call(pacer: Any) -> None:
    b = bucket(requests_per_minute=600)
    pacer.block([b], 7)
    found = pacer.reserve([b], 1)
    assert near(found.wait, 7) and found.reason == "provider"
    pacer.block([b], 2)  # a shorter one does not shorten it
    assert near(pacer.reserve([b], 1).wait, 7.1)


def test_the_slowest_of_a_calls_limits_sets_its_slot_and_is_named(pacer: Any) -> None:
    model = bucket("model", requests_per_minute=60)
    everything = bucket("all", requests_per_minute=6)
    pacer.reserve([model, everything], 1)
    found = pacer.reserve([model, everything], 1)
    assert near(found.wait, 10) and found.limit == "all"
    # the model's own bucket was booked at the same slot: it moved too
    assert near(pacer.reserve([model], 1).wait, 11)


def test_a_burst_lets_that_many_seconds_of_calls_through_at_once(pacer: Any) -> None:
    b = bucket(requests_per_minute=6, burst_seconds=20)
    waits = [pacer.reserve([b], 1).wait for _ in range(4)]
    assert waits[:3] == [0, 0, 0] and near(waits[3], 10)


def test_a_sessions_pace_mark_lives_its_ttl(pacer: Any) -> None:
    tenant, sid = "t", uuid.uuid4().hex
    assert pacer.pending(tenant, sid) is None
    mark = Mark(turn_id="u1", step=3, until="2030-01-01T00:00:00+00:00", limit="l", reason="r")
    until_ms = int((time.time() + 60) * 1000)
    before = pacer.paced_now()
    pacer.mark(tenant, sid, mark, until_ms=until_ms, ttl=0.3)
    assert pacer.pending(tenant, sid) == mark
    assert pacer.paced_now() == before + 1
    time.sleep(0.4)
    assert pacer.pending(tenant, sid) is None
