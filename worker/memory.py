"""Durable memory in the worker (runtime/memory.py, docs/memory.md): the ``remember``
tool's writer and the recall of a turn's facts, both through the store's named
statements (``remember_fact``, ``recall_facts``).

A fact is redacted (the process's redactor, runtime/obs/redact.py) before it is written,
then kept once per writing call: its idempotency key is the row's ``source_key``, so a
rerun of the call after a crash (the tool is idempotent: it runs again with the same
key) writes nothing more. The write is not fenced, as a tool step's record is not
(worker/tool_steps.py): the call remembered it whichever worker ran it.

The store and the redactor are the worker process's own (worker/resources.py), looked
up when the tool first writes; tests pass their own.

A delegated child turn has no memory (``scope_for``): its tools are the parent's
allowlist, and a specialist recalls nothing of the subject's other conversations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from turnkeep.runtime import memory
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents import remember
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import ToolContext, ToolDefinition
from turnkeep.runtime.errors import DefinitionError
from turnkeep.runtime.memory import MemoryScope, NoMemoryScope, scope_key
from turnkeep.runtime.messages import Message
from turnkeep.runtime.obs.redact import Redactor
from turnkeep.store.records import MemoryRecord, TurnRecord
from turnkeep.worker.resources import resources


class TurnReads(Protocol):
    """The turn a fact is kept or recalled for (the store's ``reads``)."""

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord: ...


class RecallsFacts(Protocol):
    """The facts a turn recalls (the store's ``memory``)."""

    def recall_facts(
        self, tenant_id: str, scope_key: str, *, before: datetime, limit: int
    ) -> list[MemoryRecord]: ...


class Recalls(Protocol):
    """What a recall needs of the store (``turnkeep.store.facade.Store``)."""

    @property
    def memory(self) -> RecallsFacts: ...


class Facts(RecallsFacts, Protocol):
    """The facts themselves, kept and recalled (the store's ``memory``)."""

    def remember_fact(
        self,
        tenant_id: str,
        scope_key: str,
        source_key: str,
        fact: str,
        *,
        session_id: str,
        turn_id: str,
    ) -> bool: ...


class MemoryStore(Recalls, Protocol):
    """What the memory tools need of the store (``turnkeep.store.facade.Store``)."""

    @property
    def reads(self) -> TurnReads: ...

    @property
    def memory(self) -> Facts: ...


def _process_store() -> MemoryStore:
    return resources().store


def _process_redactor() -> Redactor:
    return resources().redactor


def scope_for(agent: AgentDefinition, turn: TurnRecord) -> MemoryScope | None:
    """The memory scope ``turn`` runs with: the agent's (``AgentDefinition.memory``),
    none for a delegated child turn."""
    declared = getattr(agent, "memory", None)
    if declared is None or TurnInput.from_json(turn.input).link is not None:
        return None
    return MemoryScope(declared)


def write(
    store: MemoryStore, redactor: Redactor, scope: MemoryScope, ctx: ToolContext, fact: str
) -> dict[str, Any]:
    """Remember ``fact`` (cleaned: runtime/memory.py ``clean_fact``) for the call
    ``ctx`` of a turn under ``scope``, redacted, once per the call's idempotency key:
    the tool's result. ``NoMemoryScope`` when the turn has no scope key."""
    turn = store.reads.get_turn(ctx.tenant_id, ctx.session_id, ctx.turn_id)
    key = scope_key(scope, turn)
    if key is None:
        what = "no project" if scope is MemoryScope.PROJECT else "no subject"
        raise NoMemoryScope(f"this conversation has {what}: nothing can be remembered")
    # a redaction marker may be longer than what it replaced: the row's bound holds
    stored = redactor.redact_text(fact)[: memory.MAX_FACT_CHARS]
    store.memory.remember_fact(
        ctx.tenant_id,
        key,
        ctx.idempotency_key,
        stored,
        session_id=ctx.session_id,
        turn_id=ctx.turn_id,
    )
    return {"remembered": stored}


def tools_for(
    scope: MemoryScope,
    *,
    store: MemoryStore | None = None,
    redactor: Redactor | None = None,
) -> tuple[ToolDefinition, ...]:
    """The memory tools of ``scope``, writing through ``store`` and ``redactor`` (None:
    the worker process's, looked up on the first write)."""
    get_store: Callable[[], MemoryStore] = _process_store if store is None else lambda: store
    get_redactor: Callable[[], Redactor] = (
        _process_redactor if redactor is None else lambda: redactor
    )

    def writer(scope: MemoryScope, ctx: ToolContext, fact: str) -> dict[str, Any]:
        return write(get_store(), get_redactor(), scope, ctx, fact)

    return remember.memory_tools(scope, writer)


def with_memory(
    agent: AgentDefinition,
    turn: TurnRecord,
    *,
    store: MemoryStore | None = None,
    redactor: Redactor | None = None,
) -> AgentDefinition:
    """``agent`` as ``turn`` runs it: its tools and the memory tools of its scope
    (``scope_for``); the agent itself when the turn has no memory."""
    scope = scope_for(agent, turn)
    if scope is None:
        return agent
    if agent.tool(memory.TOOL_NAME) is not None:
        raise DefinitionError(f"agent {agent.name!r} has memory and a tool {memory.TOOL_NAME!r}")
    return replace(agent, tools=(*agent.tools, *tools_for(scope, store=store, redactor=redactor)))


def recall(
    store: Recalls, scope: MemoryScope, turn: TurnRecord, limit: int = memory.RECALL_LIMIT
) -> list[dict[str, Any]]:
    """The facts ``turn`` recalls under ``scope``: at most ``limit``, remembered before
    the turn was admitted (so each attempt of it recalls the same), newest first;
    none when the turn has no scope key."""
    key = scope_key(scope, turn)
    if key is None:
        return []
    rows = store.memory.recall_facts(turn.tenant_id, key, before=turn.created_at, limit=limit)
    return [
        {
            "fact": r.fact,
            "session_id": r.session_id,
            "turn_id": r.turn_id,
            "created_at": r.created_at,
        }
        for r in rows
    ]


def recalled(
    store: Recalls, agent: AgentDefinition, turn: TurnRecord, limit: int = memory.RECALL_LIMIT
) -> Message | None:
    """The recall message ``turn``'s model calls carry (runtime/memory.py
    ``recall_message``), None when it has no memory or nothing to recall: one read."""
    scope = scope_for(agent, turn)
    if scope is None:
        return None
    return memory.recall_message(recall(store, scope, turn, limit))
