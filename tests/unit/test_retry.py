"""RetryingProvider as pure logic (injected sleep and jitter), plus Retry-After parsing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from turnkeep.runtime.errors import (
    ContextOverflow,
    ModelError,
    PermanentModelError,
    TransientModelError,
)
from turnkeep.runtime.messages import Message, ModelRequest, ModelResponse, Role
from turnkeep.runtime.providers.base import DeltaSink, StopCheck
from turnkeep.runtime.providers.http import parse_retry_after
from turnkeep.runtime.providers.retry import RetryingProvider
from turnkeep.runtime.signals import ModelCallCancelled

REQUEST = ModelRequest(
    model="m", instructions="", messages=(Message(role=Role.USER, content="hi"),)
)
OK = ModelResponse(text="done")


class Scripted:
    """A provider that raises the scripted errors in order, then answers OK."""

    name = "scripted"

    def __init__(self, *errors: ModelError) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.seen_stop: list[StopCheck | None] = []

    def complete(
        self,
        request: ModelRequest,
        *,
        on_delta: DeltaSink | None = None,
        should_stop: StopCheck | None = None,
    ) -> ModelResponse:
        self.calls += 1
        self.seen_stop.append(should_stop)
        if self.errors:
            raise self.errors.pop(0)
        return OK


def make(
    inner: Scripted,
    rng: float = 0.5,
    *,
    attempts: int = 3,
    base_delay: float = 2.0,
    max_delay: float = 60.0,
) -> tuple[RetryingProvider, list[float]]:
    sleeps: list[float] = []
    provider = RetryingProvider(
        inner,
        attempts=attempts,
        base_delay=base_delay,
        max_delay=max_delay,
        sleep=sleeps.append,
        rng=lambda: rng,
    )
    return provider, sleeps


def transient(retry_after: float | None = None) -> TransientModelError:
    return TransientModelError("HTTP 503", retry_after=retry_after)


def test_success_first_time_never_sleeps() -> None:
    inner = Scripted()
    provider, sleeps = make(inner)
    assert provider.complete(REQUEST) is OK
    assert inner.calls == 1
    assert sleeps == []
    assert provider.name == "scripted"


def test_recovers_after_two_transient_failures() -> None:
    inner = Scripted(transient(), transient())
    provider, sleeps = make(inner)
    assert provider.complete(REQUEST) is OK
    assert inner.calls == 3
    assert sleeps == [2.0, 4.0]


def test_three_retries_then_the_last_error_is_raised() -> None:
    errors = [transient() for _ in range(5)]
    inner = Scripted(*errors)
    provider, sleeps = make(inner)
    with pytest.raises(TransientModelError) as info:
        provider.complete(REQUEST)
    assert inner.calls == 4
    assert info.value is errors[3]
    assert sleeps == [2.0, 4.0, 8.0]


def test_attempts_is_the_number_of_retries() -> None:
    inner = Scripted(*(transient() for _ in range(10)))
    provider, _ = make(inner, attempts=5)
    with pytest.raises(TransientModelError):
        provider.complete(REQUEST)
    assert inner.calls == 6


@pytest.mark.parametrize(
    ("rng", "expected"),
    [(0.0, [1.6, 3.2, 6.4]), (0.999999, [2.4, 4.8, 9.6])],
)
def test_jitter_stays_within_twenty_percent(rng: float, expected: list[float]) -> None:
    inner = Scripted(*(transient() for _ in range(4)))
    provider, sleeps = make(inner, rng=rng)
    with pytest.raises(TransientModelError):
        provider.complete(REQUEST)
    assert sleeps == pytest.approx(expected, rel=1e-5)


def test_backoff_is_capped_at_max_delay() -> None:
    inner = Scripted(*(transient() for _ in range(4)))
    provider, sleeps = make(inner, base_delay=2.0, max_delay=5.0, rng=0.999999)
    with pytest.raises(TransientModelError):
        provider.complete(REQUEST)
    assert sleeps == pytest.approx([2.4, 4.8, 5.0], rel=1e-5)


def test_retry_after_is_honoured_when_longer_than_backoff() -> None:
    inner = Scripted(transient(retry_after=7.0), transient(retry_after=1.0))
    provider, sleeps = make(inner)
    assert provider.complete(REQUEST) is OK
    # 7s asked beats the 2s backoff; 1s asked loses to the 4s backoff
    assert sleeps == [7.0, 4.0]


def test_retry_after_beyond_max_delay_gives_up_without_sleeping() -> None:
    err = transient(retry_after=3600.0)
    inner = Scripted(err)
    provider, sleeps = make(inner)
    with pytest.raises(TransientModelError) as info:
        provider.complete(REQUEST)
    assert info.value is err
    assert inner.calls == 1
    assert sleeps == []


@pytest.mark.parametrize(
    "error",
    [
        PermanentModelError("HTTP 401"),
        ContextOverflow("too long"),
        ModelCallCancelled("stop"),
    ],
)
def test_non_transient_errors_are_not_retried(error: ModelError) -> None:
    inner = Scripted(error, transient())
    provider, sleeps = make(inner)
    with pytest.raises(type(error)) as info:
        provider.complete(REQUEST)
    assert info.value is error
    assert inner.calls == 1
    assert sleeps == []


def test_permanent_after_transient_stops_retrying() -> None:
    perm = PermanentModelError("HTTP 400")
    inner = Scripted(transient(), perm, transient())
    provider, sleeps = make(inner)
    with pytest.raises(PermanentModelError):
        provider.complete(REQUEST)
    assert inner.calls == 2
    assert sleeps == [2.0]


def test_cancellation_during_backoff_stops_between_slices() -> None:
    inner = Scripted(transient(), transient())
    sleeps: list[float] = []
    stop_after: Callable[[], bool] = lambda: sum(sleeps) >= 1.0  # noqa: E731
    provider = RetryingProvider(inner, sleep=sleeps.append, rng=lambda: 0.5)
    with pytest.raises(ModelCallCancelled):
        provider.complete(REQUEST, should_stop=stop_after)
    assert inner.calls == 1
    assert sum(sleeps) == pytest.approx(1.0)
    assert all(s <= 0.25 for s in sleeps)
    assert inner.seen_stop == [stop_after]


def test_cancellable_backoff_sleeps_the_full_delay_when_not_cancelled() -> None:
    inner = Scripted(transient())
    sleeps: list[float] = []
    provider = RetryingProvider(inner, sleep=sleeps.append, rng=lambda: 0.5)
    assert provider.complete(REQUEST, should_stop=lambda: False) is OK
    assert sum(sleeps) == pytest.approx(2.0)
    assert inner.calls == 2


def test_negative_settings_are_rejected() -> None:
    with pytest.raises(ValueError):
        RetryingProvider(Scripted(), attempts=-1)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": " 1.5 "}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "junk", "retry-after": "9"}, 9.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),  # already past
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-3"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after(headers, now=lambda: now) == expected
