-- Statements of the reads of sessions, turns and the journal. Only store/reads.py
-- runs them (store/sql.py: how blocks are named, loaded and their state sets filled
-- in).

-- name: get_session
SELECT * FROM sessions WHERE tenant_id = :tenant_id AND session_id = :session_id;

-- name: get_tombstone
-- what stays of a deleted session (docs/erasure.md), by its primary key
SELECT * FROM session_tombstones WHERE tenant_id = :tenant_id AND session_id = :session_id;

-- name: waiting_on_session
-- parents whose open delegation names a child in the session: the turns a session that
-- has gone (deleted, expired) must tell (worker/waiters.py)
SELECT session_id, turn_id FROM turns
WHERE tenant_id = :tenant_id AND state = 'waiting'
  AND pending_input ->> 'kind' = 'delegation' AND NOT (pending_input ? 'resolved')
  AND pending_input -> 'detail' -> 'children'
      @> jsonb_build_array(jsonb_build_object('session_id', CAST(:session_id AS text)));

-- name: get_turn
SELECT * FROM turns
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id;

-- name: list_turns
SELECT * FROM turns WHERE tenant_id = :tenant_id AND session_id = :session_id
ORDER BY ordinal;

-- name: list_sessions
-- a keyset page of the tenant's sessions, newest first (ix_sessions_created), each
-- with its lane head (the oldest active turn) in the same read. By created_at, which
-- never changes: an index on updated_at would be rewritten by every step's commit.
-- A session in a project is listed to the project's owner (:subject) only; one deleted
-- (its erasure under way) or past its TTL is gone (docs/erasure.md).
SELECT s.*, h.turn_id AS active_turn, h.state AS active_state
FROM sessions s
LEFT JOIN LATERAL (
    SELECT turn_id, state FROM turns
    WHERE tenant_id = s.tenant_id AND session_id = s.session_id AND state IN {active}
    ORDER BY ordinal LIMIT 1
) h ON true
WHERE s.tenant_id = :tenant_id
  AND s.deleted_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > now())
  AND (s.project_id IS NULL
       OR EXISTS (SELECT 1 FROM projects p
                  WHERE p.tenant_id = s.tenant_id AND p.project_id = s.project_id
                    AND p.owner = :subject))
  AND (CAST(:before_at AS timestamptz) IS NULL
       OR (s.created_at, s.session_id) < (CAST(:before_at AS timestamptz), :before_id))
ORDER BY s.created_at DESC, s.session_id DESC
LIMIT :limit;

-- name: turn_page
-- a keyset page of a session's turns, newest first, with the session's existence
-- beside it (no session, no rows)
SELECT s.session_id AS sid, t.*
FROM sessions s
LEFT JOIN LATERAL (
    SELECT * FROM turns
    WHERE tenant_id = s.tenant_id AND session_id = s.session_id
      AND ordinal < :before
    ORDER BY ordinal DESC LIMIT :limit
) t ON true
WHERE s.tenant_id = :tenant_id AND s.session_id = :session_id
ORDER BY t.ordinal DESC;

-- name: lane_head
-- the session's oldest active turn: the only one its lane may run
SELECT * FROM turns
WHERE tenant_id = :tenant_id AND session_id = :session_id AND state IN {active}
ORDER BY ordinal LIMIT 1;

-- name: list_events
-- a page of the journal with the head and earliest retained seq beside it, in one read
-- (one snapshot): no session row, no rows; the head tells a cursor beyond it from an
-- empty page, the earliest one before the retention cut (docs/retention.md); gone: the
-- session was deleted or expired (docs/erasure.md), whatever its rows still hold
SELECT s.head_seq, s.earliest_seq, s.deleted_at AS session_deleted_at,
       s.expires_at AS session_expires_at, s.expires_at <= now() AS session_expired, e.*
FROM sessions s
LEFT JOIN LATERAL (
    SELECT * FROM events
    WHERE tenant_id = s.tenant_id AND session_id = s.session_id AND seq > :after
    ORDER BY seq LIMIT :limit
) e ON true
WHERE s.tenant_id = :tenant_id AND s.session_id = :session_id
ORDER BY e.seq;

-- name: turn_events
SELECT * FROM events
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
ORDER BY seq;

-- name: list_conversation
-- a page of the events the transcript is made of (runtime/journal.CONVERSATION_EVENTS),
-- with the head and earliest retained seq beside it, in one read, as list_events
SELECT s.head_seq, s.earliest_seq, s.deleted_at AS session_deleted_at,
       s.expires_at AS session_expires_at, s.expires_at <= now() AS session_expired, e.*
FROM sessions s
LEFT JOIN LATERAL (
    SELECT * FROM events
    WHERE tenant_id = s.tenant_id AND session_id = s.session_id AND seq > :after
      AND type IN ('turn.accepted', 'model.completed', 'tool.completed', 'tool.interrupted')
    ORDER BY seq LIMIT :limit
) e ON true
WHERE s.tenant_id = :tenant_id AND s.session_id = :session_id
ORDER BY e.seq;

-- name: open_inputs
-- The inbox: the tenant's turns parked on an open request, by session and admission
-- after the cursor (:after_sid, :after_ordinal), at most :limit, on the active turns'
-- partial index. A session in a project is the project's owner's (:subject) only.
SELECT t.session_id, t.turn_id, t.ordinal, t.state, t.agent_name, t.submitted_by,
       t.pending_input
FROM turns t
JOIN sessions s ON s.tenant_id = t.tenant_id AND s.session_id = t.session_id
               -- not a session past its TTL (a deleted one's turns are cancelled)
               AND (s.expires_at IS NULL OR s.expires_at > now())
WHERE t.tenant_id = :tenant_id AND t.state IN {parked}
  AND t.pending_input IS NOT NULL AND NOT (t.pending_input ? 'resolved')
  AND (t.session_id, t.ordinal) > (:after_sid, :after_ordinal)
  AND (s.project_id IS NULL
       OR EXISTS (SELECT 1 FROM projects p
                  WHERE p.tenant_id = s.tenant_id AND p.project_id = s.project_id
                    AND p.owner = :subject))
ORDER BY t.session_id, t.ordinal
LIMIT :limit;
