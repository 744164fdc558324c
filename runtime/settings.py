"""Configuration from the environment, one prefix: ``TURNKEEP_``.

Every process (API, worker, beat, CLI) reads the same settings, so an operator
configures a deployment in one place.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from turnkeep.runtime import ratelimits
from turnkeep.runtime.names import QUEUE, REDIS_PREFIX

#: the application's Postgres role (created by migration 0006, store/schema.py)
APP_ROLE = "turnkeep_app"
#: migrations' default on this machine: the local database as its superuser
LOCAL_OWNER_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/turnkeep"


class Settings(BaseSettings):
    """All of turnkeep's knobs. Durations are seconds."""

    model_config = SettingsConfigDict(env_prefix="TURNKEEP_", extra="ignore")

    #: what the API, workers and beat connect as: the application's role
    #: (``turnkeep_app``: not a superuser, not the tables' owner, no BYPASSRLS), so
    #: row-level security binds every statement (store/schema.py)
    database_url: str = f"postgresql+psycopg://{APP_ROLE}@127.0.0.1:5432/turnkeep"
    #: what migrations connect as: the tables' owner. Unset: TURNKEEP_DATABASE_URL when
    #: that is set (a deployment whose application still connects as the owner), else
    #: this machine's database as ``postgres`` (``make run``, ``make migrate``)
    migrate_url: str | None = None
    redis_url: str = "redis://127.0.0.1:6379/0"
    #: the namespace of every Redis key and channel turnkeep uses (store/keys.py);
    #: any other value also puts Celery's own broker keys under ``<prefix>:celery:``,
    #: so deployments (or test runs) sharing one Redis never see each other's keys.
    #: Process-wide: store/keys.py reads it from ``get_settings()``
    redis_prefix: str = Field(default=REDIS_PREFIX, pattern=r"^[A-Za-z0-9._-]+$")
    #: Celery broker; the Redis above unless set
    broker_url: str | None = None
    #: the Celery queue; deployments (or test runs) sharing one Redis keep apart by it
    queue: str = QUEUE
    #: dotted module that declares the agents (like a Celery app module)
    agents: str = "turnkeep.runtime.demo"
    #: JSON list of {"sha256": hex, "tenant": str, "subject": str, "role": str}; empty
    #: fails closed (api/auth.py)
    tokens: str = ""

    lease_ttl: float = Field(default=15.0, gt=0.2)
    #: how often the beat recovery scan runs; defaults to a sixth of the lease TTL, so
    #: a dead worker's session is found within about 1.2 TTL of the crash (its lease
    #: runs out within one TTL, the next scan comes within TTL/6)
    scan_interval: float | None = Field(default=None, gt=0)
    #: a session with no journal progress for this long (and no lease) is re-enqueued;
    #: defaults to half the lease TTL. The live-lease check is what tells a dead
    #: worker; the grace only keeps the scan from duplicating messages still queued.
    scan_grace: float | None = None
    scan_batch: int = Field(default=500, gt=0)
    #: how often beat fires the due schedules (recovery/schedules.py): a tick's turn is
    #: admitted within this long of its time
    schedule_interval: float = Field(default=5.0, gt=0)
    #: a tick later than this is "missed" (a schedule with missed=skip does not run it)
    schedule_grace: float = Field(default=60.0, ge=0)
    #: how often beat advances every running experiment (recovery/experiments.py):
    #: a case's ended turn is scored, and the next admitted, within about this long
    eval_interval: float = Field(default=2.0, gt=0)
    #: running experiments one beat pass advances at most (the least recently advanced)
    eval_batch: int = Field(default=100, gt=0)
    max_attempts: int = Field(default=10, gt=0)
    #: worker thread count: turns one worker process keeps in flight
    worker_concurrency: int = Field(default=32, gt=0)
    #: hard limit of one run_session task; the broker's visibility timeout sits above it
    task_time_limit: float = 3600.0
    #: Postgres connections one process opens at most (threads share them: each holds
    #: one for a single statement, never across a model or tool call)
    db_pool_size: int = Field(default=20, gt=0)

    #: journal retention (docs/retention.md): each session keeps at most this many of
    #: its newest events; older ones are pruned by the beat task, never one an active
    #: turn or the context window still needs. A cursor before the cut is 410.
    retain_events: int = Field(default=20_000, gt=0)
    #: the earlier turns' conversation rows a turn starts with, newest kept (after the
    #: newest compaction); the worker loads them and retention keeps them
    context_window_rows: int = Field(default=2000, gt=0)
    #: how often beat runs the journal prune
    retention_interval: float = Field(default=60.0, gt=0)
    #: at most this many events one prune statement deletes (one per session per run)
    retention_batch: int = Field(default=5000, gt=0)
    #: the prune deletes a turn's recorded tool steps (ctx.step) this long after it
    #: ended: longer than a stale worker may still be inside one of its tool calls
    tool_steps_grace: float = Field(default=86_400.0, ge=0)
    #: how often beat runs the sweep of attachments left pending or deleting
    #: (docs/fork-and-attachments.md)
    attachment_sweep_interval: float = Field(default=300.0, gt=0)
    #: a pending or deleting attachment is swept once its row has not moved this long:
    #: far longer than an upload's or a deletion's request may still be on its way
    attachment_sweep_grace: float = Field(default=3600.0, ge=0)
    #: rows one sweep statement deletes at most
    attachment_sweep_batch: int = Field(default=500, gt=0)

    #: provider rate limits shared by every worker (runtime/ratelimits.py, a JSON list;
    #: docs/flow-control.md): empty, none is declared and nothing is paced
    rate_limits: str = ""
    #: a paced call whose slot is at most this far ahead waits on its worker thread;
    #: a longer wait gives the thread back and the session is sent again for its time
    pace_hold: float = Field(default=0.5, ge=0)
    #: session TTL (docs/erasure.md): a session is erased this many seconds after its
    #: newest turn was admitted, unless a turn names its own ``expires_after``; unset
    #: (the default): sessions never expire. ``session_ttls`` (JSON, tenant to seconds)
    #: sets it per tenant, over this one
    session_ttl: float | None = Field(default=None, gt=0)
    session_ttls: dict[str, float] = Field(default_factory=dict)
    #: how often beat runs the erasure sweep (recovery/erasure.py): sessions past their
    #: TTL are erased within about this long, and erasures nobody finished go on
    erasure_interval: float = Field(default=30.0, gt=0)
    #: an erasure whose tombstone has not moved for this long is enqueued again (its
    #: eraser died, or its task was lost); longer than one batch takes
    erasure_grace: float = Field(default=60.0, gt=0)
    #: rows one erasure statement deletes at most (its transaction's size)
    erasure_batch: int = Field(default=5000, gt=0)

    max_body_bytes: int = 1_048_576
    max_wait: float = 60.0

    #: bounds (api/service/bounds.py, README "Bounds and quotas"). Active (not yet ended)
    #: turns one session, and one tenant, may hold: a new turn past either is 429
    #: ``quota_exceeded`` with Retry-After (a replay of an admitted one never is)
    max_queued_per_session: int = Field(default=100, gt=0)
    max_queued_per_tenant: int = Field(default=10_000, gt=0)
    #: max_running for every tenant that declared none of its own (``PUT /v1/limits``):
    #: at most this many of its turns running at once, the rest queued
    #: (docs/flow-control.md); unset: no limit
    max_running_per_tenant: int | None = Field(default=None, gt=0)
    #: SSE streams one tenant may hold open on one API process (429 past it)
    max_streams_per_tenant: int = Field(default=100, gt=0)
    #: a turn's output schema, serialized (canonical JSON, bytes), and its nesting
    #: depth; a message's characters: past any, 422 ``validation_error`` naming the field
    max_schema_bytes: int = Field(default=65_536, gt=0)
    max_schema_depth: int = Field(default=32, gt=0)
    max_message_chars: int = Field(default=100_000, gt=0)
    #: a tool result (or error) longer than this is cut, with a marker the model sees
    max_tool_result_chars: int = Field(default=65_536, gt=0)

    sse_heartbeat: float = 15.0
    #: live messages (events and deltas) one SSE reader may fall behind by; past it
    #: its stream ends with ``stream.resume`` and the client resumes from the journal
    sse_backlog: int = Field(default=1000, gt=0)

    #: signs webhook deliveries (HMAC-SHA256, runtime/webhooks.py). A workflow node
    #: that names a callback_url is refused (400 webhook_not_configured) while unset
    webhook_secret: SecretStr = SecretStr("")
    #: seconds each phase of one delivery attempt may take (connect, send, answer)
    webhook_timeout: float = Field(default=10.0, gt=0)
    #: how often beat runs the delivery pass: the safety net behind the prompt
    #: delivery a worker sends when a turn with a webhook settles
    webhook_interval: float = Field(default=5.0, gt=0)
    #: a failed attempt is retried after this many seconds, doubling per attempt
    #: (with jitter) up to webhook_backoff_max; retries go on until a 2xx
    webhook_backoff: float = Field(default=5.0, gt=0)
    webhook_backoff_max: float = Field(default=3600.0, gt=0)
    #: webhooks one statement claims; they are posted in parallel
    webhook_batch: int = Field(default=16, gt=0)
    #: callbacks may go to loopback, private and link-local addresses (off: a callback
    #: to one is a failed attempt, ``private_address``, and never sent)
    webhook_allow_private: bool = False
    #: feedback notes are kept as their hash alone; set, a redacted copy is kept too
    feedback_keep_notes: bool = False
    #: the Slack bridge (docs/bridges.md): the app's signing secret verifies every
    #: inbound request (unset: the Slack routes answer 503 and admit nothing), its bot
    #: token posts the replies (the workers' only; unset: replies wait, undelivered)
    slack_signing_secret: SecretStr = SecretStr("")
    slack_bot_token: SecretStr = SecretStr("")
    #: where Slack's Web API is (an operator's setting, never a request's: it is not
    #: held to the private-address rule of callbacks)
    slack_api_url: str = "https://slack.com/api"
    #: which tenant each Slack workspace belongs to (JSON, team id to tenant:
    #: ``{"T0123": "acme"}``): only that tenant's admins bind its people, and its
    #: events are looked up in that tenant alone; an event of a workspace not named
    #: here admits nothing. One Slack app's signing secret serves every workspace
    #: it is installed in, so the team id, not the secret, names the tenant
    slack_workspaces: dict[str, str] = Field(default_factory=dict)
    #: the generic bridge (runtime/bridges/generic.py): verifies inbound requests signed
    #: as turnkeep signs its webhooks, for the one tenant the secret is assigned to
    #: (either unset: its route answers 503): a secret signs only that tenant's senders
    bridge_secret: SecretStr = SecretStr("")
    bridge_tenant: str = ""
    #: signs stream tokens (api/stream_tokens.py); unset, a key is derived from
    #: webhook_secret; neither set: stream tokens answer 503
    stream_token_secret: SecretStr = SecretStr("")
    #: lifetime of a stream token, seconds (at most 10 minutes)
    stream_token_ttl: float = Field(default=300.0, gt=0, le=600)

    #: secret values replaced by ``[REDACTED]`` wherever turnkeep stores, publishes or
    #: logs text (runtime/obs/redact.py): a JSON list or comma-separated. The provider
    #: keys (``*_API_KEY``) and built-in patterns (API keys, bearer tokens, private
    #: keys) are always redacted too
    redact_values: SecretStr = SecretStr("")

    #: telemetry (docs/operations.md). A worker serves Prometheus metrics at
    #: http://metrics_address:metrics_port/metrics; 0 (the default) serves none, since
    #: several workers on one host each need a port of their own
    metrics_port: int = Field(default=0, ge=0, le=65535)
    metrics_address: str = "127.0.0.1"
    #: OTLP/HTTP collector that traces go to (``http://collector:4318``, or the full
    #: ``…/v1/traces`` URL); unset (the default): no tracing, at no cost
    otel_endpoint: str = ""
    #: log lines as ``json`` (one object a line, the default) or ``text``
    log_format: Literal["json", "text"] = "json"

    #: fault points armed for tests, e.g. "before_tool_effect=kill-once"
    faults: str = ""
    faults_dir: str = "/tmp/turnkeep-faults"

    @field_validator("rate_limits")
    @classmethod
    def _rate_limits(cls, value: str) -> str:
        ratelimits.parse(value)  # a malformed table stops the process at its start
        return value

    @property
    def effective_broker_url(self) -> str:
        return self.broker_url or self.redis_url

    @property
    def effective_migrate_url(self) -> str:
        if self.migrate_url:
            return self.migrate_url
        if "database_url" in self.model_fields_set:
            return self.database_url
        return LOCAL_OWNER_URL

    @property
    def effective_scan_interval(self) -> float:
        return self.lease_ttl / 6.0 if self.scan_interval is None else self.scan_interval

    @property
    def webhook_lease(self) -> float:
        """How long a claimed delivery is held before another deliverer may take it:
        above one attempt's three timed phases, so a live attempt is never doubled."""
        return 3 * self.webhook_timeout + 5.0

    def session_ttl_for(self, tenant_id: str) -> float | None:
        """The TTL a tenant's sessions get unless a turn names one (None: none)."""
        ttl = self.session_ttls.get(tenant_id, self.session_ttl)
        return None if ttl is None or ttl <= 0 else ttl

    @property
    def effective_scan_grace(self) -> float:
        return self.lease_ttl / 2.0 if self.scan_grace is None else self.scan_grace


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
