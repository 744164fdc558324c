"""The searches (docs/search.md) on 100,000 turns: a database of its own, seeded in SQL
as the owner (12 tenants, one holding half the turns, 25,000 sessions over 60 days,
84% completed, 8% failed, 3% cancelled, the rest active; 70% of the turns and two
sessions in three labelled; a tenth of the sessions in projects), then each search run
as the application's role through ``Store.search.search_turns`` / ``search_sessions`` (row
security on, as in a deployment). Its figures: each case's p50 (``search_cases_ms``)
and the worst of them (``search_worst_p50_ms``); its details: each case's plan
(``EXPLAIN (ANALYZE, BUFFERS)`` of its first statement), which is how the indexes of
store/schema_search.py were chosen.

``python -m bench --only search`` runs it alone (about a minute).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from bench.context import Run
from bench.harness import app_url_of, percentile, pg_url_of

TURNS = 100_000
REPS = 7

SEED = """
INSERT INTO projects (tenant_id, project_id, owner, request_hash)
SELECT 't' || (g % 12), 'p' || g, 'u' || (g % 3), 'h' FROM generate_series(0, 119) g;

INSERT INTO sessions (tenant_id, session_id, agent_name, head_seq, created_at, updated_at,
                      project_id, metadata)
SELECT tenant, 's' || g, 'agent' || (g % 8), 10, ts, ts + interval '5 minutes',
       CASE WHEN g % 10 = 0 THEN 'p' || ((g / 10) % 10 * 12 + substr(tenant, 2)::int) END,
       CASE WHEN g % 3 = 0 THEN '{}'::jsonb
            ELSE jsonb_build_object('customer', 'c' || (g % 300),
                                    'plan', (ARRAY['free','pro','team'])[g % 3 + 1]) END
FROM (SELECT g, CASE WHEN g % 2 = 0 THEN 't0' ELSE 't' || (1 + g % 11) END AS tenant,
             now() - interval '60 days' + (g * interval '60 days' / 25000) AS ts
      FROM generate_series(0, 24999) g) x;

INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash, input_hash,
                   input, accepted_seq, submitted_by, created_at, updated_at, agent_version,
                   error, result, metadata, project_id)
SELECT s.tenant_id, s.session_id, 'turn' || k, st, s.agent_name, 'ah', 'ih',
       jsonb_build_object('messages', jsonb_build_array(
           jsonb_build_object('role', 'user', 'content', repeat('lorem ipsum ', 20)))),
       k + 1, 'u' || (k % 3),
       s.created_at + k * interval '1 minute',
       s.created_at + k * interval '1 minute' + interval '20 seconds',
       (ARRAY['1','2','3'])[1 + (n % 3)],
       CASE WHEN st = 'failed' THEN jsonb_build_object('code', (ARRAY['model_failed',
            'budget_exceeded','retry_exhausted','output_invalid','tool_error'])[1 + n % 5],
            'message', 'x') END,
       CASE WHEN st = 'completed' THEN jsonb_build_object('text', 'done') END,
       CASE WHEN n % 10 < 3 THEN '{}'::jsonb
            ELSE jsonb_build_object('channel', (ARRAY['email','chat','voice'])[1 + n % 3],
                                    'region', (ARRAY['eu','us','ap'])[1 + (n / 3) % 3])
                 || CASE WHEN n % 7 = 0 THEN jsonb_build_object('ticket', 'T' || n)
                         ELSE '{}'::jsonb END
                 || CASE WHEN n % 97 = 0 THEN jsonb_build_object('customer', 'c18')
                         ELSE '{}'::jsonb END END,
       s.project_id
FROM (SELECT s.*, row_number() OVER () AS sn FROM sessions s) s
CROSS JOIN LATERAL generate_series(0, 3) k
CROSS JOIN LATERAL (SELECT (s.sn * 4 + k)::int AS n) nn
CROSS JOIN LATERAL (
    SELECT CASE WHEN n % 100 < 84 THEN 'completed' WHEN n % 100 < 92 THEN 'failed'
                WHEN n % 100 < 95 THEN 'cancelled' WHEN n % 100 < 97 THEN 'waiting'
                WHEN n % 100 < 99 THEN 'queued' ELSE 'running' END AS st) sst;

INSERT INTO turn_metadata (tenant_id, session_id, turn_id, key, value, created_at, ordinal)
SELECT t.tenant_id, t.session_id, t.turn_id, m.key, m.value, t.created_at, t.ordinal
FROM turns t, jsonb_each_text(t.metadata) m;
INSERT INTO session_metadata (tenant_id, session_id, key, value, created_at)
SELECT s.tenant_id, s.session_id, m.key, m.value, s.created_at
FROM sessions s, jsonb_each_text(s.metadata) m;
"""


def _cases(now: datetime) -> dict[str, tuple[str, dict[str, Any]]]:
    """(turns or sessions, the store's filters) of each case, in tenant t0 (50,000
    turns) unless it says otherwise; u0 owns a third of the projects."""
    return {
        "turns, no filter": ("turns", {}),
        "turns, state=failed": ("turns", {"states": ("failed",)}),
        "turns, state=waiting": ("turns", {"states": ("waiting",)}),
        "turns, state=failed|cancelled": ("turns", {"states": ("failed", "cancelled")}),
        "turns, failed of agent2 last 7 days": (
            "turns",
            {"states": ("failed",), "agent": "agent2", "created_since": now - timedelta(days=7)},
        ),
        "turns, agent2 version 2": ("turns", {"agent": "agent2", "agent_version": "2"}),
        "turns, error=model_failed": ("turns", {"error": "model_failed"}),
        "turns, customer=c18 (1%)": ("turns", {"metadata": {"customer": "c18"}}),
        "turns, channel=email (23%)": ("turns", {"metadata": {"channel": "email"}}),
        "turns, channel=email region=eu": (
            "turns",
            {"metadata": {"channel": "email", "region": "eu"}},
        ),
        "turns, ticket=T4004 (one)": ("turns", {"metadata": {"ticket": "T4004"}}),
        "turns, channel=email waiting (rare)": (
            "turns",
            {"metadata": {"channel": "email"}, "states": ("waiting",)},
        ),
        "turns, created 50+ days ago": ("turns", {"created_until": now - timedelta(days=50)}),
        "turns, created one day a month ago": (
            "turns",
            {"created_since": now - timedelta(days=30), "created_until": now - timedelta(days=29)},
        ),
        "turns, updated in the last day": ("turns", {"updated_since": now - timedelta(days=1)}),
        "turns, project p0": ("turns", {"project": "p0"}),
        "sessions, no filter": ("sessions", {}),
        "sessions, state=waiting": ("sessions", {"states": ("waiting",)}),
        "sessions, state=idle": ("sessions", {"states": ("idle",)}),
        "sessions, plan=pro": ("sessions", {"metadata": {"plan": "pro"}}),
        "sessions, customer=c20": ("sessions", {"metadata": {"customer": "c20"}}),
        "sessions, agent2": ("sessions", {"agent": "agent2"}),
        "sessions, project p0": ("sessions", {"project": "p0"}),
    }


def _plan(url: str, kind: str, params: dict[str, Any]) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the case's first statement, as the app's role."""
    from turnkeep.store.sql import render, source

    name = f"search_{kind}" + ("_by_metadata" if params["key"] is not None else "")
    sql = render(source()[name])
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SELECT set_config('turnkeep.tenant', %s, false)", (params["tenant_id"],))
        rows = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql,
            params,
            prepare=False,
        ).fetchall()
    lines = [r["QUERY PLAN"] for r in rows]
    # the policy's InitPlans repeat on every table: the plan without them reads better
    keep = [ln for ln in lines if "InitPlan" not in ln and "->  Result" not in ln]
    return "\n".join(keep)


def run(r: Run) -> dict[str, Any]:
    from turnkeep.store.facade import Store
    from turnkeep.store.search import FIRST_BATCH, Filters

    dbname = f"{r.env.dbname}_search"
    r.env.create_database(dbname)
    t = time.perf_counter()
    with psycopg.connect(pg_url_of(dbname), autocommit=True) as conn:
        conn.execute(SEED)
        conn.execute("VACUUM ANALYZE")
    seeded = time.perf_counter() - t
    store = Store.from_url(app_url_of(dbname), pool_size=2)
    url = app_url_of(dbname).replace("postgresql+psycopg://", "postgresql://")
    details: dict[str, Any] = {"turns": TURNS, "seed_s": round(seeded, 1), "cases": {}}
    p50s: dict[str, float] = {}
    try:
        for label, (kind, given) in _cases(datetime.now(UTC)).items():
            filters = Filters(**given)
            search = store.search.search_turns if kind == "turns" else store.search.search_sessions
            times, found = [], 0
            for _ in range(REPS):
                t = time.perf_counter()
                found = len(search("t0", subject="u0", filters=filters, limit=50))
                times.append(time.perf_counter() - t)
            p50 = 1000.0 * percentile(times, 50)
            p50s[label] = round(p50, 2)
            params = {
                "tenant_id": "t0",
                "subject": "u0",
                "limit": 50,
                "before_at": None,
                "before_ordinal": 0,
                "before_id": "",
                "batch": FIRST_BATCH,
                **filters.params(),
            }
            details["cases"][label] = {
                "rows": found,
                "p50_ms": round(p50, 2),
                "plan": _plan(url, kind, params),
            }
    finally:
        store.close()
    r.figures["search_worst_p50_ms"] = max(p50s.values())
    r.figures["search_median_p50_ms"] = percentile(list(p50s.values()), 50)
    print(json.dumps(p50s, indent=1))
    return details
