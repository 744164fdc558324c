"""A Celery app configured like worker/app.py with one no-op task: the raw Celery
baseline that bench/scenarios/noop.py measures (turns are read against it).

    celery -A bench.noop_app worker --pool threads -c 16

The settings are copied from ``turnkeep.worker.app.app.conf`` (acks_late, reject on worker lost,
prefetch 1, threads pool, visibility timeout, task events, ...), on the same broker.
Only three things differ: the queue (so no-op tasks and turns never mix), no beat
schedule, and no start-up recovery scan. The task does one Redis round trip: INCR a
counter and record when, which is how the bench knows every task ran.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis
from celery import Celery
from celery.app.defaults import DEFAULTS
from celery.signals import worker_ready

import turnkeep.worker.app as product

QUEUE = "turnkeep.bench.noop"
TASK = "bench.noop"
COUNT_KEY = "bench:noop:count"
LAST_KEY = "bench:noop:last"

_MISSING = object()
#: settings copied verbatim from the product app: every one that differs from Celery's
#: default (what its app.conf.update set), except the beat schedule
COPIED = {
    k: v
    for k, v in product.app.conf.changes.items()
    if k not in ("beat_schedule", "deprecated_settings") and DEFAULTS.get(k, _MISSING) != v
}

app = Celery("turnkeep-bench-noop", broker=product.app.conf.broker_url)
app.conf.update(COPIED)
app.conf.update(task_default_queue=QUEUE)

# the product app's start-up recovery scan is connected on import; a no-op worker must
# not read the turnkeep database or enqueue turns
worker_ready.disconnect(product._scan_at_start)

_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["TURNKEEP_REDIS_URL"])
    return _client


@app.task(name=TASK)
def noop(*_: Any) -> None:
    pipe = _redis().pipeline(transaction=False)
    pipe.incr(COUNT_KEY)
    pipe.set(LAST_KEY, repr(time.time()))
    pipe.execute()
