"""The core: a turn admitted, run step by step under its session's lease, read and
followed; the recovery scan that re-enqueues a session nobody holds."""

from turnkeep.runtime.names import TASK_RECOVERY_SCAN
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="core",
    order=0,
    about="admitting, running, reading and following turns (README, docs/turn-states.md)",
    routers=(
        "turnkeep.api.http.health:router",
        "turnkeep.api.http.turns:router",
        "turnkeep.api.http.sessions:router",
        "turnkeep.api.http.events:router",
        "turnkeep.api.stream_tokens:router",
    ),
    parts=(
        "turns",
        "reads",
        "scans",
        "tool_steps",
        "memory",
        "provider_state",
        "upgrades",
        "reruns",
        "waits",
    ),
    beat=(Beat("recovery-scan", TASK_RECOVERY_SCAN, "lease.effective_scan_interval"),),
    settings=(
        "database",
        "redis",
        "broker",
        "worker",
        "auth",
        "lease",
        "bounds",
        "sse",
        "obs",
        "providers",
        "dev",
        "flower",
    ),
    holds=(
        "turns",
        "events",
        "sessions",
        "tool_steps",
        "memories",
        "provider_state",
        "alembic_version",
        "secret:{tenant}:{session}:{turn}:{request}",
        "lease:{tenant}:{session}",
        "rerun:{tenant}:{session}",
        "fair:*:ready:*:{tenant}",
        "celery:* (the broker's queue lists and unacked hash)",
        "events:{tenant}:{session}",
        "(none)",
    ),
)
