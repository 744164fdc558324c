"""Configuration from the environment, one prefix: ``TURNKEEP_``.

Every process (API, worker, beat, CLI) reads the same settings, so an operator
configures a deployment in one place. ``Settings`` is a row of sections, one per
concern (``settings.database.url``, ``settings.lease.ttl``, …); a plane names the
sections it owns (runtime/planes/). The variables' names stay flat: a section reads
``TURNKEEP_<its prefix><FIELD>``, and a field named otherwise says its variable in its
``validation_alias``. ``variables()`` lists them all; docs/configuration.md documents
them, grouped by the same sections.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings

from turnkeep.runtime import ratelimits
from turnkeep.runtime.env import section
from turnkeep.runtime.local_settings import DevSettings, FlowerSettings
from turnkeep.runtime.names import QUEUE, REDIS_PREFIX

#: the application's Postgres role (created by migration 0006, store/schema.py)
APP_ROLE = "turnkeep_app"
#: migrations' default on this machine: the local database as its superuser
LOCAL_OWNER_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/turnkeep"
S = TypeVar("S", bound=BaseSettings)


class DatabaseSettings(BaseSettings):
    model_config = section()

    #: what the API, workers and beat connect as: the application's role
    #: (``turnkeep_app``: not a superuser, not the tables' owner, no BYPASSRLS), so
    #: row-level security binds every statement (store/schema.py)
    url: str = Field(
        default=f"postgresql+psycopg://{APP_ROLE}@127.0.0.1:5432/turnkeep",
        validation_alias="TURNKEEP_DATABASE_URL",
    )
    #: what migrations connect as: the tables' owner. Unset: TURNKEEP_DATABASE_URL when
    #: that is set (a deployment whose application still connects as the owner), else
    #: this machine's database as ``postgres`` (``make run``, ``make migrate``)
    migrate_url: str | None = None
    #: Postgres connections one process opens at most (threads share them: each holds
    #: one for a single statement, never across a model or tool call)
    pool_size: int = Field(default=20, gt=0, validation_alias="TURNKEEP_DB_POOL_SIZE")

    @property
    def effective_migrate_url(self) -> str:
        if self.migrate_url:
            return self.migrate_url
        if "url" in self.model_fields_set:
            return self.url
        return LOCAL_OWNER_URL


class RedisSettings(BaseSettings):
    model_config = section("REDIS_")

    url: str = "redis://127.0.0.1:6379/0"
    #: the namespace of every Redis key and channel turnkeep uses (store/keys.py);
    #: any other value also puts Celery's own broker keys under ``<prefix>:celery:``,
    #: so deployments (or test runs) sharing one Redis never see each other's keys.
    #: Process-wide: store/keys.py reads it from ``get_settings()``
    prefix: str = Field(default=REDIS_PREFIX, pattern=r"^[A-Za-z0-9._-]+$")


class BrokerSettings(BaseSettings):
    model_config = section()

    #: Celery broker; the Redis above unless set
    url: str | None = Field(default=None, validation_alias="TURNKEEP_BROKER_URL")
    #: the Celery queue; deployments (or test runs) sharing one Redis keep apart by it
    queue: str = QUEUE


class WorkerSettings(BaseSettings):
    model_config = section()

    #: dotted module that declares the agents (like a Celery app module); the API
    #: reads it too
    agents: str = "turnkeep.runtime.demo"
    max_attempts: int = Field(default=10, gt=0)
    #: worker thread count: turns one worker process keeps in flight
    concurrency: int = Field(default=32, gt=0, validation_alias="TURNKEEP_WORKER_CONCURRENCY")
    #: hard limit of one run_session task; the broker's visibility timeout sits above it
    task_time_limit: float = 3600.0
    #: seconds from the start of a warm shutdown (SIGTERM) to the worker's exit at the
    #: latest: its 10 s soft-shutdown window and time to commit the step in hand; past
    #: it the worker exits hard (worker/shutdown.py), and the recovery scan takes what
    #: it held. Below the supervisor's own (deploy/: 30 s)
    shutdown_grace: float = Field(
        default=25.0, gt=0, validation_alias="TURNKEEP_WORKER_SHUTDOWN_GRACE"
    )


class AuthSettings(BaseSettings):
    model_config = section()

    #: JSON list of {"sha256": hex, "tenant": str, "subject": str, "role": str}; empty
    #: fails closed (api/auth.py)
    tokens: str = ""
    #: signs stream tokens (api/stream_tokens.py); unset, a key is derived from
    #: the webhooks' secret; neither set: stream tokens answer 503
    stream_token_secret: SecretStr = SecretStr("")
    #: lifetime of a stream token, seconds (at most 10 minutes)
    stream_token_ttl: float = Field(default=300.0, gt=0, le=600)


class LeaseSettings(BaseSettings):
    """The session lease and the recovery scan that finds a session nobody holds."""

    model_config = section()

    ttl: float = Field(default=15.0, gt=0.2, validation_alias="TURNKEEP_LEASE_TTL")
    #: how often the beat recovery scan runs; defaults to a sixth of the lease TTL, so
    #: a dead worker's session is found within about 1.2 TTL of the crash (its lease
    #: runs out within one TTL, the next scan comes within TTL/6)
    scan_interval: float | None = Field(default=None, gt=0)
    #: a session with no journal progress for this long (and no lease) is re-enqueued;
    #: defaults to half the lease TTL. The live-lease check is what tells a dead
    #: worker; the grace only keeps the scan from duplicating messages still queued.
    scan_grace: float | None = None
    scan_batch: int = Field(default=500, gt=0)

    @property
    def effective_scan_interval(self) -> float:
        return self.ttl / 6.0 if self.scan_interval is None else self.scan_interval

    @property
    def effective_scan_grace(self) -> float:
        return self.ttl / 2.0 if self.scan_grace is None else self.scan_grace


class BoundsSettings(BaseSettings):
    """Bounds and quotas (api/service/bounds.py, README "Bounds and quotas")."""

    model_config = section()

    max_body_bytes: int = 1_048_576
    max_wait: float = 60.0
    #: active (not yet ended) turns one session, and one tenant, may hold: a new turn
    #: past either is 429 ``quota_exceeded`` with Retry-After (a replay never is)
    max_queued_per_session: int = Field(default=100, gt=0)
    max_queued_per_tenant: int = Field(default=10_000, gt=0)
    #: SSE streams one tenant may hold open on one API process (429 past it)
    max_streams_per_tenant: int = Field(default=100, gt=0)
    #: a turn's output schema, serialized (canonical JSON, bytes), and its nesting
    #: depth; a message's characters: past any, 422 ``validation_error`` naming the field
    max_schema_bytes: int = Field(default=65_536, gt=0)
    max_schema_depth: int = Field(default=32, gt=0)
    max_message_chars: int = Field(default=100_000, gt=0)
    #: a tool result (or error) longer than this is cut, with a marker the model sees
    max_tool_result_chars: int = Field(default=65_536, gt=0)


class SseSettings(BaseSettings):
    model_config = section("SSE_")

    heartbeat: float = 15.0
    #: live messages (events and deltas) one SSE reader may fall behind by; past it
    #: its stream ends with ``stream.resume`` and the client resumes from the journal
    backlog: int = Field(default=1000, gt=0)


class ObsSettings(BaseSettings):
    """Telemetry and redaction (docs/operations.md)."""

    model_config = section()

    #: secret values replaced by ``[REDACTED]`` wherever turnkeep stores, publishes or
    #: logs text (runtime/obs/redact.py): a JSON list or comma-separated. The provider
    #: keys (``*_API_KEY``) and built-in patterns (API keys, bearer tokens, private
    #: keys) are always redacted too
    redact_values: SecretStr = SecretStr("")
    #: a worker serves Prometheus metrics at http://metrics_address:metrics_port/metrics;
    #: 0 (the default) serves none, since several workers on one host each need a port
    metrics_port: int = Field(default=0, ge=0, le=65535)
    metrics_address: str = "127.0.0.1"
    #: OTLP/HTTP collector that traces go to (``http://collector:4318``, or the full
    #: ``…/v1/traces`` URL); unset (the default): no tracing, at no cost
    otel_endpoint: str = ""
    #: log lines as ``json`` (one object a line, the default) or ``text``
    log_format: Literal["json", "text"] = "json"


class ProvidersSettings(BaseSettings):
    """The built-in model providers' endpoints and keys (docs/models.md)."""

    model_config = section()

    #: unset: the public API's; a self-hosted compatible server may need no key
    openai_base_url: str = ""
    openai_api_key: SecretStr = SecretStr("")
    anthropic_base_url: str = ""
    anthropic_api_key: SecretStr = SecretStr("")
    #: seconds the demo model waits per call, so live SSE shows something
    demo_latency: float = 0.0


class RetentionSettings(BaseSettings):
    """Journal retention (docs/retention.md)."""

    model_config = section("RETENTION_")

    #: each session keeps at most this many of its newest events; older ones are
    #: pruned by the beat task, never one an active turn or the context window still
    #: needs. A cursor before the cut is 410.
    events: int = Field(default=20_000, gt=0, validation_alias="TURNKEEP_RETAIN_EVENTS")
    #: the earlier turns' conversation rows a turn starts with, newest kept (after the
    #: newest compaction); the worker loads them and retention keeps them
    context_window_rows: int = Field(
        default=2000, gt=0, validation_alias="TURNKEEP_CONTEXT_WINDOW_ROWS"
    )
    #: how often beat runs the journal prune
    interval: float = Field(default=60.0, gt=0)
    #: at most this many events one prune statement deletes (one per session per run)
    batch: int = Field(default=5000, gt=0)
    #: the prune deletes a turn's recorded tool steps (ctx.step) this long after it
    #: ended: longer than a stale worker may still be inside one of its tool calls
    tool_steps_grace: float = Field(
        default=86_400.0, ge=0, validation_alias="TURNKEEP_TOOL_STEPS_GRACE"
    )


class SchedulesSettings(BaseSettings):
    model_config = section("SCHEDULE_")

    #: how often beat fires the due schedules (recovery/schedules.py): a tick's turn is
    #: admitted within this long of its time
    interval: float = Field(default=5.0, gt=0)
    #: a tick later than this is "missed" (a schedule with missed=skip does not run it)
    grace: float = Field(default=60.0, ge=0)


class EvaluationSettings(BaseSettings):
    model_config = section("EVAL_")

    #: how often beat advances every running experiment (recovery/experiments.py):
    #: a case's ended turn is scored, and the next admitted, within about this long
    interval: float = Field(default=2.0, gt=0)
    #: running experiments one beat pass advances at most (the least recently advanced)
    batch: int = Field(default=100, gt=0)


class AttachmentsSettings(BaseSettings):
    """The sweep of attachments left pending or deleting (docs/fork-and-attachments.md)."""

    model_config = section("ATTACHMENT_SWEEP_")

    #: how often beat runs the sweep
    interval: float = Field(default=300.0, gt=0)
    #: a pending or deleting attachment is swept once its row has not moved this long:
    #: far longer than an upload's or a deletion's request may still be on its way
    grace: float = Field(default=3600.0, ge=0)
    #: rows one sweep statement deletes at most
    batch: int = Field(default=500, gt=0)


class PacingSettings(BaseSettings):
    model_config = section()

    #: provider rate limits shared by every worker (runtime/ratelimits.py, a JSON list;
    #: docs/flow-control.md): empty, none is declared and nothing is paced
    rate_limits: str = ""
    #: a paced call whose slot is at most this far ahead waits on its worker thread;
    #: a longer wait gives the thread back and the session is sent again for its time
    hold: float = Field(default=0.5, ge=0, validation_alias="TURNKEEP_PACE_HOLD")

    @field_validator("rate_limits")
    @classmethod
    def _rate_limits(cls, value: str) -> str:
        ratelimits.parse(value)  # a malformed table stops the process at its start
        return value


class LimitsSettings(BaseSettings):
    model_config = section()

    #: max_running for every tenant that declared none of its own (``PUT /v1/limits``):
    #: at most this many of its turns running at once, the rest queued
    #: (docs/flow-control.md); unset: no limit
    max_running_per_tenant: int | None = Field(default=None, gt=0)


class ErasureSettings(BaseSettings):
    """Session TTLs and the erasure sweep (docs/erasure.md)."""

    model_config = section("ERASURE_")

    #: a session is erased this many seconds after its newest turn was admitted, unless
    #: a turn names its own ``expires_after``; unset (the default): sessions never
    #: expire. ``session_ttls`` (JSON, tenant to seconds) sets it per tenant, over this
    session_ttl: float | None = Field(default=None, gt=0, validation_alias="TURNKEEP_SESSION_TTL")
    session_ttls: dict[str, float] = Field(
        default_factory=dict, validation_alias="TURNKEEP_SESSION_TTLS"
    )
    #: how often beat runs the erasure sweep (recovery/erasure.py): sessions past their
    #: TTL are erased within about this long, and erasures nobody finished go on
    interval: float = Field(default=30.0, gt=0)
    #: an erasure whose tombstone has not moved for this long is enqueued again (its
    #: eraser died, or its task was lost); longer than one batch takes
    grace: float = Field(default=60.0, gt=0)
    #: rows one erasure statement deletes at most (its transaction's size)
    batch: int = Field(default=5000, gt=0)

    def session_ttl_for(self, tenant_id: str) -> float | None:
        """The TTL a tenant's sessions get unless a turn names one (None: none)."""
        ttl = self.session_ttls.get(tenant_id, self.session_ttl)
        return None if ttl is None or ttl <= 0 else ttl


class WebhooksSettings(BaseSettings):
    model_config = section("WEBHOOK_")

    #: signs webhook deliveries (HMAC-SHA256, runtime/webhooks.py). A workflow node
    #: that names a callback_url is refused (400 webhook_not_configured) while unset
    secret: SecretStr = SecretStr("")
    #: seconds each phase of one delivery attempt may take (connect, send, answer)
    timeout: float = Field(default=10.0, gt=0)
    #: how often beat runs the delivery pass: the safety net behind the prompt
    #: delivery a worker sends when a turn with a webhook settles
    interval: float = Field(default=5.0, gt=0)
    #: a failed attempt is retried after this many seconds, doubling per attempt
    #: (with jitter) up to backoff_max; retries go on until a 2xx
    backoff: float = Field(default=5.0, gt=0)
    backoff_max: float = Field(default=3600.0, gt=0)
    #: webhooks one statement claims; they are posted in parallel
    batch: int = Field(default=16, gt=0)
    #: callbacks may go to loopback, private and link-local addresses (off: a callback
    #: to one is a failed attempt, ``private_address``, and never sent)
    allow_private: bool = False

    @property
    def lease(self) -> float:
        """How long a claimed delivery is held before another deliverer may take it:
        above one attempt's three timed phases, so a live attempt is never doubled."""
        return 3 * self.timeout + 5.0


class FeedbackSettings(BaseSettings):
    model_config = section("FEEDBACK_")

    #: feedback notes are kept as their hash alone; set, a redacted copy is kept too
    keep_notes: bool = False


class SlackSettings(BaseSettings):
    """The Slack bridge (docs/bridges.md)."""

    model_config = section("SLACK_")

    #: the app's signing secret verifies every inbound request (unset: the Slack
    #: routes answer 503 and admit nothing)
    signing_secret: SecretStr = SecretStr("")
    #: posts the replies (the workers' only; unset: replies wait, undelivered)
    bot_token: SecretStr = SecretStr("")
    #: where Slack's Web API is (an operator's setting, never a request's: it is not
    #: held to the private-address rule of callbacks)
    api_url: str = "https://slack.com/api"
    #: which tenant each Slack workspace belongs to (JSON, team id to tenant:
    #: ``{"T0123": "acme"}``): only that tenant's admins bind its people, and its
    #: events are looked up in that tenant alone; an event of a workspace not named
    #: here admits nothing. One Slack app's signing secret serves every workspace
    #: it is installed in, so the team id, not the secret, names the tenant
    workspaces: dict[str, str] = Field(default_factory=dict)


class BridgeSettings(BaseSettings):
    """The generic bridge (runtime/bridges/generic.py): verifies inbound requests signed
    as turnkeep signs its webhooks, for the one tenant the secret is assigned to (either
    unset: its route answers 503): a secret signs only that tenant's senders."""

    model_config = section("BRIDGE_")

    secret: SecretStr = SecretStr("")
    tenant: str = ""


class Settings(BaseModel):
    """All of turnkeep's knobs, a section per concern. Durations are seconds.

    A section given as a dict (``Settings(lease={"ttl": 3})``) still reads the rest of
    its fields from the environment, as ``Settings()`` does."""

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    lease: LeaseSettings = Field(default_factory=LeaseSettings)
    bounds: BoundsSettings = Field(default_factory=BoundsSettings)
    sse: SseSettings = Field(default_factory=SseSettings)
    obs: ObsSettings = Field(default_factory=ObsSettings)
    providers: ProvidersSettings = Field(default_factory=ProvidersSettings)
    dev: DevSettings = Field(default_factory=DevSettings)
    flower: FlowerSettings = Field(default_factory=FlowerSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    schedules: SchedulesSettings = Field(default_factory=SchedulesSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    attachments: AttachmentsSettings = Field(default_factory=AttachmentsSettings)
    pacing: PacingSettings = Field(default_factory=PacingSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    erasure: ErasureSettings = Field(default_factory=ErasureSettings)
    webhooks: WebhooksSettings = Field(default_factory=WebhooksSettings)
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    bridge: BridgeSettings = Field(default_factory=BridgeSettings)

    @field_validator("*", mode="before")
    @classmethod
    def _with_environment(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, dict) and info.field_name is not None:
            section: type[BaseSettings] = cls.model_fields[info.field_name].annotation  # type: ignore[assignment]
            return section(**value)
        return value

    @property
    def effective_broker_url(self) -> str:
        return self.broker.url or self.redis.url


def section_variables(section: type[BaseSettings]) -> dict[str, str]:
    """A section's variables: each one's name, to the field it sets."""
    prefix = section.model_config.get("env_prefix", "")
    return {
        (f.validation_alias if isinstance(f.validation_alias, str) else prefix + name).upper(): name
        for name, f in section.model_fields.items()
    }


def variables() -> dict[str, tuple[str, str]]:
    """Every ``TURNKEEP_*`` variable the settings read: its section and field."""
    found = {}
    for part, info in Settings.model_fields.items():
        model: type[BaseSettings] = info.annotation  # type: ignore[assignment]
        for variable, name in section_variables(model).items():
            found[variable] = (part, name)
    return found


def from_environ(section: type[S], environ: Mapping[str, str]) -> S:
    """``section`` as ``environ`` (not this process's environment) configures it: for
    an environment handed to another process."""
    given = {n: environ[v] for v, n in section_variables(section).items() if v in environ}
    return section.model_validate(given)


def providers_now() -> ProvidersSettings:
    """The providers section as the environment gives it now: a provider is built per
    turn and reads its endpoint then (a key rotated in the environment counts from the
    next turn), but parsing the section cost more than the demo turn's model call, so it
    is parsed once per distinct value of its variables."""
    return _providers(tuple(os.environ.get(v) for v in _PROVIDER_VARIABLES))


_PROVIDER_VARIABLES = tuple(section_variables(ProvidersSettings))


@lru_cache(maxsize=8)
def _providers(values: tuple[str | None, ...]) -> ProvidersSettings:
    given = {v: x for v, x in zip(_PROVIDER_VARIABLES, values, strict=True) if x is not None}
    return from_environ(ProvidersSettings, given)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
