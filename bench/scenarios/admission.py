"""HTTP admission against ``uvicorn turnkeep.api.app:app``, no worker running: on one
keep-alive connection, each admission (a new session, answered 202 once committed)
is followed by a ``GET /healthz`` (the same HTTP stack without the store) and a raw
single-row UPDATE commit on the same Postgres. ``admission_p50_ms - healthz_p50_ms``
is what admission adds to an HTTP round trip; read it against ``raw_commit_p50_ms``.
The same loop again, in a tenant of its own (the quota counts a tenant's active
turns), admits turns with metadata (three labels on the turn, two on its new session:
``admission_metadata_p50_ms``), each label a row the statement writes.

The API runs with ``TURNKEEP_BENCH_TIMINGS=1`` (api/timings.py): each admission's
``Server-Timing`` header gives its pieces, whose p50s are ``admission_parts_ms``;
``framework`` there is what is left of the admission's p50 once the healthz round
trip (``http``) and the pieces are taken off: Starlette/FastAPI's own layers.

The API gets a database of its own (created and dropped by the bench) and a queue
no worker consumes, so its turns never reach another scenario.
"""

from __future__ import annotations

import json
import socket
import sys
import time
import uuid
from typing import Any

import httpx
import psycopg

from bench import pyspy
from bench.context import RESULTS, Run
from bench.harness import app_url_of, percentile, pg_url_of, summary_ms, wait_until
from turnkeep.api import timings

QUEUE = "turnkeep.bench.admission"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _timed(samples: list[float], keep: bool, fn: Any, *args: Any, **kw: Any) -> Any:
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    if keep:
        samples.append(time.perf_counter() - t0)
    return out


def _loop(
    url: str,
    token: str,
    pg_url: str,
    n: int,
    warmup: int,
    prefix: str = "adm",
    parts: dict[str, list[float]] | None = None,
    labelled: bool = False,
) -> dict[str, list[float]]:
    adm: list[float] = []
    health: list[float] = []
    raw: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    with (
        httpx.Client(base_url=url, headers=headers, timeout=30) as http,
        psycopg.connect(pg_url, autocommit=True) as conn,
    ):
        conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id int PRIMARY KEY, n bigint)")
        conn.execute("INSERT INTO bench_raw VALUES (1, 0) ON CONFLICT DO NOTHING")
        for i in range(warmup + n):
            keep = i >= warmup
            body: dict[str, Any] = {
                "agent": "demo",
                "input": [{"role": "user", "content": f"Weather in {i}?"}],
            }
            if labelled:
                # three labels on the turn and two on its (new) session: each a row
                # of the search's tables, written by the admitting statement
                body["metadata"] = {"customer": f"c{i % 300}", "channel": "email", "n": str(i)}
                body["session_metadata"] = {"team": "red", "plan": "pro"}
            resp = _timed(
                adm,
                keep,
                http.post,
                f"/v1/sessions/{prefix}-{i:06d}/turns",
                json=body,
                headers={"Idempotency-Key": f"t{i}"},
            )
            if resp.status_code != 202:
                raise RuntimeError(f"admission {i} answered {resp.status_code}: {resp.text[:200]}")
            if keep and parts is not None and "server-timing" in resp.headers:
                for name, ms in timings.parse(resp.headers["server-timing"]).items():
                    parts.setdefault(name, []).append(ms / 1000.0)
            if _timed(health, keep, http.get, "/healthz").status_code != 200:
                raise RuntimeError("/healthz did not answer 200")
            _timed(raw, keep, conn.execute, "UPDATE bench_raw SET n = n + 1 WHERE id = 1")
    return {"admission": adm, "healthz": health, "raw": raw}


def profiled(r: Run, pid: int, url: str, token: str, pg_url: str) -> dict[str, Any] | None:
    """The same loop once more (its own sessions) under ``py-spy record`` of the API
    process; never the measured loop."""
    if not pyspy.available():
        return None
    rec = pyspy.Recording(pid, RESULTS / f"pyspy-api-{r.stamp}.txt")
    _loop(url, token, pg_url, r.plan.admission_n, 0, prefix="spy")
    return rec.stop()


def run(r: Run) -> dict[str, Any]:
    from turnkeep.api.auth import token_digest

    dbname = f"{r.env.dbname}_api"
    r.env.create_database(dbname)
    tenant, token = r.tenant("api"), uuid.uuid4().hex + uuid.uuid4().hex
    # a tenant of its own seeds the tables (its turns stay queued: counted by no other
    # tenant's quota), then ANALYZE: the steady state a deployment's autovacuum keeps
    seeder, seed_token = r.tenant("api-seed"), uuid.uuid4().hex + uuid.uuid4().hex
    # the admissions with metadata in a tenant of their own: the tenant quota counts a
    # tenant's active turns at each admission, so the first loop's backlog would weigh
    # on the second's
    labelled, labelled_token = r.tenant("api-meta"), uuid.uuid4().hex + uuid.uuid4().hex
    port = free_port()
    env = {
        "TURNKEEP_DATABASE_URL": app_url_of(dbname),
        "TURNKEEP_QUEUE": QUEUE,
        "TURNKEEP_BENCH_TIMINGS": "1",
        "TURNKEEP_TOKENS": json.dumps(
            [
                {"sha256": token_digest(token), "tenant": tenant, "subject": "bench"},
                {"sha256": token_digest(seed_token), "tenant": seeder, "subject": "bench"},
                {"sha256": token_digest(labelled_token), "tenant": labelled, "subject": "bench"},
            ]
        ),
    }
    argv = [sys.executable, "-m", "uvicorn", "turnkeep.api.app:app", "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    api = r.env.spawn(argv, name="api", env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: ready(url) or not api.alive(), 60, interval=0.1, what="API ready")
        if not api.alive():
            raise RuntimeError(f"the API exited at start:\n{api.text()[-3000:]}")
        try:
            pieces: dict[str, list[float]] = {}
            _loop(url, seed_token, pg_url_of(dbname), 0, r.plan.admission_seed, prefix="seed")
            with psycopg.connect(pg_url_of(dbname), autocommit=True) as conn:
                conn.execute("ANALYZE")
            s = _loop(
                url,
                token,
                pg_url_of(dbname),
                r.plan.admission_n,
                r.plan.admission_warmup,
                parts=pieces,
            )
            # the same admissions with metadata (docs/search.md), in their own tenant
            m = _loop(
                url,
                labelled_token,
                pg_url_of(dbname),
                r.plan.admission_n,
                r.plan.admission_warmup,
                prefix="meta",
                labelled=True,
            )
            spy = profiled(r, api.pid, url, token, pg_url_of(dbname)) if r.args.py_spy else None
        except (httpx.HTTPError, RuntimeError) as exc:
            tail = "\n".join(api.text().splitlines()[-15:])
            raise RuntimeError(f"{type(exc).__name__}: {exc}; the API's log ends:\n{tail}") from exc
    finally:
        r.env.stop(api)
        r.env.redis().delete(QUEUE)
    r.figures["admission_p50_ms"] = 1000.0 * percentile(s["admission"], 50)
    r.figures["healthz_p50_ms"] = 1000.0 * percentile(s["healthz"], 50)
    r.figures["admission_metadata_p50_ms"] = 1000.0 * percentile(m["admission"], 50)
    parts = _parts(pieces, r.figures["admission_p50_ms"], r.figures["healthz_p50_ms"])
    for name, ms in parts.items():
        r.figures[f"admission_part_{name}_ms"] = ms
    return {
        "requests": r.plan.admission_n,
        "admission": summary_ms(s["admission"]),
        "admission_with_metadata": summary_ms(m["admission"]),
        "healthz": summary_ms(s["healthz"]),
        "raw_update_commit_interleaved": summary_ms(s["raw"]),
        "admission_parts_ms": parts,
        "pyspy": spy,
    }


def _parts(pieces: dict[str, list[float]], total_ms: float, http_ms: float) -> dict[str, float]:
    """Each piece's p50 (ms), then ``http`` (the healthz round trip) and ``framework``
    (the admission's p50 less those): what no piece accounts for. ``enqueue`` runs
    after the answer, so it is not taken off."""
    out = {name: 1000.0 * percentile(v, 50) for name, v in pieces.items()}
    if out:
        out["http"] = http_ms
        out["framework"] = (
            total_ms - http_ms - sum(v for k, v in out.items() if k not in ("http", "enqueue"))
        )
    return {k: round(v, 4) for k, v in out.items()}
