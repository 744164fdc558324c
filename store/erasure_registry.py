"""The eraser's one list (docs/erasure.md "The registry"): every table, Redis key and
file that can hold anything of a session, each with how it goes when the session is
erased. The eraser (worker/erasure.py) runs the tables' statements in this order and
deletes the keys; nothing else names what a session holds.

A table added to the schema must be registered here, whatever its columns:
tests/integration/test_erasure_registry.py reads the migrated database's catalogue and
fails on a table this list does not name, so a new plane's table cannot be forgotten.
A table that holds no content of any session is registered too, as ``KEPT`` with the
reason: that reason is the review a new table gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Part(StrEnum):
    """What one erase statement deletes (or scrubs); each value is its statement in
    sql/erasure.sql, written out there or, for a table the registry erases by plain
    batches, made from its ``erase_batch``. The order the eraser runs them in is the
    registry's (store/erasure_registry.py), which names every holder of a session's
    content."""

    #: an experiment's case results of the session: their assertions' details go
    EVAL_RESULTS = "scrub_eval_results"
    #: dataset cases made from the session's turns
    EVAL_CASES = "erase_eval_cases"
    #: follow-up schedules its turns made
    FOLLOWUPS = "erase_followups"
    FEEDBACK = "erase_feedback"
    WEBHOOKS = "erase_webhooks"
    TOOL_STEPS = "erase_tool_steps"
    ATTACHMENTS = "erase_attachments"
    MEMORIES = "erase_memories"
    PROVIDER_STATE = "erase_provider_state"
    #: the search labels' rows (store/schema_search.py): no foreign key, so named here
    TURN_METADATA = "erase_turn_metadata"
    SESSION_METADATA = "erase_session_metadata"
    EVENTS = "erase_events"
    TURNS = "erase_turns"


#: attachments one statement deletes at most: a row holds up to 192 KiB of content
ATTACHMENT_BATCH = 50


class Kind(StrEnum):
    TABLE = "table"
    #: a Redis key pattern under the deployment's prefix (store/keys.py)
    REDIS = "redis"
    FILE = "file"


class How(StrEnum):
    #: the eraser deletes the session's rows (or keys)
    DELETED = "deleted"
    #: the row belongs to something that outlives the session; the eraser removes what
    #: of the session it holds and leaves the rest
    SCRUBBED = "scrubbed"
    #: a key shared by the tenant's sessions (a sorted set): the session's member is
    #: removed, the key stays for the others
    MEMBER = "member"
    #: stays: ``why`` says why it holds no content of an erased session
    KEPT = "kept"


@dataclass(frozen=True)
class Holder:
    kind: Kind
    #: the table's name, or the key's pattern
    name: str
    how: How
    why: str
    #: the erase statements (store/sql/erasure.sql), in the order they run
    parts: tuple[Part, ...] = ()
    #: rows one statement touches at most; None: TURNKEEP_ERASURE_BATCH
    batch: int | None = None
    #: its one statement is made from sql/erasure.sql's ``erase_batch`` (``generated``),
    #: not written out in the file
    batched: Batched | None = None


@dataclass(frozen=True)
class Batched:
    """A table erased by plain batches: its statement is sql/erasure.sql's
    ``erase_batch`` made for it; the session's rows, at most :batch of them."""

    #: a condition on the rows besides the session's (SQL on the table's columns)
    where: str | None = None
    #: the order the rows go in (SQL of the ORDER BY); None: any
    order: str | None = None


def _table(name: str, how: How, why: str, *parts: Part, batch: int | None = None) -> Holder:
    return Holder(Kind.TABLE, name, how, why, parts, batch)


def _batched(
    name: str,
    why: str,
    part: Part,
    *,
    where: str | None = None,
    order: str | None = None,
    batch: int | None = None,
) -> Holder:
    """A table whose session's rows are deleted by ``part``, made from ``erase_batch``."""
    return Holder(Kind.TABLE, name, How.DELETED, why, (part,), batch, Batched(where, order))


#: in the order the eraser runs them: the copies of the session's content elsewhere
#: first (they are found through the session's id, which the rows below still
#: confirm), then children before parents, the session row last (``finish_erasure``)
HOLDERS: tuple[Holder, ...] = (
    _table(
        "eval_results",
        How.SCRUBBED,
        "an experiment's case outlives the session its turn ran in, and the experiment's "
        "figures stay; each assertion's detail and the judge's reason (which may quote "
        "the turn) go, for a case run in the session or made from one of its turns",
        Part.EVAL_RESULTS,
    ),
    _table(
        "eval_cases",
        How.DELETED,
        "a case made from one of the session's turns is a copy of its input, files and "
        "output (in every version that took it over); its version's case_count drops",
        Part.EVAL_CASES,
    ),
    _batched(
        "schedules",
        "a follow-up (a schedule a turn of the session made, origin set) goes with it; "
        "a schedule made over the API that targets the session is its owner's and stays "
        "(its next tick is refused and pauses it): its input is the owner's, not the "
        "session's",
        Part.FOLLOWUPS,
        where="origin IS NOT NULL",
    ),
    _batched("feedback", "people's scores and notes of the session's turns", Part.FEEDBACK),
    _batched("webhooks", "callbacks carrying the turns' outcomes", Part.WEBHOOKS),
    _batched("tool_steps", "tool results (ctx.step)", Part.TOOL_STEPS),
    # a smaller batch: a row holds up to 192 KiB of content
    _batched("attachments", "uploaded files", Part.ATTACHMENTS, batch=ATTACHMENT_BATCH),
    _batched("memories", "facts its turns remembered, in whatever scope", Part.MEMORIES),
    # an event's delete would cascade to its row; deleted first, they are counted
    _batched("provider_state", "providers' opaque reasoning", Part.PROVIDER_STATE, order="seq"),
    # the search labels (docs/search.md): a walk of their primary key
    _batched("turn_metadata", "the turns' search labels", Part.TURN_METADATA),
    _batched("session_metadata", "the session's search labels", Part.SESSION_METADATA),
    # the oldest :batch events (a walk of the primary key)
    _batched("events", "the journal", Part.EVENTS, order="seq"),
    # once their feedback and webhooks are gone
    _batched("turns", "inputs, results, errors", Part.TURNS),
    _table("sessions", How.DELETED, "the session row, last (finish_erasure)"),
    _table(
        "session_tombstones",
        How.KEPT,
        "the tombstone: ids, who and when, no content; without it a replayed key would "
        "re-create the session",
    ),
    _table("projects", How.KEPT, "a project's owner and agent overrides: no session's content"),
    _table("tenant_limits", How.KEPT, "a tenant's limits: no session's content"),
    _table(
        "bridge_bindings",
        How.KEPT,
        "who a chat sender is (workspace, channel, user): no session's content",
    ),
    _table(
        "eval_datasets",
        How.KEPT,
        "a version's name, number, hash and creator; its cases are eval_cases",
    ),
    _table(
        "eval_experiments",
        How.KEPT,
        "an experiment's spec (dataset, agent, approvals, judge): no session's content",
    ),
    _table(
        "agent_promotions",
        How.KEPT,
        "the promotions' journal: checks and figures of experiments, no turn's content",
    ),
    _table("alembic_version", How.KEPT, "the schema's revision: no tenant's data"),
    Holder(
        Kind.REDIS,
        "secret:{tenant}:{session}:{turn}:{request}",
        How.DELETED,
        "an external_auth answer waiting for its tool",
    ),
    Holder(
        Kind.REDIS,
        "lease:{tenant}:{session}",
        How.DELETED,
        "names the session; its worker's writes are fenced by the tombstone already",
    ),
    Holder(Kind.REDIS, "rerun:{tenant}:{session}", How.DELETED, "names the session"),
    Holder(Kind.REDIS, "paced:{tenant}:{session}", How.DELETED, "its head turn's wait"),
    Holder(
        Kind.REDIS,
        "held:{tenant}",
        How.MEMBER,
        "the tenant's sessions held by its max_running: its id leaves (a wake would drop "
        "it too, but not before)",
    ),
    Holder(
        Kind.REDIS,
        "held:{tenant}:agent:*",
        How.MEMBER,
        "the same, per agent of the tenant (a tenant id holds no ':')",
    ),
    Holder(
        Kind.REDIS,
        "fair:*:ready:*:{tenant}",
        How.MEMBER,
        "the tenant's sessions waiting for a ticket, per band: its id leaves",
    ),
    Holder(
        Kind.REDIS,
        "celery:* (the broker's queue lists and unacked hash)",
        How.KEPT,
        "a Celery message names the tenant and session only, never content; one "
        "delivered after the tombstone finds nothing to run and is acked, and a dead "
        "worker's unacked one goes with its visibility timeout",
    ),
    Holder(
        Kind.REDIS,
        "events:{tenant}:{session}",
        How.KEPT,
        "a pub/sub channel: it holds nothing once published (the 'deleted' notice is "
        "the last message a follower gets)",
    ),
    Holder(
        Kind.FILE,
        "(none)",
        How.KEPT,
        "attachments' content lives in Postgres (attachments.content): no file holds a "
        "session's content",
    ),
)


def holders(kind: Kind) -> tuple[Holder, ...]:
    return tuple(h for h in HOLDERS if h.kind is kind)


def tables() -> dict[str, Holder]:
    """Every registered table by name."""
    return {h.name: h for h in holders(Kind.TABLE)}


def batches(batch: int) -> list[tuple[Part, int]]:
    """The erase statements in the order the eraser runs them, each with the rows one
    statement touches at most (``batch``: TURNKEEP_ERASURE_BATCH)."""
    return [(p, h.batch or batch) for h in holders(Kind.TABLE) for p in h.parts]


def generated() -> list[tuple[str, str, dict[str, str]]]:
    """(statement, template, its slots' values) for each table erased by plain batches:
    the statements store/sql.py makes from sql/erasure.sql's ``erase_batch``."""
    made: list[tuple[str, str, dict[str, str]]] = []
    for h in holders(Kind.TABLE):
        if h.batched is None:
            continue
        where, order = h.batched.where, h.batched.order
        slots = {
            "table": h.name,
            "where": "" if where is None else f" AND {where}",
            "order": "" if order is None else f"ORDER BY {order} ",
        }
        made.extend((part.value, "erase_batch", slots) for part in h.parts)
    return made
