"""The invariant checker: turnkeep's promise, checked over Postgres (and Redis).

Call ``check_all`` after any scenario; it returns a list of violations (empty when
the promise held) so a failure names every broken invariant at once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import psycopg

from turnkeep.store.keys import fence_key, lease_key

OUTCOMES = ("model.completed", "tool.completed", "tool.interrupted")
TERMINAL = ("completed", "failed", "cancelled")


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@dataclass
class FenceWatch:
    """Remembers each session's fence across snapshots: fences must never go down."""

    seen: dict[tuple[str, str], int] = field(default_factory=dict)

    def observe(self, database_url: str) -> list[str]:
        bad = []
        with psycopg.connect(_pg(database_url)) as conn:
            for t, s, fence in conn.execute("SELECT tenant_id, session_id, fence FROM sessions"):
                before = self.seen.get((t, s), 0)
                if fence < before:
                    bad.append(f"{t}/{s}: fence went down from {before} to {fence}")
                self.seen[(t, s)] = max(before, fence)
        return bad


def check_all(
    database_url: str,
    *,
    tenants: list[str] | None = None,
    accepted: list[tuple[str, str, str]] | None = None,
    redis_client: Any = None,
    require_settled: bool = True,
    effects_table: bool = True,
) -> list[str]:
    """Every invariant over the sessions of ``tenants`` (all when None).

    ``accepted``: (tenant, session, turn) the API said yes to; each must exist.
    ``require_settled``: every accepted turn must be terminal (or parked), else it
    must hold a live lease or be one the next recovery scan picks up.
    """
    bad: list[str] = []
    with psycopg.connect(_pg(database_url)) as conn:
        where, params = "", ()
        if tenants is not None:
            where, params = " WHERE tenant_id = ANY(%s)", (tenants,)
        sessions = conn.execute(
            "SELECT tenant_id, session_id, head_seq, fence, earliest_seq FROM sessions" + where,
            params,
        ).fetchall()
        events: dict[tuple[str, str], list[tuple[Any, ...]]] = defaultdict(list)
        for row in conn.execute(
            "SELECT tenant_id, session_id, seq, turn_id, type, step, fence, data FROM events"
            + where
            + " ORDER BY tenant_id, session_id, seq",
            params,
        ):
            events[(row[0], row[1])].append(row[2:])
        turns = conn.execute(
            "SELECT tenant_id, session_id, turn_id, state FROM turns" + where, params
        ).fetchall()
        for t, s, head, fence, earliest in sessions:
            evs = events[(t, s)]
            seqs = [e[0] for e in evs]
            # contiguous from the earliest retained seq (1 unless the journal was pruned)
            if seqs != list(range(earliest, head + 1)):
                bad.append(
                    f"{t}/{s}: seq not contiguous {earliest}..{head}: {_gaps(seqs, head, earliest)}"
                )
            fences = [e[4] for e in evs if e[4] > 0]
            if any(b < a for a, b in pairwise(fences)):
                bad.append(f"{t}/{s}: event fences go down along seq: {fences}")
            if fences and max(fences) > fence:
                bad.append(f"{t}/{s}: an event has fence {max(fences)} above stored {fence}")
            bad += _per_turn(t, s, evs)
        known = {(t, s, tid): state for t, s, tid, state in turns}
        for key in accepted or []:
            if key not in known:
                bad.append(f"accepted turn missing: {'/'.join(key)}")
        if require_settled:
            bad += _settled(conn, known, redis_client)
        if effects_table:
            bad += _effects(conn, events)
    return bad


def _gaps(seqs: list[int], head: int, earliest: int = 1) -> str:
    missing = sorted(set(range(earliest, head + 1)) - set(seqs))
    dup = sorted({x for x in seqs if seqs.count(x) > 1})
    return f"missing={missing[:10]} duplicate={dup[:10]}"


def _per_turn(t: str, s: str, evs: list[tuple[Any, ...]]) -> list[str]:
    bad = []
    by_turn: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for e in evs:
        by_turn[e[1]].append(e)
    for tid, tevs in by_turn.items():
        outcomes: dict[int, int] = defaultdict(int)
        for e in tevs:
            if e[2] in OUTCOMES:
                outcomes[e[3]] += 1
        for step, n in outcomes.items():
            if n != 1:
                bad.append(f"{t}/{s}/{tid}: step {step} has {n} outcomes")
        terminal = [e for e in tevs if e[2] in ("turn.completed", "turn.failed", "turn.cancelled")]
        if len(terminal) > 1:
            bad.append(f"{t}/{s}/{tid}: {len(terminal)} terminal events")
        if terminal and terminal[-1] is not tevs[-1]:
            bad.append(f"{t}/{s}/{tid}: events after the terminal one")
        completed = bool(terminal) and terminal[0][2] == "turn.completed"
        for e in tevs:
            if e[2] != "model.completed" or not completed:
                continue
            calls = e[5]["message"].get("tool_calls") or []
            for i, _call in enumerate(calls, start=1):
                if outcomes.get(e[3] + i, 0) != 1:
                    bad.append(
                        f"{t}/{s}/{tid}: tool call at step {e[3] + i} has "
                        f"{outcomes.get(e[3] + i, 0)} results"
                    )
    return bad


def _settled(
    conn: psycopg.Connection, known: dict[tuple[str, str, str], str], redis_client: Any
) -> list[str]:
    bad = []
    for (t, s, tid), state in known.items():
        if state in TERMINAL or state in ("waiting", "needs_reconciliation"):
            continue
        leased = bool(redis_client is not None and redis_client.exists(lease_key(t, s)))
        bad.append(f"{t}/{s}/{tid}: not settled (state {state}, leased={leased})")
    return bad


def _effects(conn: psycopg.Connection, events: dict[tuple[str, str], list[Any]]) -> list[str]:
    exists = conn.execute("SELECT to_regclass('test_tool_effects')").fetchone()
    if not exists or exists[0] is None:
        return []
    bad = []
    counts = dict(conn.execute("SELECT key, applied FROM test_tool_effects").fetchall())
    for (t, s), evs in events.items():
        for e in evs:
            # a rerun's reused outcome took effect under its source's key, checked there
            if (
                e[2] == "tool.completed"
                and e[5].get("effect") == "idempotent"
                and "reused" not in e[5]
            ):
                key = f"{t}/{s}/{e[1]}/{e[3]}"
                if counts.get(key) != 1:
                    bad.append(f"idempotent effect {key} applied {counts.get(key)} times")
    return bad


class FenceWatcher:
    """``FenceWatch`` on a background thread: observes every ``interval`` seconds while
    a scenario runs, so a fence that went down and up again between two checks by the
    test itself is still caught. ``stop()`` returns every violation seen."""

    def __init__(self, database_url: str, *, interval: float = 0.2) -> None:
        import threading

        self.database_url = database_url
        self.interval = interval
        self.watch = FenceWatch()
        self.violations: list[str] = []
        self.errors = 0
        self.observations = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fence-watcher", daemon=True)

    def start(self) -> FenceWatcher:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.violations += self.watch.observe(self.database_url)
                self.observations += 1
            except psycopg.Error:
                self.errors += 1  # the database may be the thing a scenario breaks

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(10)
        self.violations += self.watch.observe(self.database_url)
        return self.violations


def redis_fence_covers_postgres(
    database_url: str, redis_client: Any, *, tenants: list[str] | None = None
) -> list[str]:
    """Redis's fence counter must be at or above every fence Postgres accepted. After
    Redis lost its counter (restart, FLUSHALL) this holds for every session leased
    since, as each grant floors the counter to that session's Postgres fence: call it
    once every session of the run was leased again."""
    raw = redis_client.get(fence_key())
    counter = int(raw) if raw is not None else 0
    where, params = "", ()
    if tenants is not None:
        where, params = " WHERE tenant_id = ANY(%s)", (tenants,)
    with psycopg.connect(_pg(database_url)) as conn:
        rows = conn.execute(
            "SELECT tenant_id, session_id, fence FROM sessions" + where, params
        ).fetchall()
    return [
        f"{t}/{s}: postgres fence {f} above the redis counter {counter}"
        for t, s, f in rows
        if f > counter
    ]


def effects_at_most_once(database_url: str, *, tenants: list[str] | None = None) -> list[str]:
    """Like the effects check of ``check_all``, for runs where a tool may fail for a
    reason of its own (its database went away): an idempotent ``count`` step whose
    result is a failure applied its effect at most once, any other exactly once."""
    bad = []
    where, params = "", ()
    if tenants is not None:
        where, params = " AND tenant_id = ANY(%s)", (tenants,)
    with psycopg.connect(_pg(database_url)) as conn:
        counts = dict(conn.execute("SELECT key, applied FROM test_tool_effects").fetchall())
        rows = conn.execute(
            "SELECT tenant_id, session_id, turn_id, step, data FROM events"
            " WHERE type = 'tool.completed'" + where,
            params,
        ).fetchall()
    for t, s, tid, step, data in rows:
        if data.get("effect") != "idempotent":
            continue
        key = f"{t}/{s}/{tid}/{step}"
        allowed = (None, 1) if data.get("error") == "tool_failed" else (1,)
        if counts.get(key) not in allowed:
            bad.append(f"idempotent effect {key} applied {counts.get(key)} times")
    return bad


def effects_accounted(
    database_url: str, *, tenants: list[str], effectful: tuple[str, ...] = ("charge",)
) -> list[str]:
    """The test agents' effects against the journal, for runs whose tools log every
    call in ``test_tool_calls`` and dedupe their idempotent effect in
    ``test_tool_effects`` (tests/agents.py), keyed by the call's idempotency key.

    An ``effectful`` tool's call is never run twice: its step settled ``tool.completed``
    ran exactly once (at most once if the tool itself failed), one settled
    ``tool.interrupted`` (outcome unknown after a crash) or with no outcome at most
    once. And nothing takes effect that no committed model message asked for: every
    logged effectful call and every idempotent effect names such a step."""
    calls: dict[str, int] = defaultdict(int)
    with psycopg.connect(_pg(database_url)) as conn:
        for (key,) in conn.execute("SELECT key FROM test_tool_calls"):
            calls[key] += 1
        effects = [k for (k,) in conn.execute("SELECT key FROM test_tool_effects")]
        rows = conn.execute(
            "SELECT tenant_id, session_id, turn_id, step, type, data FROM events"
            " WHERE tenant_id = ANY(%s)"
            " AND type IN ('model.completed', 'tool.completed', 'tool.interrupted')",
            (tenants,),
        ).fetchall()
    asked: dict[str, str] = {}  # idempotency key -> tool name
    settled: dict[str, tuple[str, dict[str, Any]]] = {}
    for t, s, tid, step, kind, data in rows:
        if kind == "model.completed":
            for i, call in enumerate(data["message"].get("tool_calls") or [], start=1):
                asked[f"{t}/{s}/{tid}/{step + i}"] = call["name"]
        else:
            settled[f"{t}/{s}/{tid}/{step}"] = (kind, data)
    bad = []
    for key, name in asked.items():
        if name not in effectful:
            continue
        kind, data = settled.get(key, ("none", {}))
        exact = kind == "tool.completed" and data.get("error") != "tool_failed"
        allowed = (1,) if exact else (0, 1)
        if calls.get(key, 0) not in allowed:
            bad.append(f"effectful call {key} ({kind}) ran {calls.get(key, 0)} times")
    mine = tuple(f"{t}/" for t in tenants)
    for key in [k for k in calls if k.startswith(mine)] + [
        k for k in effects if k.startswith(mine)
    ]:
        if key not in asked:
            bad.append(f"an effect for {key}, a step no committed model message asked for")
    return bad


def steps_after_cancel(events: list[Any]) -> int:
    """How many of a turn's steps committed after its cancellation was requested (its
    events, in seq order). A cancellation is honoured at the next safe point, the end
    of the step in flight when it landed, so a correct worker commits at most one."""
    requested = next(e.seq for e in events if e.type == "turn.cancel_requested")
    return len({e.step for e in events if e.seq > requested and e.step is not None})
