"""Every metric a worker exports, in the process's one registry, served over HTTP at
``http://TURNKEEP_METRICS_ADDRESS:TURNKEEP_METRICS_PORT/metrics`` once the worker
starts (``serve``, from worker/app.py); no port set, none is served
(docs/operations.md lists them all).

Labels carry agent names, states, error codes and step kinds, never ids: the label sets
are few, and each one's child is looked up once and kept (``labels()`` takes a lock
and builds a key on every call). Celery's threads pool runs every turn of a worker in
this one process, so one registry sees them all (a prefork pool's children would each
count on their own, unexported).
"""

from __future__ import annotations

import logging
import threading

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from turnkeep.runtime.settings import Settings

log = logging.getLogger(__name__)

#: a step is a model call (seconds to minutes), a tool run or a checkpoint (milliseconds)
STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)

TURNS_FINISHED = Counter(
    "turnkeep_turns_finished",
    "Turns this process settled terminal, by agent, state and error code ('' for none)",
    ["agent", "state", "code"],
    registry=REGISTRY,
)
STEP_SECONDS = Histogram(
    "turnkeep_step_seconds",
    "Wall time of a model call, a tool run (all its tries) or a checkpoint commit",
    ["kind", "agent"],
    buckets=STEP_BUCKETS,
    registry=REGISTRY,
)
LEASE_TAKEOVERS = Counter(
    "turnkeep_lease_takeovers",
    "Turns this worker started again after another lease holder's attempt stopped "
    "unsettled (a dead worker, or one that lost its lease)",
    registry=REGISTRY,
)
STALE_FENCE_REJECTIONS = Counter(
    "turnkeep_stale_fence_rejections",
    "Fenced statements Postgres refused because a newer fence was accepted (nothing written)",
    registry=REGISTRY,
)
DEFINITION_ROUTES = Counter(
    "turnkeep_definition_routes",
    "Lane heads whose agent definition this worker does not serve, by what it did "
    "(hand_on: to a live worker serving it; hold: none is live, the turn waits; move: "
    "to the newest version here; fail: nothing can run it) (runtime/deploys.py)",
    ["agent", "route"],
    registry=REGISTRY,
)
DEFINITION_CHANGES = Counter(
    "turnkeep_definition_changes",
    "Turns this worker moved to another definition of their agent, by reason",
    ["agent", "reason"],
    registry=REGISTRY,
)
RECOVERY_ENQUEUED = Counter(
    "turnkeep_recovery_enqueued",
    "Sessions the recovery scans this worker ran enqueued again",
    registry=REGISTRY,
)
MODEL_RETRIES = Counter(
    "turnkeep_model_retries",
    "Retries of transient model call failures, by agent",
    ["agent"],
    registry=REGISTRY,
)

#: a call's wait for its rate limits' slot: none, a few ms, or a minute and more
WAIT_BUCKETS = (0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
RATE_LIMIT_WAIT = Histogram(
    "turnkeep_rate_limit_wait_seconds",
    "How far ahead each paced model call's slot was when it was booked, by the "
    "declared rate limit that set it (docs/flow-control.md)",
    ["limit"],
    buckets=WAIT_BUCKETS,
    registry=REGISTRY,
)
PACED = Counter(
    "turnkeep_paced",
    "Model calls that gave their worker thread back to wait for a rate limit's slot "
    "(turn.paced), by limit and reason (requests, tokens, provider)",
    ["limit", "reason"],
    registry=REGISTRY,
)
RATE_LIMITED = Counter(
    "turnkeep_rate_limited",
    "Provider refusals (429) of calls under a declared rate limit: fed to the shared "
    "pace and paced again, never a turn's failure",
    ["limit"],
    registry=REGISTRY,
)

_lock = threading.Lock()
_finished: dict[tuple[str, str, str], Counter] = {}
_steps: dict[tuple[str, str], Histogram] = {}
_retries: dict[str, Counter] = {}


def finished(agent: str, state: str, code: str = "") -> None:
    """Count one turn this process settled."""
    key = (agent, state, code)
    child = _finished.get(key)
    if child is None:
        with _lock:
            child = _finished[key] = TURNS_FINISHED.labels(agent, state, code)
    child.inc()


def step(kind: str, agent: str, seconds: float) -> None:
    """Observe one step: ``kind`` is ``model``, ``tool`` or ``checkpoint``."""
    key = (kind, agent)
    child = _steps.get(key)
    if child is None:
        with _lock:
            child = _steps[key] = STEP_SECONDS.labels(kind, agent)
    child.observe(seconds)


def model_retry(agent: str) -> None:
    child = _retries.get(agent)
    if child is None:
        with _lock:
            child = _retries[agent] = MODEL_RETRIES.labels(agent)
    child.inc()


def rate_limit_wait(limit: str, seconds: float) -> None:
    RATE_LIMIT_WAIT.labels(limit).observe(seconds)


def paced(limit: str, reason: str) -> None:
    PACED.labels(limit, reason).inc()


def rate_limited(limit: str) -> None:
    RATE_LIMITED.labels(limit).inc()


def serve(settings: Settings, *collectors: Collector) -> bool:
    """Serve the registry (and ``collectors``, e.g. the backlog gauges) on the
    settings' metrics port; False when none is set or it cannot be bound (logged:
    the worker runs on without metrics)."""
    if not settings.obs.metrics_port:
        return False
    for collector in collectors:
        REGISTRY.register(collector)
    try:
        start_http_server(
            settings.obs.metrics_port, settings.obs.metrics_address, registry=REGISTRY
        )
    except OSError as exc:
        log.error(
            "metrics not served on %s:%d: %s",
            settings.obs.metrics_address,
            settings.obs.metrics_port,
            exc,
        )
        return False
    log.info(
        "metrics at http://%s:%d/metrics", settings.obs.metrics_address, settings.obs.metrics_port
    )
    return True
