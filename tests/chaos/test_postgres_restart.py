"""Postgres restarts (pg_ctl stop -m fast, then start) on a private cluster while turns
run and a client keeps admitting over the real API (uvicorn subprocess). While it is
down the API answers 503 with the problem code "unavailable"; nothing it accepted
(202/200) is lost; every accepted turn completes once Postgres is back.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from tests.chaos.conftest import ApiHandle, Chaos, Supervisor, turn_body
from tests.invariants import effects_at_most_once
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState

SESSIONS = 4
MAX_SUBMISSIONS = 40


class Submitter:
    """Admits turns with fresh Idempotency-Keys every ``period`` seconds, bounded in
    count and time, and sorts the answers."""

    def __init__(self, api: ApiHandle, *, period: float = 0.25, seconds: float = 15.0) -> None:
        self.api = api
        self.period = period
        self.seconds = seconds
        self.accepted: list[tuple[str, str]] = []
        self.refused: list[tuple[str, str]] = []
        self.unexpected: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="submitter", daemon=True)

    def start(self) -> Submitter:
        self._thread.start()
        return self

    def _run(self) -> None:
        end = time.monotonic() + self.seconds
        with httpx.Client(base_url=self.api.url, headers=self.api.headers, timeout=30) as c:
            for i in range(MAX_SUBMISSIONS):
                if self._stop.is_set() or time.monotonic() > end:
                    return
                sid, key = f"s-pg-{i % SESSIONS}", f"k-{i}"
                self.sort(sid, key, post(c, sid, key))
                self._stop.wait(self.period)

    def sort(self, sid: str, key: str, r: httpx.Response | Exception) -> None:
        if isinstance(r, httpx.Response) and r.status_code in (200, 202):
            if r.json().get("turn_id") == key:
                self.accepted.append((sid, key))
            else:
                self.unexpected.append(f"{key}: answered another turn: {r.text}")
        elif isinstance(r, httpx.Response) and r.status_code == 503:
            if is_unavailable(r):
                self.refused.append((sid, key))
            else:
                self.unexpected.append(f"{key}: 503 {r.text}")
        else:
            self.unexpected.append(f"{key}: {r if isinstance(r, Exception) else r.text}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def post(c: httpx.Client, sid: str, key: str) -> httpx.Response | Exception:
    try:
        return c.post(
            f"/v1/sessions/{sid}/turns",
            json=turn_body("steps=2"),
            headers={"Idempotency-Key": key},
        )
    except httpx.HTTPError as exc:
        return exc


def is_unavailable(r: httpx.Response) -> bool:
    body: dict[str, Any] = r.json()
    return (
        r.status_code == 503
        and r.headers["content-type"].startswith("application/problem+json")
        and body.get("code") == "unavailable"
    )


@pytest.mark.chaos
def test_postgres_restart_mid_step_api_503_then_every_accepted_turn_completes(
    pg_chaos: Chaos, private_pg: Any, supervisor: Supervisor
) -> None:
    chaos = pg_chaos
    slow = {"TURNKEEP_TEST_TOOL_SLEEP": "0.3", "TURNKEEP_DEMO_LATENCY": "0.2"}
    supervisor.worker(slow)
    supervisor.worker(slow)
    chaos.procs.beat()
    api = chaos.api()
    submitter = Submitter(api).start()
    # mid-step: some turn has started and is stepping
    wait_for(lambda: len(submitter.accepted) >= 4, 30, what="first admissions")
    wait_for(
        lambda: any(
            chaos.store.reads.get_turn(chaos.tenant, sid, key).state is TurnState.RUNNING
            for sid, key in list(submitter.accepted)
        ),
        30,
        what="a turn running",
    )
    private_pg.stop("fast")
    with httpx.Client(base_url=api.url, headers=api.headers, timeout=30) as c:
        down = post(c, "s-pg-down", "k-down")
        assert isinstance(down, httpx.Response) and is_unavailable(down), down
        assert down.headers.get("retry-after") == "1"
        read = c.get("/v1/sessions/s-pg-0")
        assert is_unavailable(read), read.text
        time.sleep(3.0)  # keep it down past the lease TTL while the submitter goes on
        private_pg.start()
        submitter.stop()
        assert submitter.unexpected == []
        assert submitter.refused, "no admission hit the outage"
        # a refused admission committed nothing it could not replay: retry each key
        # as a client does on 503 (the first statements on pooled connections the
        # restart killed may still answer 503 once)
        for sid, key in [("s-pg-down", "k-down"), *submitter.refused]:
            for _ in range(20):
                again = post(c, sid, key)
                assert isinstance(again, httpx.Response), again
                if again.status_code in (200, 202):
                    break
                assert is_unavailable(again), again.text
                time.sleep(0.5)
            assert again.status_code in (200, 202) and again.json()["turn_id"] == key
            submitter.accepted.append((sid, key))
    chaos.accepted = [(chaos.tenant, sid, key) for sid, key in submitter.accepted]
    chaos.wait_all_terminal(timeout=120)
    for key in chaos.accepted:
        turn = chaos.store.reads.get_turn(*key)
        assert turn.state is TurnState.COMPLETED, (key, turn.state, turn.error)
    # a count tool running while Postgres was down failed (its effect table is there
    # too) and the model saw the error; every other effect counted exactly once
    assert chaos.check(effects_table=False) == []
    assert effects_at_most_once(chaos.database_url, tenants=[chaos.tenant]) == []
    print(
        f"accepted={len(chaos.accepted)} refused={len(submitter.refused)} "
        f"restarts={supervisor.stop()}"
    )
