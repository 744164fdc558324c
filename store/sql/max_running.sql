-- Statements of max_running (docs/flow-control.md). Only store/max_running.py runs them
-- (store/sql.py: how blocks are named and loaded).

-- name: get_limits
-- A tenant's declared limits, or no row when it declared none.
SELECT tenant_id, max_running, updated_by, updated_at FROM tenant_limits
WHERE tenant_id = :tenant_id;

-- name: set_limits
-- Declare (or clear: NULL) a tenant's max_running; the new row.
INSERT INTO tenant_limits (tenant_id, max_running, updated_by)
VALUES (:tenant_id, :max_running, :updated_by)
ON CONFLICT (tenant_id) DO UPDATE
SET max_running = EXCLUDED.max_running, updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING tenant_id, max_running, updated_by, updated_at;

-- name: limit_lock
-- The first statement of a limited head's start (count_running, then start_turn, each
-- in autocommit on the same connection, then limit_unlock): the tenant's limit lock,
-- held by the connection, so the count sees every start committed before it and no
-- other limited start of the tenant runs beside it; each statement's own clock (its
-- now()) is after the lock was taken, so the journal's times agree. A turn's end (a
-- settle, a wait) needs no lock: it only lowers the count.
SELECT pg_advisory_lock(hashtextextended('turnkeep.max_running:' || :tenant_id, 0));

-- name: limit_unlock
-- The last statement of a limited head's start: the lock given back (a connection
-- that breaks first gives it back as it closes).
SELECT pg_advisory_unlock(hashtextextended('turnkeep.max_running:' || :tenant_id, 0));

-- name: count_running
-- Under the limit lock (after limit_lock, same connection): the tenant's running
-- turns, and those of one agent, on ix_turns_running; and the tenant's declared
-- limit as it stands now, not as a worker's cache last read it, so a limit raised or
-- cleared lets the sessions it woke start at once.
SELECT count(*) AS tenant_running,
       count(*) FILTER (WHERE agent_name = :agent_name) AS agent_running,
       (SELECT max_running FROM tenant_limits WHERE tenant_id = :tenant_id) AS declared
FROM turns WHERE tenant_id = :tenant_id AND state = 'running';

-- name: waiting_heads
-- Which of a tenant's held sessions still wait for a slot (store/held.py's wake): the
-- lane head is queued, or parked with its answer in. A session whose turns all ended
-- (run by another delivery, cancelled, erased) or whose head runs is no longer held.
SELECT s.session_id FROM unnest(CAST(:session_ids AS text[])) AS s(session_id)
CROSS JOIN LATERAL (
    SELECT state, pending_input FROM turns
    WHERE tenant_id = :tenant_id AND session_id = s.session_id AND state IN {active}
    ORDER BY ordinal LIMIT 1
) AS h
WHERE h.state = 'queued' OR (h.state IN {parked} AND h.pending_input ? 'resolved');

-- name: declared_limits
-- Every tenant's declared max_running, across tenants: each worker reads it once every
-- few seconds (worker/max_running.py), so a start with no limit costs no statement.
SELECT tenant_id, max_running FROM tenant_limits WHERE max_running IS NOT NULL;
