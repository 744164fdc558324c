"""The Celery app: ``celery -A turnkeep.worker.app worker`` (and ``beat``).

Configured for at-least-once delivery: a message is acknowledged only after its task
ran (acks_late), given back if the worker process dies (reject_on_worker_lost),
one message prefetched per thread, and the Redis broker's visibility timeout sits
above the hard time limit so a long turn is not redelivered while it runs. A
duplicate delivery is harmless: only the lease holder with the current fence writes.
Lost messages (a killed worker, a flushed broker) are the recovery scan's job.
A worker cut off from Postgres stops consuming until Postgres answers it again
(``_follow_postgres``): whatever it took on, it could not write. A warm shutdown ends
within ``TURNKEEP_WORKER_SHUTDOWN_GRACE`` even when it waits on a broker or a Postgres
that has gone (worker/shutdown.py).

Telemetry (docs/operations.md): a worker serves its metrics (worker/metrics.py) on
``TURNKEEP_METRICS_PORT`` and traces to ``TURNKEEP_OTEL_ENDPOINT`` from its start
(``worker_init``); the worker's and beat's log lines are formatted as
``TURNKEEP_LOG_FORMAT`` says, on the handlers Celery sets up (runtime/obs/logs.py).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    worker_init,
    worker_ready,
    worker_shutting_down,
)

from turnkeep.recovery import experiments
from turnkeep.recovery.attachments import sweep_once
from turnkeep.recovery.erasure import sweep_once as sweep_erasures_once
from turnkeep.recovery.retention import prune_once
from turnkeep.recovery.scan import scan_once
from turnkeep.recovery.schedules import fire_once
from turnkeep.runtime.names import (
    TASK_ADVANCE_EXPERIMENT,
    TASK_ADVANCE_EXPERIMENTS,
    TASK_DELIVER_WEBHOOKS,
    TASK_ERASE_SESSION,
    TASK_FIRE_SCHEDULES,
    TASK_PRUNE_JOURNAL,
    TASK_RECOVERY_SCAN,
    TASK_RUN_SESSION,
    TASK_SWEEP_ATTACHMENTS,
    TASK_SWEEP_ERASURES,
)
from turnkeep.runtime.obs import logs, tracing
from turnkeep.runtime.obs.redact import Redactor, install
from turnkeep.runtime.planes import beat_schedule
from turnkeep.runtime.settings import get_settings
from turnkeep.store.pacer import PacedTurns
from turnkeep.store.producer import Backlog, Producer
from turnkeep.store.session_keys import SessionKeys
from turnkeep.worker import lane, metrics, shutdown, waiters
from turnkeep.worker.advertiser import Advertiser
from turnkeep.worker.erasure import erase_session as erase
from turnkeep.worker.replies import prompt_due
from turnkeep.worker.resources import resources
from turnkeep.worker.webhooks import DeliveryConfig, deliver_due, deliver_turn

log = logging.getLogger(__name__)
settings = get_settings()
#: the process's redactor (runtime/obs/redact.py): every log record of the worker and of
#: beat is redacted from here on, whatever handlers Celery sets up; checkpoints and
#: live deltas use the same one (WorkerResources.redactor)
install(Redactor.from_settings(settings))

#: the process's one producer (store/producer.py): its Celery app, built from the
#: settings every turnkeep process shares, is the worker's app, with the worker-only
#: settings below on top. So the worker's own enqueues (the recovery scan's, and the
#: lane's through WorkerResources.producer, the same object) go out exactly as the
#: API's do, over one broker connection pool per process.
producer = Producer.from_settings(settings)
app = producer.app
app.set_current()
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_time_limit=settings.worker.task_time_limit,
    # on top of the producer's (its global_keyprefix: store/keys.py), not in their place
    broker_transport_options={
        **app.conf.broker_transport_options,
        "visibility_timeout": int(settings.worker.task_time_limit) + 600,
    },
    # a broker connection loss leaves running turns running: a thread cannot be
    # killed (the threads pool has no kill_job, and Celery 5.6 exits trying), and a
    # turn needs no broker to finish; its lease and fence say whether it may write.
    # Celery stays below 5.7 (pyproject.toml): 5.7 exits on such a loss whatever this
    # says (README "Operating notes", tests/chaos/test_redis_faults.py)
    worker_cancel_long_running_tasks_on_connection_loss=False,
    # soft shutdown: on SIGTERM, running turns get time to reach a checkpoint
    worker_soft_shutdown_timeout=10.0,
    worker_enable_soft_shutdown_on_idle=True,
    broker_connection_retry_on_startup=True,
    worker_pool="threads",
    worker_concurrency=settings.worker.concurrency,
    # task events only while a monitor asks for them: Flower broadcasts enable_events
    # when it connects (and every 5 s), so its task pages fill as before; without one,
    # a turn costs no event PUBLISHes (issue 39)
    worker_send_task_events=False,
    # Flower shows the worker's own enqueues as sent; the API's skip the extra event
    task_send_sent_event=True,
    # every plane's beat jobs (runtime/planes/): the recovery scan, retention, webhook
    # delivery, schedules, experiments, the erasure and attachment sweeps
    beat_schedule=beat_schedule(settings),
)


def enqueue(tenant_id: str, session_id: str) -> None:
    """Enqueue a session by task name, ids only. Raises the broker's error, so a
    recovery scan stops at the first refusal (the next scan tries again)."""
    producer.send(tenant_id, session_id)


def recovery_enqueue(tenant_id: str, session_id: str) -> None:
    """``enqueue`` for the recovery scan: each session it sent is counted."""
    enqueue(tenant_id, session_id)
    metrics.RECOVERY_ENQUEUED.inc()


@app.task(name=TASK_RUN_SESSION, bind=True)  # type: ignore[untyped-decorator]
def run_session(self: Any, tenant_id: str, session_id: str, fair: bool = False) -> str:
    ctx = resources()
    # cut off from Postgres, no ticket is picked: the lane drops the delivery (lane.py)
    if not (fair and ctx.reaches_postgres()):
        return lane.run_session(ctx, tenant_id, session_id).value
    # a ticket (store/fair.py): the session next in the tenants' rotation, which is
    # this message's own only when every ready set is empty
    own = (tenant_id, session_id)
    picked = ctx.pick(*own)
    try:
        outcome = lane.run_session(ctx, *picked)
    except Exception:
        if picked != own:  # a poison session picked never costs another its delivery
            lane.run_session(ctx, *own)
        raise
    if picked != own and outcome in lane.NOTHING_RUN:
        # the pick had nothing to run: the ticket's own session is not left waiting
        outcome = lane.run_session(ctx, *own)
    return outcome.value


@app.task(name=TASK_RECOVERY_SCAN)  # type: ignore[untyped-decorator]
def recovery_scan() -> dict[str, int]:
    ctx = resources()
    if not ctx.reaches_postgres():
        # cut off from Postgres (worker/heartbeat.py): the scan would only hold a
        # thread on a statement nobody answers; beat's next one runs elsewhere
        return {"unreachable": 1}
    report = scan_once(
        ctx.store,
        ctx.leases,
        recovery_enqueue,
        grace=ctx.settings.lease.effective_scan_grace,
        batch=ctx.settings.lease.scan_batch,
        held=ctx.held,
        tenant_default=ctx.settings.limits.max_running_per_tenant,
    )
    return {
        "expired_inputs": report.expired,
        "candidates": report.candidates,
        "leased": report.leased,
        "enqueued": report.enqueued,
        "held": report.held,
        "woken": report.woken,
    }


@app.task(name=TASK_PRUNE_JOURNAL)  # type: ignore[untyped-decorator]
def prune_journal() -> dict[str, int]:
    ctx = resources()
    report = prune_once(
        ctx.store,
        retain=ctx.settings.retention.events,
        batch=ctx.settings.retention.batch,
        window_rows=ctx.settings.retention.context_window_rows,
        steps_grace=ctx.settings.retention.tool_steps_grace,
    )
    return {
        "sessions": report.sessions,
        "pruned": report.pruned,
        "deleted": report.deleted,
        "truncated": int(report.truncated),
        "tool_steps_deleted": report.steps_deleted,
    }


@app.task(name=TASK_FIRE_SCHEDULES)  # type: ignore[untyped-decorator]
def fire_schedules() -> dict[str, int]:
    ctx = resources()
    report = fire_once(
        ctx.store, ctx.agents, enqueue, grace=ctx.settings.schedules.grace, settings=ctx.settings
    )
    return {"due": report.due, "fired": report.fired, "skipped": report.skipped}


def send_advance(tenant_id: str, experiment_id: str) -> None:
    """One experiment's advance, by task name, ids only; stale once beat's next pass is due."""
    app.send_task(
        TASK_ADVANCE_EXPERIMENT,
        args=[tenant_id, experiment_id],
        queue=settings.broker.queue,
        expires=max(1.0, 2 * settings.evaluation.interval),
    )


@app.task(name=TASK_ADVANCE_EXPERIMENTS)  # type: ignore[untyped-decorator]
def advance_experiments() -> dict[str, int]:
    ctx = resources()
    return {
        "sent": experiments.advance_due(
            ctx.store, send_advance, limit=ctx.settings.evaluation.batch
        )
    }


@app.task(name=TASK_ADVANCE_EXPERIMENT)  # type: ignore[untyped-decorator]
def advance_experiment(tenant_id: str, experiment_id: str) -> dict[str, int]:
    ctx = resources()
    report = experiments.advance(
        ctx.store,
        ctx.agents,
        enqueue,
        tenant_id,
        experiment_id,
        settings=ctx.settings,
    )
    return {
        "admitted": report.admitted,
        "scored": report.scored,
        "answered": report.answered,
        "completed": int(report.completed),
    }


@app.task(name=TASK_ERASE_SESSION)  # type: ignore[untyped-decorator]
def erase_session(tenant_id: str, session_id: str) -> dict[str, int]:
    """Erase a tombstoned session (or one past its TTL), or go on erasing it."""
    ctx = resources()
    report = erase(
        ctx.store,
        ctx.publisher,
        tenant_id,
        session_id,
        batch=ctx.settings.erasure.batch,
        gone=lambda t, s: waiters.session_gone(ctx.store, enqueue, send_advance, t, s),
        keys=SessionKeys(ctx.redis),
    )
    return {
        "erased": int(report.erased),
        "rows": report.rows,
        "batches": report.batches,
        "expired": int(report.expired),
    }


@app.task(name=TASK_SWEEP_ERASURES)  # type: ignore[untyped-decorator]
def sweep_erasures() -> dict[str, int]:
    ctx = resources()
    report = sweep_erasures_once(
        ctx.store.erasure, producer.erase, grace=ctx.settings.erasure.grace
    )
    return {"expired": report.expired, "stalled": report.stalled}


@app.task(name=TASK_SWEEP_ATTACHMENTS)  # type: ignore[untyped-decorator]
def sweep_attachments() -> dict[str, int]:
    ctx = resources()
    report = sweep_once(
        ctx.store,
        grace=ctx.settings.attachments.grace,
        batch=ctx.settings.attachments.batch,
    )
    return {
        "pending": report.pending,
        "deleting": report.deleting,
        "truncated": int(report.truncated),
    }


@app.task(name=TASK_DELIVER_WEBHOOKS)  # type: ignore[untyped-decorator]
def deliver_webhooks(
    tenant_id: str | None = None, session_id: str | None = None, turn_id: str | None = None
) -> dict[str, int]:
    """One settled turn's webhook (the worker's prompt delivery), or with no arguments
    beat's pass over every due one."""
    ctx = resources()
    config = DeliveryConfig.from_settings(ctx.settings)
    if tenant_id is not None and session_id is not None and turn_id is not None:
        report = deliver_turn(ctx.store, config, tenant_id, session_id, turn_id)
        return {"claimed": report.claimed, "delivered": report.delivered, "failed": report.failed}
    report = deliver_due(ctx.store, config)
    # the chat bridges' parked turns ask their threads (worker/replies.py)
    asked = prompt_due(
        ctx.store, token=config.slack_token, timeout=config.timeout, limit=config.batch
    )
    return {
        "claimed": report.claimed,
        "delivered": report.delivered,
        "failed": report.failed,
        "prompted": asked,
    }


@after_setup_logger.connect  # type: ignore[untyped-decorator]
@after_setup_task_logger.connect  # type: ignore[untyped-decorator]
def _format_logs(logger: logging.Logger, **_: Any) -> None:
    # worker and beat: Celery's handlers (its levels, log file, stdout redirection) in
    # our format (runtime/obs/logs.py)
    logs.use(logger, settings.obs.log_format)


@worker_init.connect  # type: ignore[untyped-decorator]
def _telemetry_at_start(**_: Any) -> None:
    tracing.configure("turnkeep-worker", settings.obs.otel_endpoint)
    ctx = resources()
    metrics.serve(settings, Backlog(producer, ctx.store), PacedTurns(ctx.pacer))


_advertiser: list[Advertiser] = []
#: set when the warm shutdown begins: the Postgres follower stops switching consumption
_shutting_down = threading.Event()


@worker_ready.connect  # type: ignore[untyped-decorator]
def _advertise_at_start(sender: Any, **_: Any) -> None:
    # before the start-up scan: a turn another worker hands on finds us at once; the
    # advertiser also follows this worker's definition queues (worker/advertiser.py)
    _advertiser.append(Advertiser(resources(), app, sender.hostname).start())


@worker_shutting_down.connect  # type: ignore[untyped-decorator]
def _withdraw_at_shutdown(**_: Any) -> None:
    # whatever the shutdown waits for (a broker gone, Postgres gone), it ends in time
    shutdown.exit_within(settings.worker.shutdown_grace)
    _shutting_down.set()
    # a warm shutdown finishes the turns it runs; new ones go to the workers that stay
    for advertiser in _advertiser:
        advertiser.stop()


@worker_ready.connect  # type: ignore[untyped-decorator]
def _scan_at_start(**_: Any) -> None:
    # a worker that starts after a crash picks up what the crash left behind at once
    try:
        recovery_scan()
    except Exception as exc:
        log.warning("start-up recovery scan failed: %s", type(exc).__name__)
    # and the webhooks due now (a settlement whose prompt delivery was never sent);
    # those a dead deliverer claimed are due again when their lease runs out, for
    # beat's next pass. Queued, not run here: a slow receiver must not hold the start
    try:
        app.send_task(TASK_DELIVER_WEBHOOKS, queue=settings.broker.queue)
    except Exception as exc:
        log.warning("start-up webhook pass not sent: %s", type(exc).__name__)


@worker_ready.connect  # type: ignore[untyped-decorator]
def _follow_postgres_at_start(sender: Any, **_: Any) -> None:
    threading.Thread(
        target=_follow_postgres, args=(sender.hostname,), name="postgres-follower", daemon=True
    ).start()


def _follow_postgres(hostname: str) -> None:
    """Consume the queue only while this worker reaches Postgres (its probe,
    worker/heartbeat.py). Cut off, it would drop every session sent to it, and the
    recovery scan's own tasks, while a worker that can write waits for them: it stops
    consuming (Celery's cancel_consumer, to itself) until the probe hears Postgres
    again. Looks every TTL/6, until the warm shutdown begins (it consumes no more then,
    and its broker may be gone)."""
    ctx = resources()
    consuming = True
    while not _shutting_down.wait(ctx.settings.lease.ttl / 6.0):
        if ctx.reaches_postgres() == consuming:
            continue
        command = app.control.cancel_consumer if consuming else app.control.add_consumer
        try:
            command(settings.broker.queue, destination=[hostname], reply=False)
        except Exception as exc:  # the broker is out of reach too: try again
            log.warning("queue consumption not switched: %s", type(exc).__name__)
            continue
        consuming = not consuming
        log.warning(
            "postgres %s: %s the queue",
            "answers again" if consuming else "out of reach",
            "consuming" if consuming else "no longer consuming",
        )
