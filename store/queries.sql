-- Every SQL statement turnkeep runs, as named blocks. Only store/transitions.py
-- runs them. Each block starts with "-- name: NAME" and a line saying why.

-- name: admit_turn
-- Admission in one statement: create the session or lock it and take the next seq
-- (refused when it is bound to another agent), insert the turn queued, append
-- turn.accepted. No row back: the turn id exists or the agent differs; the caller
-- rolls back (giving the seq back) and reads the stored turn to tell which.
WITH s AS (
    INSERT INTO sessions AS cur (tenant_id, session_id, agent_name, head_seq)
    VALUES (:tenant_id, :session_id, :agent_name, 1)
    ON CONFLICT (tenant_id, session_id) DO UPDATE
        SET head_seq = cur.head_seq + 1, updated_at = now()
        WHERE cur.agent_name = EXCLUDED.agent_name
    RETURNING head_seq
), t AS (
    INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                       input_hash, input, output_schema, budget, accepted_seq)
    SELECT :tenant_id, :session_id, :turn_id, 'queued', :agent_name, :agent_hash,
           :input_hash, CAST(:input AS jsonb), CAST(:output_schema AS jsonb),
           CAST(:budget AS jsonb), s.head_seq
    FROM s
    ON CONFLICT (tenant_id, session_id, turn_id) DO NOTHING
    RETURNING *
), e AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
    SELECT :tenant_id, :session_id, t.accepted_seq, :turn_id, 'turn.accepted', NULL, 0,
           CAST(:event_data AS jsonb)
    FROM t
    RETURNING seq
)
SELECT t.* FROM t, e;

-- name: get_session
SELECT * FROM sessions WHERE tenant_id = :tenant_id AND session_id = :session_id;

-- name: get_turn
SELECT * FROM turns
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id;

-- name: list_turns
SELECT * FROM turns WHERE tenant_id = :tenant_id AND session_id = :session_id
ORDER BY ordinal;

-- name: lane_head
-- the session's oldest active turn: the only one its lane may run
SELECT * FROM turns
WHERE tenant_id = :tenant_id AND session_id = :session_id
  AND state IN ('queued', 'running', 'waiting', 'needs_reconciliation')
ORDER BY ordinal LIMIT 1;

-- name: list_events
SELECT * FROM events
WHERE tenant_id = :tenant_id AND session_id = :session_id AND seq > :after
ORDER BY seq LIMIT :limit;

-- name: turn_events
SELECT * FROM events
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
ORDER BY seq;

-- name: turn_context
-- what a turn's model sees, in one read: the conversation of the session's earlier
-- turns (inputs and outcomes), then every event of the turn itself
SELECT e.* FROM events e
JOIN turns t ON t.tenant_id = e.tenant_id AND t.session_id = e.session_id
            AND t.turn_id = e.turn_id
WHERE e.tenant_id = :tenant_id AND e.session_id = :session_id AND t.ordinal <= :ordinal
  AND (e.turn_id = :turn_id
       OR e.type IN ('turn.accepted', 'model.completed', 'tool.completed',
                     'tool.interrupted'))
ORDER BY t.ordinal, e.seq;

-- name: claim_fence
-- Postgres is the authority on fences: accept N only above the highest accepted
UPDATE sessions SET fence = :fence
WHERE tenant_id = :tenant_id AND session_id = :session_id AND fence < :fence
RETURNING fence;

-- name: fenced_append
-- One step, one statement, run in autocommit (no BEGIN/COMMIT round trips): check the
-- fence and the turn's revision and take the next seq on the session row, move the
-- turn by compare-and-swap on its revision, append the event. Zero rows: the fence
-- moved on (nothing was written). Should the session row move but not the turn, the
-- final division by zero aborts the whole statement, so a seq is never taken for
-- nothing; the caller reads that error as a lost race too.
WITH s AS (
    UPDATE sessions SET head_seq = head_seq + 1, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND fence = :fence
      AND EXISTS (SELECT 1 FROM turns
                  WHERE tenant_id = :tenant_id AND session_id = :session_id
                    AND turn_id = :turn_id AND revision = :revision
                    AND state NOT IN ('completed', 'failed', 'cancelled'))
    RETURNING head_seq
), t AS (
    UPDATE turns SET state = :state,
                     revision = revision + 1,
                     attempt = attempt + :attempt_inc,
                     result = COALESCE(CAST(:result AS jsonb), result),
                     error = COALESCE(CAST(:error AS jsonb), error),
                     -- set by input.requested, cleared by every other step
                     pending_input = CAST(:pending_input AS jsonb),
                     updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
      AND revision = :revision
      AND state NOT IN ('completed', 'failed', 'cancelled')
      AND EXISTS (SELECT 1 FROM s)
    RETURNING revision, attempt, cancel_requested
), e AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
    SELECT :tenant_id, :session_id, s.head_seq, :turn_id, :type, :step, :fence,
           CAST(:data AS jsonb)
    FROM s, t
    RETURNING *
)
SELECT e.*, t.revision AS turn_revision, t.attempt AS turn_attempt,
       t.cancel_requested AS turn_cancel_requested
FROM s LEFT JOIN t ON true LEFT JOIN e ON true
WHERE 1 / (e.seq IS NOT NULL)::int = 1;

-- name: request_cancel
-- cancellation is a request: a flag and an event, no state change and no fence
WITH t AS (
    UPDATE turns SET cancel_requested = true, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
      AND state NOT IN ('completed', 'failed', 'cancelled') AND NOT cancel_requested
    RETURNING turn_id
), s AS (
    UPDATE sessions SET head_seq = head_seq + 1, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND EXISTS (SELECT 1 FROM t)
    RETURNING head_seq
)
INSERT INTO events (tenant_id, session_id, seq, turn_id, type, fence, data)
SELECT :tenant_id, :session_id, s.head_seq, :turn_id, 'turn.cancel_requested', 0,
       CAST(:data AS jsonb)
FROM s
RETURNING *;

-- name: resolve_input
-- Answer a waiting turn's open input request, once: the turn stays waiting (a worker
-- moves it on), the answer is kept on the turn and journalled as input.resolved.
-- Zero rows: no such open request, already answered, or expired.
WITH t AS (
    UPDATE turns
    SET pending_input = pending_input || jsonb_build_object(
            'resolved', true, 'response', CAST(:response AS jsonb),
            'by', CAST(:subject AS text)),
        revision = revision + 1, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
      AND state = 'waiting' AND pending_input ->> 'request_id' = :request_id
      AND NOT (pending_input ? 'resolved')
      AND (:expired OR CAST(pending_input ->> 'expires_at' AS timestamptz) > now())
    RETURNING turn_id
), s AS (
    UPDATE sessions SET head_seq = head_seq + 1, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND EXISTS (SELECT 1 FROM t)
    RETURNING head_seq
)
INSERT INTO events (tenant_id, session_id, seq, turn_id, type, fence, data)
SELECT :tenant_id, :session_id, s.head_seq, :turn_id, 'input.resolved', 0,
       jsonb_build_object('request_id', CAST(:request_id AS text),
                          'response', CAST(:response AS jsonb), 'by', CAST(:subject AS text))
FROM s
RETURNING *;

-- name: scan_expired_inputs
-- waiting turns whose open input request expired unanswered: the scan settles them
SELECT tenant_id, session_id, turn_id, pending_input ->> 'request_id'
FROM turns
WHERE state = 'waiting' AND NOT (pending_input ? 'resolved')
  AND CAST(pending_input ->> 'expires_at' AS timestamptz) < now()
ORDER BY updated_at
LIMIT :limit;

-- name: scan_stalled
-- Sessions whose lane head can run and whose journal has not moved for a while, a
-- keyset page at a time. The caller drops those with a live lease; the scan only enqueues.
SELECT h.tenant_id, h.session_id, s.updated_at FROM (
    SELECT DISTINCT ON (t.tenant_id, t.session_id) t.tenant_id, t.session_id, t.state,
           t.pending_input
    FROM turns t
    WHERE t.state IN ('queued', 'running', 'waiting', 'needs_reconciliation')
    ORDER BY t.tenant_id, t.session_id, t.ordinal
) h
JOIN sessions s ON s.tenant_id = h.tenant_id AND s.session_id = h.session_id
WHERE (h.state IN ('queued', 'running')
       OR (h.state = 'waiting' AND h.pending_input ? 'resolved'))
  AND s.updated_at < now() - make_interval(secs => :grace)
  AND (s.updated_at, s.tenant_id, s.session_id) > (:after_ts, :after_tenant, :after_session)
ORDER BY s.updated_at, s.tenant_id, s.session_id
LIMIT :limit;
