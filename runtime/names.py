"""Names other processes see: the Celery task and queue. Persisted in brokers, so
pinned in tests/unit/test_persisted_names.py like the states and event types."""

from __future__ import annotations

#: the one task; its arguments are ids only: (tenant_id, session_id)
TASK_RUN_SESSION = "turnkeep.run_session"
#: the recovery scan, run by beat
TASK_RECOVERY_SCAN = "turnkeep.recovery_scan"
#: the journal prune (retention), run by beat
TASK_PRUNE_JOURNAL = "turnkeep.prune_journal"
#: the pass over the due schedules (recovery/schedules.py), run by beat
TASK_FIRE_SCHEDULES = "turnkeep.fire_schedules"
#: webhook delivery from the outbox (worker/webhooks.py): run by beat with no
#: arguments (a pass over every due webhook), and sent by a worker right after a turn
#: with a webhook settles, with its ids ``(tenant_id, session_id, turn_id)``
TASK_DELIVER_WEBHOOKS = "turnkeep.deliver_webhooks"
#: the sweep of attachments an API process left pending or deleting, run by beat
TASK_SWEEP_ATTACHMENTS = "turnkeep.sweep_attachments"
#: the experiments' driver (recovery/experiments.py): run by beat with no arguments (a
#: pass that sends one advance per running experiment), and sent with the ids
#: ``(tenant_id, experiment_id)`` to advance one (by the API when it is created)
TASK_ADVANCE_EXPERIMENTS = "turnkeep.advance_experiments"
TASK_ADVANCE_EXPERIMENT = "turnkeep.advance_experiment"
#: a session's erasure (docs/erasure.md), ids only ``(tenant_id, session_id)``: sent by
#: the API's DELETE after the tombstone committed, and by beat's erasure sweep for a
#: session past its TTL or an erasure nobody finished; resumable, each run goes on
TASK_ERASE_SESSION = "turnkeep.erase_session"
#: the erasure sweep (recovery/erasure.py), run by beat: it only reads and enqueues
TASK_SWEEP_ERASURES = "turnkeep.sweep_erasures"
#: the queue every turnkeep task goes to
QUEUE = "turnkeep"
#: the default namespace of turnkeep's Redis keys and channels (store/keys.py,
#: ``TURNKEEP_REDIS_PREFIX``)
REDIS_PREFIX = "turnkeep"
