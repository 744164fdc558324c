-- Statements of the recovery scans and the backlog gauges, across tenants. Only
-- store/scans.py runs them (store/sql.py: how blocks are named, loaded and their
-- state sets filled in).

-- name: scan_expired_inputs
-- parked turns whose open input request expired unanswered: the scan settles them
SELECT tenant_id, session_id, turn_id, pending_input ->> 'request_id' AS request_id
FROM turns
WHERE state IN {parked} AND NOT (pending_input ? 'resolved')
  AND CAST(pending_input ->> 'expires_at' AS timestamptz) < now()
ORDER BY updated_at
LIMIT :limit;

-- name: count_active_turns
-- active turns across tenants by agent and state, for the backlog gauges of /metrics
-- (store/producer.py Backlog; cached there, so a scrape costs at most one of these
-- every two seconds): on ix_turns_active_lane's rows only
SELECT agent_name, state, count(*) AS n FROM turns
WHERE state IN {active}
GROUP BY agent_name, state;

-- name: scan_delegations
-- parents parked on a delegation whose children have all ended and that nobody has
-- answered yet (a crash between a child's last commit and its telling the parent):
-- the scan answers them (store/delegation.py settle_parent). A child whose session
-- has a tombstone has ended too, its rows there or erased (a crash between the
-- tombstone and telling the parent: worker/waiters.py). Only such rows come back, so
-- parents whose children still run never crowd the page.
SELECT t.tenant_id, t.session_id, t.turn_id
FROM turns t
WHERE t.state = 'waiting'
  AND t.pending_input ->> 'kind' = 'delegation'
  AND NOT (t.pending_input ? 'resolved')
  AND NOT EXISTS (
      SELECT 1
      FROM jsonb_array_elements(t.pending_input -> 'detail' -> 'children') c
      LEFT JOIN turns k
        ON k.tenant_id = t.tenant_id AND k.session_id = c ->> 'session_id'
       AND k.turn_id = c ->> 'turn_id'
      WHERE (k.turn_id IS NULL AND NOT EXISTS (
                 SELECT 1 FROM session_tombstones g
                 WHERE g.tenant_id = t.tenant_id AND g.session_id = c ->> 'session_id'))
         OR k.state IN {active}
  )
ORDER BY t.updated_at
LIMIT :limit;

-- name: scan_stalled
-- Sessions whose lane head can run and whose journal has not moved for a while, a
-- keyset page at a time. The caller drops those with a live lease; the scan only enqueues.
SELECT h.tenant_id, h.session_id, s.updated_at FROM (
    SELECT DISTINCT ON (t.tenant_id, t.session_id) t.tenant_id, t.session_id, t.state,
           t.pending_input
    FROM turns t
    WHERE t.state IN {active}
    ORDER BY t.tenant_id, t.session_id, t.ordinal
) h
JOIN sessions s ON s.tenant_id = h.tenant_id AND s.session_id = h.session_id
WHERE (h.state IN {runnable}
       OR (h.state IN {parked} AND h.pending_input ? 'resolved'))
  AND s.updated_at < now() - make_interval(secs => :grace)
  AND (s.updated_at, s.tenant_id, s.session_id) > (:after_ts, :after_tenant, :after_session)
ORDER BY s.updated_at, s.tenant_id, s.session_id
LIMIT :limit;
