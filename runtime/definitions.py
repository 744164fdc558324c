"""Agent and tool definitions, declared in Python in an agents module.

An agents module (``TURNKEEP_AGENTS=package.module``) exposes ``AGENTS``: a list of
``AgentDefinition``. Each definition's canonical-JSON SHA-256 is pinned on every turn
at admission, so a worker never runs a turn under a definition it was not admitted with.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

from runtime.delegation import Specialist
from runtime.errors import DefinitionError, RuntimeErrorBase, UnknownAgent
from runtime.hashing import sha256_hex
from runtime.inputs import (
    APPROVAL_SCHEMA,
    STARTER,
    ExternalAuthRequired,
    InputKind,
    Role,
    question_schema,
)
from runtime.memory import TOOL_NAME as MEMORY_TOOL
from runtime.memory import VERSION as MEMORY_VERSION
from runtime.memory import MemoryScope
from runtime.model_policy import Fallback
from runtime.processors import Processor

__all__ = [
    "APPROVAL_SCHEMA",
    "AgentDefinition",
    "AgentRegistry",
    "Effect",
    "ExternalAuthRequired",
    "Limits",
    "StepLog",
    "StepNameInvalid",
    "StepNameReused",
    "StepResultNotJSON",
    "ToolContext",
    "ToolDefinition",
    "ToolStepError",
    "UnknownOutcomePolicy",
    "as_recorded",
    "ask_tool",
    "load_agents",
    "tool",
]


class Effect(StrEnum):
    """What running a tool twice does to the world."""

    #: no effect: safe to run again
    READ = "read"
    #: an effect that the tool dedupes by the context's idempotency key: safe to run again
    IDEMPOTENT = "idempotent"
    #: an effect that may happen twice if run again: follows the agent's policy on resume
    EFFECTFUL = "effectful"


class UnknownOutcomePolicy(StrEnum):
    """What resume does with an effectful tool call that has no committed result."""

    #: commit a synthetic error result saying the outcome is unknown; the model decides
    INTERRUPT = "interrupt"
    #: park the turn in needs_reconciliation until someone says what happened
    RECONCILE = "reconcile"


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
    #: (raise ``runtime.inputs.ExternalAuthRequired`` to ask for it)
    auth: dict[str, Any] | None = None
    #: where ``step`` records results (worker/tools.py passes the Postgres one);
    #: None: in memory, for this context only
    _steps: StepLog | None = field(default=None, repr=False, compare=False)
    _memory: _MemoryLog = field(default_factory=_MemoryLog, init=False, repr=False, compare=False)
    _names: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    _names_lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

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


def _check_answered_by(value: str) -> str:
    if value != STARTER and value not in {r.value for r in Role}:
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
        _check_answered_by(self.answered_by)
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


@dataclass(frozen=True)
class Limits:
    """Per-turn bounds of an agent; a turn's budget may only lower them."""

    max_iterations: int = 20
    max_model_calls: int = 20
    max_tool_calls: int = 50
    max_tokens: int = 200_000
    max_seconds: float = 3600.0
    #: USD a turn's model calls may cost (runtime/pricing.py), a call a crash cut
    #: short charged again when it is re-issued; None: no bound
    max_cost_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "max_iterations": self.max_iterations,
            "max_model_calls": self.max_model_calls,
            "max_tool_calls": self.max_tool_calls,
            "max_tokens": self.max_tokens,
            "max_seconds": self.max_seconds,
            # only when set: the hashes of agents without one stay as they were
            **({} if self.max_cost_usd is None else {"max_cost_usd": self.max_cost_usd}),
        }


@dataclass(frozen=True)
class AgentDefinition:
    """Everything that decides how a turn runs; hashed and pinned at admission."""

    name: str
    version: str
    provider: str
    model: str
    instructions: str
    tools: tuple[ToolDefinition, ...] = ()
    limits: Limits = Limits()
    output_schema: dict[str, Any] | None = None
    unknown_outcome: UnknownOutcomePolicy = UnknownOutcomePolicy.INTERRUPT
    model_options: dict[str, Any] = field(default_factory=dict)
    #: a turn that reaches a bound asks for a ``budget_extension`` instead of failing
    budget_extension: bool = False
    #: who answers the agent's own requests (reconciliation, budget extension)
    answered_by: str = STARTER
    #: how long a reconciliation or budget-extension request stays open
    requests_expire_in: float = 7 * 86400.0
    #: the model's context ceiling in tokens, and what of it a reply may need: the
    #: request is compacted before it is sent when its estimate passes the difference
    context_window: int = 128_000
    reserve_output: int = 4_096
    #: agents this one may hand tasks to, each offered as a ``delegate_<name>`` tool
    #: (runtime/delegation.py)
    specialists: tuple[Specialist, ...] = ()
    #: answers that fail the output schema the model is told about and may correct
    #: before the turn fails ``output_invalid``
    output_retries: int = 1
    #: models a call may fall back to, in order, and when (runtime/model_policy.py)
    fallbacks: tuple[Fallback, ...] = ()
    #: further model names a provider may report as having answered
    allowed_models: tuple[str, ...] = ()
    #: ordered checks of the input, requests, outputs and errors (runtime/processors.py)
    processors: tuple[Processor, ...] = ()
    #: durable memory (runtime/memory.py, docs/memory.md): whose facts the agent keeps
    #: through its ``remember`` tool and is shown in later turns; None: no memory
    memory: MemoryScope | None = None

    def __post_init__(self) -> None:
        _check_answered_by(self.answered_by)
        names = [t.name for t in self.tools]
        for sp in self.specialists:
            if sp.tool_name in names:
                raise DefinitionError(f"agent {self.name!r}: {sp.tool_name} is also a tool")
            names.append(sp.tool_name)
        if self.memory is not None:
            try:
                object.__setattr__(self, "memory", MemoryScope(self.memory))
            except ValueError:
                raise DefinitionError(
                    f"agent {self.name!r}: memory is 'subject', 'project' or None, "
                    f"not {self.memory!r}"
                ) from None
        if self.output_retries < 0:
            raise DefinitionError(f"agent {self.name!r}: output_retries >= 0 is required")
        if not 0 < self.reserve_output < self.context_window:
            raise DefinitionError(
                f"agent {self.name!r}: 0 < reserve_output < context_window is required"
            )

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "model": {"provider": self.provider, "id": self.model},
            "instructions": self.instructions,
            "tools": [t.describe() for t in self.tools],
            "limits": self.limits.to_json(),
            "output_schema": self.output_schema,
            "unknown_outcome": self.unknown_outcome.value,
            "model_options": self.model_options,
            "budget_extension": self.budget_extension,
            "answered_by": self.answered_by,
            "requests_expire_in": self.requests_expire_in,
            "context": {"window": self.context_window, "reserve_output": self.reserve_output},
            # only when there are some: the hashes of agents without stay as they were
            **(
                {"specialists": [s.describe() for s in self.specialists]}
                if self.specialists
                else {}
            ),
            # only when not the default, for the same reason
            **({"output_retries": self.output_retries} if self.output_retries != 1 else {}),
            **({"fallbacks": [f.describe() for f in self.fallbacks]} if self.fallbacks else {}),
            **({"allowed_models": sorted(self.allowed_models)} if self.allowed_models else {}),
            **({"processors": [p.describe() for p in self.processors]} if self.processors else {}),
            **(
                {"memory": {"scope": self.memory.value, "version": MEMORY_VERSION}}
                if self.memory is not None
                else {}
            ),
        }

    @property
    def definition_hash(self) -> str:
        return sha256_hex(self.describe())

    def tool(self, name: str) -> ToolDefinition | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def specialist(self, tool_name: str) -> Specialist | None:
        """The specialist a ``delegate_<name>`` tool name stands for."""
        for sp in self.specialists:
            if sp.tool_name == tool_name:
                return sp
        return None


class AgentRegistry:
    """The agents of one agents module, by name."""

    def __init__(self, agents: list[AgentDefinition]) -> None:
        self._agents: dict[str, AgentDefinition] = {}
        for agent in agents:
            if agent.name in self._agents:
                raise DefinitionError(f"agent {agent.name!r} is declared twice")
            names = [t.name for t in agent.tools]
            if len(names) != len(set(names)):
                raise DefinitionError(f"agent {agent.name!r} declares a tool twice")
            if agent.memory is not None and MEMORY_TOOL in names:
                # (checked here, not in __post_init__: the worker adds the tool by replace)
                raise DefinitionError(f"agent {agent.name!r}: {MEMORY_TOOL} is its memory's tool")
            self._agents[agent.name] = agent
        for agent in self._agents.values():
            for sp in agent.specialists:
                if sp.agent not in self._agents:
                    raise DefinitionError(
                        f"agent {agent.name!r}: specialist {sp.name!r} names no agent {sp.agent!r}"
                    )
        self._by_hash = {a.definition_hash: a for a in self._agents.values()}
        #: the definition hashes served here: a worker starts only turns pinned to one
        self.hashes: list[str] = sorted(self._by_hash)

    def by_hash(self, definition_hash: str) -> AgentDefinition | None:
        """The agent whose definition hashes to ``definition_hash``, if served here."""
        return self._by_hash.get(definition_hash)

    def get(self, name: str) -> AgentDefinition:
        try:
            return self._agents[name]
        except KeyError:
            raise UnknownAgent(f"no agent named {name!r}") from None

    def names(self) -> list[str]:
        return sorted(self._agents)


_lock = threading.Lock()
_loaded: dict[str, AgentRegistry] = {}


def load_agents(module: str) -> AgentRegistry:
    """Import an agents module once and index its ``AGENTS``."""
    with _lock:
        if module not in _loaded:
            try:
                mod = importlib.import_module(module)
            except ImportError as exc:
                raise DefinitionError(f"cannot import agents module {module!r}") from exc
            agents = getattr(mod, "AGENTS", None)
            if not isinstance(agents, list | tuple):
                raise DefinitionError(f"{module!r} has no AGENTS list")
            _loaded[module] = AgentRegistry(list(agents))
        return _loaded[module]
