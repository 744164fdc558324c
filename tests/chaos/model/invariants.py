"""The model's invariants: the rows of docs/guarantees.md's "What the model checks".

Each check returns violations, one string each, naming the issue 37 item or the
guarantee it breaks and the run's seed (``World.params``), so a failure says how to
replay it. ``cheap`` runs after every operation; ``final`` once the run drained.
Postgres is read as the owner (no row security: every tenant at once), Redis is the
run's private server (its whole keyspace is the namespace).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

from tests.chaos.model.world import QUOTA_PER_SESSION, SLOTS, Probe, World
from tests.invariants import check_all, effects_accounted

#: the most turns of the heavy tenant's priority-9 backlog that may start between the
#: light tenant's admission and its start: every slot once, and a few in flight
FAIR_BOUND = SLOTS + 2
#: how long after the run every admitted turn has to settle (or wait on a question),
#: every deleted session to be erased, every experiment to end
DRAIN = 120.0
#: where an erased session's id may stay, and why (docs/erasure.md "What stays"):
#: ids only, never content; its content (the markers) is checked everywhere
KEEPS_ID = {
    ("session_tombstones", None): "the tombstone, kept for ever so nothing re-creates it",
    ("sessions", "forked_from_session"): "a fork names its source",
    ("schedules", "session_id"): "a schedule targeting it stays, paused",
    ("schedules", "origin"): "a schedule names the turn it came from",
    ("eval_results", "session_id"): "an experiment's case names its case session",
}
#: rows where an erased session's id may stay, and why: a delegated child is a session
#: of its own, not erased with its parent, and names it (docs/erasure.md)
KEEPS_ID_ROWS = {
    "turns": "session_id NOT LIKE 'dlg-%%'",
    "events": "session_id NOT LIKE 'dlg-%%'",
}
#: the harness's own tables (tests/agents.py logs tool calls by idempotency key)
HARNESS = ("test_tool_effects", "test_tool_calls", "alembic_version")
WAITS_TYPED = ("question", "approval", "approvals")


def _tag(w: World, what: str) -> str:
    return f"[{what}; seed {w.params.seed}]"


# -- after each operation ----------------------------------------------------------


def cheap(w: World) -> list[str]:
    return [*cross_tenant(w), *quotas(w), *ttls(w), *bridges(w)]


def cross_tenant(w: World) -> list[str]:
    """Another tenant's GET or cancel of a known id answers 404."""
    bad: list[str] = []
    known = list(w.sessions.values())
    for s in w.rng.sample(known, min(3, len(known))):
        other = w.other(s.tenant)
        urls = [f"/v1/sessions/{s.sid}"] + [f"/v1/sessions/{s.sid}/turns/{t}" for t in s.turns[:2]]
        for url in urls:
            code = other.http.get(url).status_code
            w.checks["cross_tenant"] += 1
            if code != 404:
                bad.append(f"{_tag(w, 'tenancy')} {other.name} GET {s.tenant}'s {url}: {code}")
        if s.turns and not s.deleted:
            code = other.http.post(f"/v1/sessions/{s.sid}/turns/{s.turns[0]}/cancel").status_code
            w.checks["cross_tenant"] += 1
            if code != 404:
                bad.append(f"{_tag(w, 'tenancy')} {other.name} cancels {s.tenant}'s turn: {code}")
    owned = [(t, f"/v1/schedules/{s.schedule_id}") for s in w.schedules for t in [s.tenant]]
    owned += [(t, f"/v1/datasets/{n}") for t, n in w.datasets]
    owned += [(t, f"/v1/experiments/{e}") for t, e, _ in w.experiments]
    for tenant, url in w.rng.sample(owned, min(2, len(owned))):
        other = w.other(tenant)
        code = other.http.get(url).status_code
        w.checks["cross_tenant"] += 1
        if code != 404:
            bad.append(f"{_tag(w, 'tenancy')} {other.name} GET {tenant}'s {url}: {code}")
    return bad


def quotas(w: World) -> list[str]:
    """No session holds more active turns than its quota (+1: a tick racing a POST)."""
    w.checks["quota"] += 1
    rows = w.sql(
        "SELECT tenant_id, session_id, count(*) FROM turns WHERE tenant_id = ANY(%s)"
        " AND state IN ('queued', 'running', 'waiting') GROUP BY 1, 2 HAVING count(*) > %s",
        ([t.name for t in w.tenants], QUOTA_PER_SESSION + 1),
    )
    return [
        f"{_tag(w, 'item 4: a background admission skips the quota')} {t}/{s}: {n} active"
        f" turns, quota {QUOTA_PER_SESSION}"
        for t, s, n in rows
    ]


def ttls(w: World) -> list[str]:
    """A session admitted with a TTL keeps an expiry, whatever admits into it later;
    every session of a tenant with a default TTL has one, whichever path made it."""
    kept = [(s.tenant, s.sid) for s in w.sessions.values() if s.ttl and not s.deleted]
    w.checks["ttl"] += 1
    rows = w.sql(
        "SELECT tenant_id, session_id, expires_after, head_seq FROM sessions"
        " WHERE deleted_at IS NULL AND expires_at IS NULL AND (tenant_id = ANY(%s) OR"
        " (tenant_id, session_id) IN (SELECT * FROM unnest(%s::text[], %s::text[])))",
        (w.ttl_tenants, [t for t, _ in kept], [s for _, s in kept]),
    )
    return [
        f"{_tag(w, 'item 4: a background admission skips or clears the TTL')} {t}/{s}:"
        f" expires_at null (expires_after {after})"
        for t, s, after, _ in rows
    ]


def bridges(w: World) -> list[str]:
    """A bridge message from a sender bound in one tenant becomes that tenant's turn."""
    bad = []
    for owner, intruder, tid in w.bridged:
        w.checks["bridge_tenant"] += 1
        rows = w.sql("SELECT tenant_id, session_id FROM turns WHERE turn_id = %s", (tid,))
        if any(t == intruder for t, _ in rows):
            bad.append(
                f"{_tag(w, 'item 6: bindings are one namespace across tenants')} {owner}'s"
                f" sender became {intruder}'s turn {tid}"
            )
    return bad


# -- once the run drained ------------------------------------------------------------


def unsettled(w: World) -> list[tuple[str, str, str, str, Any]]:
    """Turns of the model's tenants, in sessions not deleted, that neither ended nor
    wait on a typed request a person answers."""
    rows = w.sql(
        "SELECT t.tenant_id, t.session_id, t.turn_id, t.state, t.pending_input FROM turns t"
        " JOIN sessions s USING (tenant_id, session_id) WHERE t.tenant_id = ANY(%s)"
        " AND s.deleted_at IS NULL AND t.state IN ('queued', 'running', 'waiting')",
        ([t.name for t in w.tenants],),
    )
    return [r for r in rows if not (r[3] == "waiting" and (r[4] or {}).get("kind") in WAITS_TYPED)]


def settled(w: World, rows: Iterable[tuple[str, str, str, str, Any]]) -> list[str]:
    bad = []
    children = {(t, s, x): c for t, s, x, c in w.deleted_children}
    for tenant, sid, tid, state, pending in rows:
        w.checks["settled"] += 1
        kind = (pending or {}).get("kind")
        if (tenant, sid, tid) in children:
            what = "item 5: a deleted child session wedges its parent"
            kind = f"{kind}, child {children[(tenant, sid, tid)]} deleted"
        elif state == "queued" and w.tenant(tenant).limited:
            what = "item 1: max_running strands a queued turn"
        else:
            what = "every admitted turn settles or waits on a typed request"
        bad.append(f"{_tag(w, what)} {tenant}/{sid}/{tid} still {state} ({kind}) {DRAIN:g}s after")
    return bad


def experiments(w: World) -> list[str]:
    bad = []
    for tenant, eid, deleted in w.experiments:
        w.checks["experiment_ends"] += 1
        state = w.tenant(tenant).http.get(f"/v1/experiments/{eid}").json().get("state")
        if state == "running":
            what = "item 5: a deleted case session wedges the experiment"
            what = what if deleted else "an experiment ends"
            bad.append(f"{_tag(w, what)} {tenant}/{eid} still running (deleted: {deleted})")
    return bad


def erasures(w: World) -> list[str]:
    """Every deleted or expired session is tombstoned and erased."""
    bad = []
    gone = [s for s in w.sessions.values() if s.deleted or s.expires_by is not None]
    for s in gone:
        w.checks["erased"] += 1
        rows = w.sql(
            "SELECT erased_at FROM session_tombstones WHERE tenant_id = %s AND session_id = %s",
            (s.tenant, s.sid),
        )
        if not rows or rows[0][0] is None:
            what = "TTL expiry erases the session" if s.expires_by else "a deletion erases"
            bad.append(f"{_tag(w, what)} {s.tenant}/{s.sid}: tombstone {rows}")
    return bad


def _columns(w: World) -> dict[str, list[str]]:
    rows = w.sql(
        "SELECT c.table_name, c.column_name FROM information_schema.columns c"
        " JOIN information_schema.tables t USING (table_schema, table_name)"
        " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'"
        " ORDER BY c.table_name, c.ordinal_position"
    )
    out: dict[str, list[str]] = {}
    for table, column in rows:
        if table not in HARNESS:
            out.setdefault(table, []).append(column)
    return out


def _find(
    w: World, table: str, columns: list[str], needles: list[str], rows: str = "true"
) -> set[str]:
    """Which of ``needles`` some row of ``table`` (those ``rows`` selects) holds in
    ``columns`` (as text)."""
    if not needles or not columns:
        return set()
    text = "concat_ws(' ', " + ", ".join(f'"{c}"::text' for c in columns) + ")"
    pattern = "|".join(re.escape(n) for n in needles)
    found: set[str] = set()
    query = f'SELECT {text} FROM "{table}" WHERE {rows} AND {text} ~ %s'
    for (row,) in w.sql(query, (pattern,)):
        found |= {n for n in needles if n in row}
    return found


def nothing_left(w: World) -> list[str]:
    """Nothing of an erased session in any table or Redis key or value: neither its id
    (but where docs/erasure.md keeps ids: ``KEEPS_ID``) nor its text. Text a live
    session holds too (a fork's copy, an experiment's case session) is that session's."""
    gone = [s for s in w.sessions.values() if s.deleted or s.expires_by is not None]
    if not gone:
        return []
    marks = sorted({m for s in gone for m in s.markers})
    live = _find_live(w, marks)
    marks = [m for m in marks if m not in live]
    sids = sorted(s.sid for s in gone)
    owner = {m: s for s in gone for m in s.markers} | {s.sid: s for s in gone}
    bad = []
    for table, columns in _columns(w).items():
        w.checks["erased_text_tables"] += 1
        for m in sorted(_find(w, table, columns, marks)):
            s = owner[m]
            what = "nothing of an erased session stays"
            if table.startswith("eval_"):
                what = "item 3: erasure misses dataset cases"
            elif table == "schedules":
                what = "item 5: follow-up schedules survive their session's erasure"
            bad.append(f"{_tag(w, what)} {table} holds the text of erased {s.tenant}/{s.sid}")
        if (table, None) in KEEPS_ID:
            continue
        cols = [c for c in columns if (table, c) not in KEEPS_ID]
        for sid in sorted(_find(w, table, cols, sids, KEEPS_ID_ROWS.get(table, "true"))):
            what = "item 3: erasure misses dataset cases" if table == "eval_cases" else ""
            what = what or "nothing of an erased session stays"
            bad.append(f"{_tag(w, what)} {table} holds the id of erased {owner[sid].tenant}/{sid}")
    bad += _redis(w, marks + sids, owner, set(sids))
    return bad


def _find_live(w: World, marks: list[str]) -> set[str]:
    """The markers a session that is not deleted holds in its turns' input."""
    if not marks:
        return set()
    rows = w.sql(
        "SELECT t.input::text FROM turns t JOIN sessions s USING (tenant_id, session_id)"
        " WHERE s.deleted_at IS NULL AND t.input::text ~ %s",
        ("|".join(re.escape(m) for m in marks),),
    )
    return {m for (text,) in rows for m in marks if m in text}


#: Celery's broker keys (kombu's, under the deployment's prefix): a message names its
#: tenant and session, never content, and stays until it is acked or its visibility
#: timeout hands a dead worker's back (store/erasure_registry.py: kept, ids only)
_BROKER = re.compile(r"(^|:)(celery:|unacked|_kombu\.binding)")


def _redis(w: World, needles: list[str], owner: dict[str, Any], ids: set[str]) -> list[str]:
    r = w.chaos.redis
    bad = []
    for key in r.scan_iter(count=500):
        w.checks["redis_keys"] += 1
        kind = r.type(key).decode()
        if kind == "string":
            values = [r.get(key) or b""]
        elif kind == "list":
            values = r.lrange(key, 0, -1)
        elif kind == "hash":
            values = [k + b"=" + v for k, v in r.hgetall(key).items()]
        elif kind == "set":
            values = list(r.smembers(key))
        elif kind == "zset":
            values = [m for m, _ in r.zrange(key, 0, -1, withscores=True)]
        else:
            values = []
        blob = (
            key.decode(errors="replace")
            + " "
            + " ".join(v.decode(errors="replace") for v in values)
        )
        broker = _BROKER.search(key.decode(errors="replace")) is not None
        for n in needles:
            if n in blob and not (broker and n in ids):
                s = owner[n]
                bad.append(
                    f"{_tag(w, 'nothing of an erased session stays (Redis)')} key"
                    f" {key.decode(errors='replace')} holds {s.tenant}/{s.sid}"
                )
    return bad


def ticks(w: World) -> list[str]:
    """Every tick of a schedule admitted once or counted skipped (docs/flow-control.md:
    past the grace): its turns in its session, against the ticks from its first to its
    last (the schedule paused first)."""
    bad = []
    for sc in w.schedules:
        s = w.sessions[(sc.tenant, sc.sid)]
        if s.deleted or sc.filled:
            continue
        got = w.tenant(sc.tenant).http.get(f"/v1/schedules/{sc.schedule_id}").json()
        if not got.get("last_tick"):
            continue
        w.checks["ticks"] += 1
        first = w.sql("SELECT %s::timestamptz", (sc.first_at,))[0][0]
        last = w.sql("SELECT %s::timestamptz", (got["last_tick"],))[0][0]
        due = round((last - first).total_seconds() / sc.every) + 1
        # the session's turns the model did not admit itself (nor rerun) are the ticks'
        [(admitted,)] = w.sql(
            "SELECT count(*) FROM turns WHERE tenant_id = %s AND session_id = %s"
            " AND turn_id <> ALL(%s)",
            (sc.tenant, sc.sid, s.turns),
        )
        # a tick is admitted once, or passed over and counted (more than the grace late,
        # a beat and its workers killed for that long): never lost, never twice
        fired, skipped = got.get("fired"), got.get("skipped")
        if admitted != fired or admitted + skipped != due:
            bad.append(
                f"{_tag(w, 'item 9: every tick fires once')} {sc.tenant}/{sc.schedule_id}:"
                f" {admitted} tick turns for {due} ticks (fired {fired}, skipped {skipped})"
            )
        w.checks["ticks_skipped"] += skipped
    return bad


def tick_quotas(w: World) -> list[str]:
    """A schedule's tick is refused, as a POST is, when its session already holds its
    quota of active turns: admitted more than a second before the tick (no race) and
    not ended by then."""
    bad = []
    for sc in w.schedules:
        s = w.sessions[(sc.tenant, sc.sid)]
        if s.deleted or not sc.filled:
            continue
        w.checks["tick_quota"] += 1
        rows = w.sql(
            "SELECT t.turn_id, (SELECT count(*) FROM turns u WHERE u.tenant_id = t.tenant_id"
            " AND u.session_id = t.session_id AND u.created_at < t.created_at - interval '1 s'"
            " AND (u.state IN ('queued', 'running', 'waiting') OR u.updated_at > t.created_at))"
            " FROM turns t WHERE t.tenant_id = %s AND t.session_id = %s AND t.turn_id <> ALL(%s)",
            (sc.tenant, sc.sid, s.turns),
        )
        over = [(tid, n) for tid, n in rows if n >= QUOTA_PER_SESSION]
        if over:
            bad.append(
                f"{_tag(w, 'item 4: schedule ticks bypass the quota')} {sc.tenant}/{sc.sid}:"
                f" {len(over)} ticks admitted over {QUOTA_PER_SESSION} active turns, e.g. {over[0]}"
            )
    return bad


def fairness(w: World) -> list[str]:
    """The light tenant starts a turn before more than ``FAIR_BOUND`` of the heavy
    tenant's priority-9 backlog start after its admission (measured by the operation,
    ``measure``, before anything later could delete the sessions it reads)."""
    bad = []
    for p in w.probes:
        w.checks["fairness"] += 1
        if p.overtook > FAIR_BOUND:
            bad.append(
                f"{_tag(w, 'item 2: priority starves another tenant')} {p.overtook} of"
                f" {p.heavy}'s priority-9 backlog started after {p.light} admitted and before"
                f" it started (bound {FAIR_BOUND}; probed at {p.at}, {p.light}'s first start"
                f" after it {p.light_start})"
            )
    return bad


def measure(w: World, p: Probe) -> None:
    """``p``'s light start and the heavy backlog's starts before it, read now."""
    [(p.light_start,)] = w.sql(
        "SELECT min(created_at) FROM events WHERE tenant_id = %s AND type = 'turn.started'"
        " AND created_at > %s",
        (p.light, p.at),
    )
    sids = [s for s, _ in p.backlog]
    [(p.overtook,)] = w.sql(
        "SELECT count(*) FROM (SELECT turn_id, min(created_at) AS at FROM events WHERE"
        " tenant_id = %s AND session_id = ANY(%s) AND type = 'turn.started' GROUP BY 1) x"
        " WHERE x.at > %s AND (%s::timestamptz IS NULL OR x.at < %s)",
        (p.heavy, sids, p.at, p.light_start, p.light_start),
    )


def journal(w: World) -> list[str]:
    """tests/invariants.py over the model's tenants: seq contiguous, one outcome per
    step, fences, effects counted once."""
    w.checks["journal"] += 1
    names = [t.name for t in w.tenants]
    accepted = [
        (s.tenant, s.sid, t)
        for s in w.sessions.values()
        if not s.deleted and s.expires_by is None
        for t in s.turns
    ]
    found = {(t, s, x) for t, s, x in w.sql("SELECT tenant_id, session_id, turn_id FROM turns")}
    accepted = [k for k in accepted if k in found or not k[2].startswith("rr-")]
    tag = _tag(w, "journal invariants (tests/invariants.py)")
    out = check_all(
        w.chaos.database_url,
        tenants=names,
        accepted=accepted,
        redis_client=w.chaos.redis,
        require_settled=False,
    )
    # an effect of a session since erased names a journal that is gone
    erased = {f"{t}/{s}/" for t, s in w.sql("SELECT tenant_id, session_id FROM session_tombstones")}
    out += [
        x
        for x in effects_accounted(w.chaos.database_url, tenants=names)
        if not any(e in x for e in erased)
    ]
    # the reminder's follow_up tool is idempotent, but keeps its effect in schedules,
    # not in the test agents' effects table
    reminders = {
        f"/{t}/" for (t,) in w.sql("SELECT turn_id FROM turns WHERE agent_name = 'reminder'")
    }
    return [f"{tag} {x}" for x in out if not any(r in x for r in reminders)]


def _running_experiments(w: World) -> bool:
    return bool(
        w.sql(
            "SELECT 1 FROM eval_experiments WHERE tenant_id = ANY(%s) AND state = 'running'",
            ([t.name for t in w.tenants],),
        )
    )


def drain(w: World) -> list[tuple[str, str, str, str, Any]]:
    """Pause every schedule (its last tick is counted), then wait up to ``DRAIN`` for
    every turn to settle, every experiment to end and every erasure to finish."""
    for sc in w.schedules:
        w.tenant(sc.tenant).http.post(f"/v1/schedules/{sc.schedule_id}/pause")
        sc.paused = True
    deadline = time.monotonic() + DRAIN
    left = unsettled(w)
    while time.monotonic() < deadline:
        left = unsettled(w)
        pending = [s for s in w.sessions.values() if s.deleted or s.expires_by is not None]
        erased = not pending or not w.sql(
            "SELECT 1 FROM unnest(%s::text[], %s::text[]) AS g(t, s) WHERE NOT EXISTS"
            " (SELECT 1 FROM session_tombstones x WHERE x.tenant_id = g.t AND"
            " x.session_id = g.s AND x.erased_at IS NOT NULL)",
            ([s.tenant for s in pending], [s.sid for s in pending]),
        )
        if not left and erased and not _running_experiments(w):
            break
        time.sleep(2)
    return left


def final(w: World) -> list[str]:
    left = drain(w)
    return [
        *settled(w, left),
        *experiments(w),
        *erasures(w),
        *nothing_left(w),
        *cheap(w),
        *ticks(w),
        *tick_quotas(w),
        *fairness(w),
        *journal(w),
    ]
