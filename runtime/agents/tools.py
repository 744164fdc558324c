"""Tools as an agents module declares them: ``@tool`` and ``ask_tool``, the ``Effect``
classes, and the ``ToolContext`` a tool's function receives (with its durable
``step`` helper and the errors it raises).

A tool's definition (name, version, schema, effect, timeout, approval) is part of its
agent's definition hash (runtime/agents/definition.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal, Protocol

from turnkeep.runtime.errors import DefinitionError, RuntimeErrorBase
from turnkeep.runtime.followups import FollowUp, FollowUps, followup_id, followup_time, messages_of
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.inputs import APPROVAL_SCHEMA, STARTER, InputKind, question_schema
from turnkeep.runtime.timers import MAX_SLEEP_SECONDS, SleepRequested, wake_time
from turnkeep.runtime.tokens import TenantRole

__all__ = [
    "STEP_NAME_MAX",
    "ApprovalPolicy",
    "Effect",
    "StepLog",
    "StepNameInvalid",
    "StepNameReused",
    "StepResultNotJSON",
    "ToolContext",
    "ToolDefinition",
    "ToolFn",
    "ToolStepError",
    "as_recorded",
    "ask_tool",
    "check_answered_by",
    "followup_tool",
    "tool",
    "wait_tool",
]


class Effect(StrEnum):
    """What running a tool twice does to the world."""

    #: no effect: safe to run again
    READ = "read"
    #: an effect that the tool dedupes by the context's idempotency key: safe to run again
    IDEMPOTENT = "idempotent"
    #: an effect that may happen twice if run again: follows the agent's policy on resume
    EFFECTFUL = "effectful"


class ToolStepError(RuntimeErrorBase):
    """Root of the errors ``ToolContext.step`` raises: a misuse by the tool's code, which
    the tool call reports as its error (``tool_failed``) unless the tool catches it."""

    code = "tool_step_invalid"


class StepNameInvalid(ToolStepError):
    """Raised when a step name is not a string of 1 to ``STEP_NAME_MAX`` characters."""


class StepNameReused(ToolStepError):
    """Raised when a tool call runs a second step under a name one of its steps holds
    already: on a rerun the second would be answered with the first one's result."""


class StepResultNotJSON(ToolStepError):
    """Raised when a step's function returned what JSON cannot hold (an object, NaN,
    U+0000): it ran, but nothing was recorded, so a rerun runs it again."""


#: the longest step name (characters); the tool_steps table refuses longer ones too
STEP_NAME_MAX = 200


class StepLog(Protocol):
    """Where ``ToolContext.step`` keeps the step results of one tool call, keyed by the
    call's idempotency key and the step name (worker/tool_steps.py keeps them in
    Postgres; a context built without one keeps them in memory, for that call only)."""

    def recorded(self, name: str) -> tuple[Any] | None:
        """``(result,)`` when a result is recorded under ``name``, else None."""
        ...

    def record(self, name: str, result: Any) -> Any:
        """Record ``result`` (JSON) under ``name`` unless one is recorded already, and
        return the one recorded: the first writer's, whoever that was."""
        ...


class _MemoryLog:
    """A ``StepLog`` in memory: one context's steps (unit tests, tools run by hand)."""

    def __init__(self) -> None:
        self._results: dict[str, Any] = {}
        self._lock = threading.Lock()

    def recorded(self, name: str) -> tuple[Any] | None:
        with self._lock:
            return (self._results[name],) if name in self._results else None

    def record(self, name: str, result: Any) -> Any:
        with self._lock:
            return self._results.setdefault(name, result)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def as_recorded(value: Any) -> Any:
    """``value`` as a step records it and a rerun gets it back: its JSON round trip
    (tuples become lists, keys strings). ``StepResultNotJSON`` when JSON cannot hold it,
    or Postgres could not store it (U+0000)."""
    try:
        recorded = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise StepResultNotJSON(f"a step result must be JSON: {exc}") from exc
    if _has_nul(recorded):
        raise StepResultNotJSON("a step result must not contain U+0000 (NUL)")
    return recorded


@dataclass(frozen=True)
class ToolContext:
    """What a tool receives besides its arguments."""

    tenant_id: str
    session_id: str
    turn_id: str
    #: the call's step number in the turn (``step`` is the durable step helper)
    step_number: int
    #: deterministic across retries and recoveries: ``tenant/session/turn/step``
    idempotency_key: str
    #: monotonic instant by which the tool should return (it is abandoned after it)
    deadline: float
    cancelled: Callable[[], bool]
    #: the answer to this call's ``external_auth`` request, once someone gave it
    #: (raise ``turnkeep.runtime.inputs.ExternalAuthRequired`` to ask for it)
    auth: dict[str, Any] | None = None
    #: this run of the call comes after its timer woke it (``sleep_until``)
    woken: bool = False
    #: where ``step`` records results (worker/tools.py passes the Postgres one);
    #: None: in memory, for this context only
    _steps: StepLog | None = field(default=None, repr=False, compare=False)
    #: where ``schedule_turn`` makes its schedules (worker/followup_schedules.py); None: refused
    _followups: FollowUps | None = field(default=None, repr=False, compare=False)
    _memory: _MemoryLog = field(default_factory=_MemoryLog, init=False, repr=False, compare=False)
    _names: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    _names_lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def sleep_until(self, when: datetime) -> None:
        """Wake this call at ``when`` (an aware datetime): the turn waits holding no
        worker and no lease until the recovery scan wakes it (runtime/timers.py), then
        the call runs again and this returns at once. A time already past returns at
        once too; ``ValueError`` for a naive time or one over a year ahead."""
        at = wake_time(when)
        if self.woken or at <= datetime.now(UTC):
            return
        raise SleepRequested(at)

    def schedule_turn(
        self,
        at: datetime,
        given: str | list[dict[str, Any]],
        *,
        agent: str | None = None,
        key: str = "followup",
    ) -> FollowUp:
        """Admit a turn of this session at ``at`` (an aware datetime; a time past: at
        once) saying ``given`` (a text, or messages), of this agent or ``agent``: a
        one-shot schedule (runtime/followups.py), cancellable as any. Idempotent by this
        call and ``key``: a run of the call again gets the schedule the first run made.
        ``ValueError`` for a naive or far time, or a malformed input."""
        if self._followups is None:
            raise RuntimeError("this context cannot schedule turns (no worker behind it)")
        when, messages = followup_time(at), messages_of(given)
        schedule_id = followup_id(self.idempotency_key, key)
        return self._followups.schedule(schedule_id, when, messages, agent)

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` as the durable step ``name`` of this tool call and return its
        result as recorded (``as_recorded``: its JSON round trip).

        A step recorded by an earlier run of this call (same idempotency key: a rerun
        after a crash, a timeout's retry) returns its recorded result and ``fn`` does not
        run. Otherwise ``fn`` runs (at least once: a crash before its result is recorded
        runs it again on the rerun) and its result is recorded once; should another run
        of the call have recorded one first, that one is returned (first writer wins).

        ``StepNameInvalid``, ``StepNameReused`` (a second step of this call under a name
        taken: a step whose ``fn`` raised gives its name back), ``StepResultNotJSON``.
        """
        if not isinstance(name, str) or not 0 < len(name) <= STEP_NAME_MAX:
            raise StepNameInvalid(
                f"a step name is a string of 1 to {STEP_NAME_MAX} characters: {name!r:.80}"
            )
        with self._names_lock:
            if name in self._names:
                raise StepNameReused(f"this tool call already has a step named {name!r}")
            self._names.add(name)
        log: StepLog = self._memory if self._steps is None else self._steps
        try:
            found = log.recorded(name)
            if found is not None:
                return found[0]
            return log.record(name, as_recorded(fn()))
        except BaseException:
            with self._names_lock:
                self._names.discard(name)
            raise


ToolFn = Callable[[ToolContext, dict[str, Any]], Any]

#: ``never``, ``always``, or a function of the call's arguments saying whether this
#: call needs a person's approval; None: ``always`` for effectful tools, else ``never``
ApprovalPolicy = Literal["never", "always"] | Callable[[dict[str, Any]], bool] | bool | None


def _policy_name(policy: ApprovalPolicy, effect: Effect) -> str:
    if policy is None:
        return "always" if effect is Effect.EFFECTFUL else "never"
    if policy is True or policy is False:
        return "always" if policy else "never"
    if isinstance(policy, str):
        if policy not in ("never", "always"):
            raise DefinitionError(f"approval must be 'never', 'always' or a function: {policy!r}")
        return policy
    # a function is pinned by name: changing what it decides is a new version
    return f"fn:{getattr(policy, '__module__', '?')}.{getattr(policy, '__qualname__', '?')}"


def check_answered_by(value: str) -> str:
    if value != STARTER and value not in {r.value for r in TenantRole}:
        raise DefinitionError(f"answered_by must be 'starter' or a role, not {value!r}")
    return value


@dataclass(frozen=True)
class ToolDefinition:
    """A typed tool: a function, a name, a version, a JSON schema and an effect class."""

    name: str
    version: str
    description: str
    parameters: dict[str, Any]
    effect: Effect
    fn: ToolFn = field(compare=False, repr=False)
    #: seconds a call may take; an overrunning call is abandoned and recorded as
    #: timed out (read and idempotent tools are tried again, up to ``retries``
    #: times; an effectful one follows the agent's unknown-outcome policy)
    timeout: float = 60.0
    #: who approves a call before it runs (see ``ApprovalPolicy``)
    approval: ApprovalPolicy = field(default=None, compare=False)
    #: set for an input tool: the call is a question, answered over the API with a
    #: value matching this schema, which becomes the call's result (``fn`` is unused)
    asks: dict[str, Any] | None = None
    #: how long an approval or input request stays open
    expires_in: float = 3600.0
    #: who may answer this tool's requests: ``starter`` (the subject that admitted
    #: the turn) or a role (``member``, ``admin``)
    answered_by: str = STARTER
    #: further tries of a read or idempotent call that timed out
    retries: int = 2

    def __post_init__(self) -> None:
        _policy_name(self.approval, self.effect)
        check_answered_by(self.answered_by)
        if self.timeout <= 0 or self.retries < 0:
            raise DefinitionError(f"tool {self.name!r}: timeout > 0 and retries >= 0")

    @property
    def schema_hash(self) -> str:
        return sha256_hex(self.parameters)

    @property
    def approval_policy(self) -> str:
        return _policy_name(self.approval, self.effect)

    def needs_approval(self, arguments: dict[str, Any]) -> bool:
        """Whether this call must be approved before it runs."""
        if self.asks is not None:
            return False
        policy = self.approval_policy
        if policy.startswith("fn:"):
            decide = self.approval
            assert callable(decide)
            return bool(decide(dict(arguments)))
        return policy == "always"

    def waits(self, arguments: dict[str, Any]) -> bool:
        """Whether this call waits for someone's answer before it has a result."""
        return self.asks is not None or self.needs_approval(arguments)

    def request_kind(self) -> InputKind:
        return InputKind.QUESTION if self.asks is not None else InputKind.APPROVAL

    def response_schema(self) -> dict[str, Any]:
        """What an answer to this tool's request must look like."""
        if self.asks is not None:
            return question_schema(self.asks)
        return APPROVAL_SCHEMA

    def ref(self) -> dict[str, Any]:
        """How a request names the tool it is bound to."""
        return {"name": self.name, "version": self.version, "schema_hash": self.schema_hash}

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "schema_hash": self.schema_hash,
            "effect": self.effect.value,
            "timeout": self.timeout,
            "retries": self.retries,
            "approval": self.approval_policy,
            "asks_hash": None if self.asks is None else sha256_hex(self.asks),
            "expires_in": self.expires_in,
            "answered_by": self.answered_by,
        }


def tool(
    *,
    name: str,
    version: str = "1",
    description: str = "",
    parameters: dict[str, Any] | None = None,
    effect: Effect = Effect.READ,
    timeout: float = 60.0,
    approval: ApprovalPolicy = None,
    expires_in: float = 3600.0,
    answered_by: str = STARTER,
    retries: int = 2,
) -> Callable[[ToolFn], ToolDefinition]:
    """Declare a tool: ``@tool(name=..., effect=Effect.IDEMPOTENT, parameters={...})``."""

    def wrap(fn: ToolFn) -> ToolDefinition:
        return ToolDefinition(
            name=name,
            version=version,
            description=description or (fn.__doc__ or "").strip(),
            parameters=parameters or {"type": "object", "properties": {}},
            effect=effect,
            fn=fn,
            timeout=timeout,
            approval=approval,
            expires_in=expires_in,
            answered_by=answered_by,
            retries=retries,
        )

    return wrap


def _unanswered(ctx: ToolContext, args: dict[str, Any]) -> Any:
    raise RuntimeError("an input tool is answered over the API, never run")


def ask_tool(
    *,
    name: str,
    answer_schema: dict[str, Any],
    version: str = "1",
    description: str = "",
    parameters: dict[str, Any] | None = None,
    expires_in: float = 3600.0,
    answered_by: str = STARTER,
) -> ToolDefinition:
    """A typed question: the model calls it to ask a person something; the turn
    waits; the answer (validated against ``answer_schema``) is the call's result."""
    return ToolDefinition(
        name=name,
        version=version,
        description=description or "Ask a person and wait for the answer.",
        parameters=parameters or {"type": "object", "properties": {"question": {"type": "string"}}},
        effect=Effect.READ,
        fn=_unanswered,
        asks=answer_schema,
        expires_in=expires_in,
        answered_by=answered_by,
    )


def followup_tool(
    *,
    name: str = "follow_up",
    version: str = "1",
    description: str = "",
    max_seconds: float = MAX_SLEEP_SECONDS,
) -> ToolDefinition:
    """A declared follow-up: the model calls it with ``in_seconds`` and ``message`` and
    a turn of this session saying ``message`` is admitted that much later (a one-shot
    schedule, runtime/followups.py); the result names the schedule and its time."""
    bound = min(float(max_seconds), MAX_SLEEP_SECONDS)

    def follow_up(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        at = datetime.now(UTC) + timedelta(seconds=float(args["in_seconds"]))
        made = ctx.schedule_turn(at, str(args["message"]))
        return {"schedule_id": made.schedule_id, "at": made.at.isoformat()}

    return ToolDefinition(
        name=name,
        version=version,
        description=description
        or "Come back to this later: a new turn with this message, that many seconds from now.",
        parameters={
            "type": "object",
            "properties": {
                "in_seconds": {"type": "number", "minimum": 0, "maximum": bound},
                "message": {"type": "string", "minLength": 1},
            },
            "required": ["in_seconds", "message"],
            "additionalProperties": False,
        },
        effect=Effect.IDEMPOTENT,
        fn=follow_up,
    )


def wait_tool(
    *,
    name: str = "wait",
    version: str = "1",
    description: str = "",
    max_seconds: float = MAX_SLEEP_SECONDS,
) -> ToolDefinition:
    """A declared timer: the model calls it with ``seconds`` and the turn waits that
    long holding no worker (runtime/timers.py); the result says how long it waited."""
    bound = min(float(max_seconds), MAX_SLEEP_SECONDS)

    def wait(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        seconds = float(args["seconds"])
        ctx.sleep_until(datetime.now(UTC) + timedelta(seconds=seconds))
        return {"waited_seconds": seconds}

    return ToolDefinition(
        name=name,
        version=version,
        description=description or "Wait this many seconds before going on.",
        parameters={
            "type": "object",
            "properties": {"seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": bound}},
            "required": ["seconds"],
            "additionalProperties": False,
        },
        effect=Effect.READ,
        fn=wait,
    )
