"""A worker's warm shutdown ends within its grace (worker/shutdown.py), even when the
Redis it consumes from goes away in the middle of it, as ``turnkeep dev`` once stopped
its embedded servers under its workers: Celery's own shutdown would wait on that broker
(and on the turn in hand) for ever, deaf to further SIGTERMs. What the worker held is the
recovery scan's, as after a crash."""

from __future__ import annotations

import signal
import time

from tests.conftest import Client
from tests.procs import wait_for

#: short, for the test; its tool call sleeps far longer
GRACE = 6.0


def test_a_worker_whose_redis_goes_in_its_warm_shutdown_exits_within_its_grace(
    procs, store, tenant, sid
) -> None:
    redis = procs.redis_server()
    url = f"redis://127.0.0.1:{redis.port}/0"
    worker = procs.worker(
        {
            "TURNKEEP_REDIS_URL": url,
            "TURNKEEP_WORKER_SHUTDOWN_GRACE": str(GRACE),
            # the turn's tool call is still running when the shutdown begins
            "TURNKEEP_TEST_TOOL_SLEEP": "120",
        }
    )
    Client(store, url).admit(tenant, sid, "counter", "steps=1")
    wait_for(lambda: "run_session" in worker.text(), 30, what="the turn taken")
    signalled = time.monotonic()
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "Warm shutdown" in worker.text(), 10, what="the warm shutdown began")
    redis.popen.kill()
    redis.popen.wait(10)
    worker.popen.wait(GRACE + 10)
    took = time.monotonic() - signalled
    assert took < GRACE + 3, worker.text()[-3000:]
    assert "exiting now; the recovery scan takes what this worker held" in worker.text()
