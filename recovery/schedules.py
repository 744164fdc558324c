"""One pass over the due schedules: every due tick's turn admitted once, in order, each
followed by the move of its schedule to the tick after it (runtime/schedules.py,
docs/flow-control.md).

Beat runs it every ``TURNKEEP_SCHEDULE_INTERVAL``. A pass late by several intervals
admits each tick within the grace (a bounded number a pass; the rest stay due for the
next), and moves past the ones beyond the grace in one step, counting them skipped.
Each tick's turn is admitted before the schedule moves on, under an id derived from
the schedule and the tick, so a crash between the two admits it again as a replay, and
two passes at once (two beats) admit it once and move the schedule once
(``schedule_fired`` compares and swaps the tick; the pass that loses stops there).
A tick whose agent is no longer declared, or whose session is another agent's, is
skipped and logged; one refused by a quota stays due and is tried again next pass.
Each tick is admitted by the one admission (store/admission.py): the queued quotas,
the session's TTL, and for a schedule made over the API its creator's role, looked up
again: a creator no token stands for any more, or only a reader's, pauses the schedule
with ``creator_revoked`` as its reason, and nothing is admitted as them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import Enum

from turnkeep.runtime import schedules
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.errors import UnknownAgent
from turnkeep.runtime.schedules import Missed
from turnkeep.runtime.settings import Settings, get_settings
from turnkeep.store import admission
from turnkeep.store.errors import (
    CreatorRevoked,
    IdempotencyConflict,
    QuotaExceeded,
    SessionAgentConflict,
    SessionDeleted,
    StoreError,
)
from turnkeep.store.facade import Store
from turnkeep.store.schedules import ScheduleRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FireReport:
    due: int
    fired: int
    skipped: int


def fire_once(
    store: Store,
    agents: AgentRegistry,
    enqueue: Callable[[str, str], None],
    *,
    grace: float,
    limit: int = 100,
    ticks: int = schedules.TICKS_PER_PASS,
    now: datetime | None = None,
    settings: Settings | None = None,
) -> FireReport:
    """Fire every schedule due now (at most ``limit`` schedules, ``ticks`` ticks each),
    each tick through the one admission under ``settings`` (the process's when None)."""
    settings = settings or get_settings()
    due = store.schedules.due_schedules(limit=limit)
    fired = skipped = 0
    for s in due:
        at = now or datetime.now(UTC)
        assert s.next_at is not None  # a due schedule has a tick
        steps = schedules.firings(
            s.when,
            s.next_at,
            at,
            anchor=s.created_at,
            missed=Missed(s.missed),
            grace=grace,
            limit=ticks,
        )
        for step in steps:
            tick = replace(s, next_at=step.tick)
            outcome = (
                fire_tick(store, settings, agents, enqueue, tick) if step.fire else Tick.SKIPPED
            )
            if outcome is Tick.STAYS_DUE:
                break  # this tick and the ones after it: the next pass
            admitted = outcome is Tick.ADMITTED
            passed = step.skipped + int(step.fire and not admitted)
            if not store.schedules.schedule_fired(
                tick, next_at=step.next_at, fired=admitted, skipped=passed
            ):
                break  # another pass moved it (it goes on from there), or it was paused
            fired += int(admitted)
            skipped += passed
    return FireReport(due=len(due), fired=fired, skipped=skipped)


class Tick(Enum):
    """What became of one tick: its turn admitted; skipped (passed over for good); or
    not done now (a quota, Postgres away, the schedule paused), due again next pass."""

    ADMITTED = "admitted"
    SKIPPED = "skipped"
    STAYS_DUE = "stays_due"


def fire_tick(
    store: Store,
    settings: Settings,
    agents: AgentRegistry,
    enqueue: Callable[[str, str], None],
    s: ScheduleRecord,
) -> Tick:
    """Admit the turn of ``s``'s tick (its ``next_at``)."""
    try:
        _admit(store, settings, agents, enqueue, s)
    except IdempotencyConflict:
        # admitted already, under another build's definition (a deploy between)
        return Tick.ADMITTED
    except QuotaExceeded:
        log.warning("schedule %s: its tick waits for room (quota)", s.schedule_id)
        return Tick.STAYS_DUE  # never lost: still due, tried again next pass
    except (UnknownAgent, SessionAgentConflict) as exc:
        log.warning("schedule %s: tick skipped: %s", s.schedule_id, exc.code)
        return Tick.SKIPPED
    except CreatorRevoked as exc:
        # never admitted as someone who may no longer write: paused, its reason the
        # refusal's code, until an admin resumes it (docs/flow-control.md)
        log.warning("schedule %s: tick refused: %s; paused", s.schedule_id, exc.code)
        store.schedules.pause_schedule(
            s.tenant_id, s.schedule_id, paused=True, next_at=None, reason=exc.code
        )
        return Tick.STAYS_DUE
    except SessionDeleted as exc:
        # its session was deleted (docs/erasure.md): never re-created, so the
        # schedule stops (paused, as its owner sees it) rather than fire on
        log.warning("schedule %s: its session was deleted; paused", s.schedule_id)
        store.schedules.pause_schedule(
            s.tenant_id, s.schedule_id, paused=True, next_at=None, reason=exc.code
        )
        return Tick.STAYS_DUE
    except StoreError as exc:  # Postgres away: the next pass tries again
        log.warning("schedule %s: %s", s.schedule_id, type(exc).__name__)
        return Tick.STAYS_DUE
    return Tick.ADMITTED


def _admit(
    store: Store,
    settings: Settings,
    agents: AgentRegistry,
    enqueue: Callable[[str, str], None],
    s: ScheduleRecord,
) -> bool:
    # the version a new turn gets (a gated agent's: the tenant's promoted one)
    agent = agents.default(
        s.agent_name, lambda: store.promotions.promoted_versions(s.tenant_id, s.agent_name)
    )
    tick = s.next_at
    assert tick is not None
    session_id = schedules.session_id(s.schedule_id, tick, s.session_id)
    messages = list(TurnInput.from_json(s.input).messages)
    # the schedule's creator is the turns' submitter: it reads them, answers their waits
    # (its role looked up again for an API schedule's tick: store/admission.py)
    admitted = admission.admit(
        store,
        settings,
        admission.Ask(
            source=admission.Source.FOLLOWUP if s.origin else admission.Source.SCHEDULE,
            tenant_id=s.tenant_id,
            session_id=session_id,
            turn_id=schedules.turn_id(s.schedule_id, tick),
            by=s.created_by,
            agent_name=agent.name,
            agent_hash=agent.definition_hash,
            turn_input=TurnInput(messages),
            output_schema=agent.output_schema,
            budget=None,
            agent_version=agent.version,
            on_deploy=agent.on_deploy.value,
        ),
    )
    admission.release(enqueue, admitted)
    return True
