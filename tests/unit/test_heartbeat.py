"""The lease keeper's decisions (worker/heartbeat.py) against a fake lease manager and
a probe whose clock the test sets: renew while Postgres answers, let every lease go
(lost first, then released) once it has been silent for longer than the TTL."""

from __future__ import annotations

import time

import pytest
import redis

from turnkeep.runtime.signals import LeaseLost
from turnkeep.store.errors import Unavailable
from turnkeep.store.lease import Lease, Released
from turnkeep.worker.heartbeat import Heartbeat, LeaseKeeper, PostgresProbe

#: long enough that the keeper's own thread never wakes during a test
TTL = 600.0


class FakeLeaseManager:
    def __init__(self, *, release_fails: bool = False) -> None:
        self.ttl = TTL
        self.renewed: list[list[Lease]] = []
        self.released: list[Lease] = []
        self.release_fails = release_fails

    def renew_many(self, leases: list[Lease]) -> list[bool]:
        self.renewed.append(list(leases))
        return [True] * len(leases)

    def release(self, lease: Lease) -> Released:
        if self.release_fails:
            raise redis.ConnectionError("redis is down too")
        self.released.append(lease)
        return Released(released=True, rerun=False)


def _ping() -> None:
    return None


class _ByHand(LeaseKeeper):
    """A keeper whose thread does nothing: each test ticks it by hand (a real thread
    would tick on its own, and outlive the test)."""

    def _run(self) -> None:
        return None


def _world(
    silent: float, **kw: bool
) -> tuple[FakeLeaseManager, PostgresProbe, LeaseKeeper, list[Heartbeat]]:
    leases = FakeLeaseManager(**kw)
    probe = PostgresProbe(_ping, interval=TTL / 3)
    probe.answered = time.monotonic() - silent
    keeper = _ByHand(leases, probe)  # type: ignore[arg-type]
    beats = []
    for i in (1, 2):
        hb = Heartbeat(
            leases,  # type: ignore[arg-type]
            Lease("t1", f"s{i}", "w:1", i),
            granted_at=time.monotonic(),
            probe=probe,
        )
        keeper.add(hb)
        beats.append(hb)
    return leases, probe, keeper, beats


def test_renews_while_postgres_answers():
    leases, _, keeper, beats = _world(silent=0.0)

    keeper.tick()

    assert [sorted(lease.session_id for lease in batch) for batch in leases.renewed] == [
        ["s1", "s2"]
    ]
    assert leases.released == []
    assert not any(hb.lost for hb in beats)


def test_silent_for_less_than_the_ttl_keeps_renewing():
    leases, _, keeper, beats = _world(silent=TTL * 0.9)

    keeper.tick()

    assert len(leases.renewed) == 1 and leases.released == []
    assert not any(hb.lost for hb in beats)


def test_silent_past_the_ttl_lets_every_lease_go_for_good():
    leases, probe, keeper, beats = _world(silent=TTL + 1)

    keeper.tick()

    assert leases.renewed == []
    assert sorted(lease.session_id for lease in leases.released) == ["s1", "s2"]
    for hb in beats:
        assert hb.lost
        with pytest.raises(LeaseLost):
            hb.check()
    # sticky: Postgres answering again revives nothing, and nothing is renewed
    probe.answered = time.monotonic()
    keeper.tick()
    assert leases.renewed == [] and len(leases.released) == 2
    assert all(hb.lost for hb in beats)


def test_the_half_beat_lets_go_but_does_not_renew():
    leases, _, keeper, _ = _world(silent=0.0)
    keeper.tick(renew=False)
    assert leases.renewed == []

    leases, _, keeper, beats = _world(silent=TTL + 1)
    keeper.tick(renew=False)
    assert len(leases.released) == 2 and all(hb.lost for hb in beats)


def test_a_failed_release_still_stops_the_writes():
    # Redis unreachable as well: the leases run out by themselves a TTL later
    leases, _, keeper, beats = _world(silent=TTL + 1, release_fails=True)

    keeper.tick()

    assert leases.released == [] and all(hb.lost for hb in beats)


def test_probe_clock_moves_only_on_an_answer():
    answers = [None, Unavailable("postgres is unavailable")]

    def ping() -> None:
        answer = answers.pop(0)
        if answer is not None:
            raise answer

    probe = PostgresProbe(ping, interval=TTL / 3)
    probe.answered = time.monotonic() - 5
    assert probe.round_trip() is True
    assert probe.silent_for() < 4  # the clock reset: no longer the 5 s set above

    before = probe.answered
    probe.answered = before - 5
    assert probe.round_trip() is False
    assert probe.silent_for() >= 5


class _LosesOne(FakeLeaseManager):
    """Renews every lease but the one of session ``gone`` (someone else holds it now)."""

    def __init__(self, gone: str) -> None:
        super().__init__()
        self.gone = gone

    def renew_many(self, leases: list[Lease]) -> list[bool]:
        self.renewed.append(list(leases))
        return [lease.session_id != self.gone for lease in leases]


def test_one_round_trip_for_many_leases_a_lost_one_told_to_its_own_turn_only():
    leases = _LosesOne(gone="s7")
    keeper = _ByHand(leases, None)  # type: ignore[arg-type]
    beats = {}
    for i in range(50):
        hb = Heartbeat(
            leases,  # type: ignore[arg-type]
            Lease("t1", f"s{i}", "w:1", i + 1),
            granted_at=time.monotonic(),
        )
        keeper.add(hb)
        beats[f"s{i}"] = hb
    keeper.remove(beats["s3"])  # released: not renewed from now on

    keeper.tick()

    assert len(leases.renewed) == 1  # one pipelined call for all of them
    renewed = {lease.session_id for lease in leases.renewed[0]}
    assert renewed == set(beats) - {"s3"}
    assert [s for s, hb in beats.items() if hb.lost] == ["s7"]
    with pytest.raises(LeaseLost):
        beats["s7"].check()
    beats["s8"].check()

    keeper.tick()  # the lost lease is not renewed again either
    assert {lease.session_id for lease in leases.renewed[1]} == set(beats) - {"s3", "s7"}
