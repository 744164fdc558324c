-- Every SQL statement turnkeep runs, as named blocks. Only store/transitions.py
-- runs them. Each block starts with "-- name: NAME" and a line saying why.
--
-- State sets are never spelled out here: store/sql.py fills them in from
-- runtime/states.py when it loads this file, so the guards cannot drift from the
-- declared state machine:
--   {active}          every non-terminal state
--   {runnable}        states a worker can step without anyone's answer
--   {parked}          states parked on an input request (waiting, needs_reconciliation)
--   {unattended}      states no worker is stepping (queued and the parked ones)
--   {to:STATE}        the states TRANSITIONS allows to move to STATE
--   {transitions}     (VALUES (from, to), ...): every allowed transition, for
--                     statements whose target state is a parameter
-- A single state or event type written as a literal is checked against the enums
-- by tests/unit/test_queries.py.

-- name: admit_turn
-- Admission in one statement, in autocommit: create the session or lock it and take
-- the next seq (refused when it is bound to another agent), insert the turn queued,
-- append turn.accepted, return both. Should the turn id exist already, the final
-- division by zero aborts the whole statement, giving the seq back; so it does when
-- the session is bound to another agent (no session row comes back, hence no turn).
-- Either way the caller reads the stored turn to answer. So it does when the session
-- is in another project than :project_id (NULL: none), which its first turn set: a
-- session's project never changes. With :reject
-- (multitask=reject: run in a transaction after lock_session, so its snapshot holds
-- every turn committed before it) a new turn id is not inserted while the session
-- has an active turn: the one row has busy set and no turn, and the caller rolls back.
-- Quotas (:max_session, :max_tenant; NULL: none) bound a new turn id by the active
-- turns already there, counted on ix_turns_active_lane and only up to the bound: at
-- it, nothing is written (not even the session row) and the one row has
-- session_full or tenant_full set and no turn. A replay is never busy nor over a
-- quota: the turn id is looked up first, and it aborts as above. The counts see this
-- statement's snapshot, in autocommit taken before it waits for the session row:
-- admissions racing each other may overshoot a bound by as many as race (a session's
-- by its concurrent admissions, a tenant's by its admissions in flight); none is lost.
WITH r AS MATERIALIZED (
    -- one probe of the primary key, first: a replay is never busy nor over a quota
    SELECT EXISTS (SELECT 1 FROM turns
                   WHERE tenant_id = :tenant_id AND session_id = :session_id
                     AND turn_id = :turn_id) AS replay
), b AS (
    SELECT NOT r.replay AND :reject
           AND EXISTS (SELECT 1 FROM turns
                       WHERE tenant_id = :tenant_id AND session_id = :session_id
                         AND state IN {active}) AS busy,
           NOT r.replay AND CAST(:max_session AS bigint) IS NOT NULL
           AND (SELECT count(*) FROM (
                    SELECT 1 FROM turns
                    WHERE tenant_id = :tenant_id AND session_id = :session_id
                      AND state IN {active}
                    LIMIT CAST(:max_session AS bigint)) n)
               >= CAST(:max_session AS bigint) AS session_full,
           NOT r.replay AND CAST(:max_tenant AS bigint) IS NOT NULL
           AND (SELECT count(*) FROM (
                    SELECT 1 FROM turns
                    WHERE tenant_id = :tenant_id AND state IN {active}
                    LIMIT CAST(:max_tenant AS bigint)) n)
               >= CAST(:max_tenant AS bigint) AS tenant_full
    FROM r
), s AS (
    INSERT INTO sessions AS cur (tenant_id, session_id, agent_name, head_seq, project_id)
    SELECT :tenant_id, :session_id, :agent_name, 1, CAST(:project_id AS text) FROM b
    -- (busy: only ever in a transaction the caller rolls back; it answers busy first)
    WHERE b.busy OR NOT (b.session_full OR b.tenant_full)
    ON CONFLICT (tenant_id, session_id) DO UPDATE
        SET head_seq = cur.head_seq + 1, updated_at = now()
        WHERE cur.agent_name = EXCLUDED.agent_name
          AND cur.project_id IS NOT DISTINCT FROM EXCLUDED.project_id
    RETURNING head_seq
), t AS (
    INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                       input_hash, input, output_schema, budget, accepted_seq, submitted_by)
    SELECT :tenant_id, :session_id, :turn_id, 'queued', :agent_name, :agent_hash,
           :input_hash, CAST(:input AS jsonb), CAST(:output_schema AS jsonb),
           CAST(:budget AS jsonb), s.head_seq, :submitted_by
    FROM s, b
    WHERE NOT b.busy
    ON CONFLICT (tenant_id, session_id, turn_id) DO NOTHING
    RETURNING *
), e AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
    SELECT :tenant_id, :session_id, t.accepted_seq, :turn_id, 'turn.accepted', NULL, 0,
           jsonb_build_object('input', t.input, 'agent', t.agent_name, 'by', t.submitted_by)
    FROM t
    RETURNING data AS event_data, created_at AS event_created_at
)
SELECT t.*, e.event_data, e.event_created_at, x.busy, b.session_full, b.tenant_full
FROM b LEFT JOIN s ON true LEFT JOIN t ON true LEFT JOIN e ON true
     -- busy only in a session of this agent: another agent's is refused as such
     CROSS JOIN LATERAL (SELECT b.busy AND s.head_seq IS NOT NULL AS busy) x
WHERE 1 / (t.turn_id IS NOT NULL OR x.busy OR b.session_full OR b.tenant_full)::int = 1;

-- name: get_session
SELECT * FROM sessions WHERE tenant_id = :tenant_id AND session_id = :session_id;

-- name: get_turn
SELECT * FROM turns
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id;

-- name: insert_webhook
-- A workflow node's webhook, in the transaction that admits its turn (right after
-- admit_turn): the outbox row the turn's settlement is delivered from, whichever
-- statement settles it (fenced_append, request_cancel, interrupt_lane).
INSERT INTO webhooks (tenant_id, session_id, turn_id, run_id, node_id, url, secret_id,
                      delivery_id)
VALUES (:tenant_id, :session_id, :turn_id, :run_id, :node_id, :url, :secret_id,
        :delivery_id)
RETURNING delivery_id;

-- name: get_webhook
SELECT * FROM webhooks
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id;

-- name: claim_webhook
-- The prompt delivery a worker sends once a turn with a webhook settled: claim that
-- one webhook when its turn is terminal and it is undelivered and due. A claim counts
-- an attempt, takes a new token (:claim) and moves next_attempt_at :lease seconds on:
-- a deliverer that dies mid-attempt leaves it due again once that runs out. A
-- concurrent claim waits for this one and then finds it no longer due. Zero rows:
-- the turn is active, the webhook delivered, claimed, or backing off.
UPDATE webhooks w
SET attempts = w.attempts + 1, claim = :claim,
    next_attempt_at = now() + make_interval(secs => :lease), updated_at = now()
FROM turns t
WHERE w.tenant_id = :tenant_id AND w.session_id = :session_id AND w.turn_id = :turn_id
  AND t.tenant_id = w.tenant_id AND t.session_id = w.session_id AND t.turn_id = w.turn_id
  AND t.state NOT IN {active}
  AND w.delivered_at IS NULL AND w.next_attempt_at <= now()
RETURNING w.*, t.state, t.result, t.error;

-- name: claim_webhooks
-- One keyset page of the delivery pass (beat): at most :limit undelivered webhooks
-- due now after the cursor (next_attempt_at, tenant, session, turn), walked by
-- ix_webhooks_due; those whose turn is terminal are claimed as claim_webhook claims
-- one. SKIP LOCKED: a row another pass is claiming right now is left to it. One row
-- per page entry, in keyset order (the last one is the next page's cursor); the
-- claimed ones carry the webhook and the turn's outcome, the others NULLs.
WITH page AS (
    SELECT tenant_id, session_id, turn_id, next_attempt_at FROM webhooks
    WHERE delivered_at IS NULL AND next_attempt_at <= now()
      AND (next_attempt_at, tenant_id, session_id, turn_id)
          > (:after_ts, :after_tenant, :after_session, :after_turn)
    ORDER BY next_attempt_at, tenant_id, session_id, turn_id
    LIMIT :limit
), due AS (
    SELECT w.tenant_id, w.session_id, w.turn_id
    FROM webhooks w
    JOIN page p
      ON p.tenant_id = w.tenant_id AND p.session_id = w.session_id AND p.turn_id = w.turn_id
    JOIN turns t
      ON t.tenant_id = w.tenant_id AND t.session_id = w.session_id AND t.turn_id = w.turn_id
    WHERE t.state NOT IN {active} AND w.delivered_at IS NULL AND w.next_attempt_at <= now()
    FOR UPDATE OF w SKIP LOCKED
), c AS (
    UPDATE webhooks w
    SET attempts = w.attempts + 1, claim = :claim,
        next_attempt_at = now() + make_interval(secs => :lease), updated_at = now()
    FROM due
    WHERE w.tenant_id = due.tenant_id AND w.session_id = due.session_id
      AND w.turn_id = due.turn_id
    RETURNING w.*
)
SELECT p.next_attempt_at AS page_at, p.tenant_id AS page_tenant,
       p.session_id AS page_session, p.turn_id AS page_turn,
       c.*, t.state, t.result, t.error
FROM page p
LEFT JOIN c
  ON c.tenant_id = p.tenant_id AND c.session_id = p.session_id AND c.turn_id = p.turn_id
LEFT JOIN turns t
  ON t.tenant_id = c.tenant_id AND t.session_id = c.session_id AND t.turn_id = c.turn_id
ORDER BY p.next_attempt_at, p.tenant_id, p.session_id, p.turn_id;

-- name: webhook_delivered
-- A receiver acknowledged an attempt (2xx): delivered, whichever claim sent it (an
-- acknowledgement is a fact; a later one changes nothing). Zero rows: already recorded.
UPDATE webhooks
SET delivered_at = now(), last_status = :status, last_error = NULL, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
  AND delivered_at IS NULL
RETURNING delivered_at;

-- name: webhook_retry
-- An attempt failed: the next one is due in :delay seconds (the caller's backoff).
-- Only the newest claim's holder writes it: an attempt whose lease ran out, and was
-- taken over, records nothing. Zero rows: delivered meanwhile, or claimed again.
UPDATE webhooks
SET next_attempt_at = now() + make_interval(secs => :delay), last_status = :status,
    last_error = :error, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
  AND delivered_at IS NULL AND claim = :claim
RETURNING next_attempt_at;

-- name: list_turns
SELECT * FROM turns WHERE tenant_id = :tenant_id AND session_id = :session_id
ORDER BY ordinal;

-- name: list_sessions
-- a keyset page of the tenant's sessions, newest first (ix_sessions_created), each
-- with its lane head (the oldest active turn) in the same read. By created_at, which
-- never changes: an index on updated_at would be rewritten by every step's commit.
-- A session in a project is listed to the project's owner (:subject) only.
SELECT s.*, h.turn_id AS active_turn, h.state AS active_state
FROM sessions s
LEFT JOIN LATERAL (
    SELECT turn_id, state FROM turns
    WHERE tenant_id = s.tenant_id AND session_id = s.session_id AND state IN {active}
    ORDER BY ordinal LIMIT 1
) h ON true
WHERE s.tenant_id = :tenant_id
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
-- empty page, the earliest one before the retention cut (docs/retention.md)
SELECT s.head_seq, s.earliest_seq, e.*
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
SELECT s.head_seq, s.earliest_seq, e.*
FROM sessions s
LEFT JOIN LATERAL (
    SELECT * FROM events
    WHERE tenant_id = s.tenant_id AND session_id = s.session_id AND seq > :after
      AND type IN ('turn.accepted', 'model.completed', 'tool.completed', 'tool.interrupted')
    ORDER BY seq LIMIT :limit
) e ON true
WHERE s.tenant_id = :tenant_id AND s.session_id = :session_id
ORDER BY e.seq;

-- name: retention_candidates
-- Sessions keeping more than :retain events, a keyset page at a time by primary key:
-- the journal prune's work list. One held back by an active turn or its context
-- window stays on it, costing one prune statement a run that deletes nothing.
SELECT tenant_id, session_id FROM sessions
WHERE head_seq - earliest_seq + 1 > :retain
  AND (tenant_id, session_id) > (:after_tenant, :after_session)
ORDER BY tenant_id, session_id
LIMIT :limit;

-- name: prune_events
-- Delete a session's oldest events, at most :batch, never one still needed, and move
-- sessions.earliest_seq past them in the same statement (never backwards, so two
-- prunes racing are harmless; updated_at is not progress and stays). Kept:
--   the newest :retain events;
--   everything from the oldest active turn's turn.accepted on ({active});
--   the context window a turn starts from (start_turn): after a compaction, the newest
--   context.compacted and everything after its to_seq; without one, the newest
--   2 x :window_rows events and, further back if need be, the :window_rows newest
--   conversation rows before the oldest active turn.
-- Events are a contiguous range earliest_seq..head_seq, so the cut is a prefix. Turn
-- and session rows (and each turn's result) are never deleted. The same statement
-- deletes at most :batch recorded tool steps (tool_steps) of the session's turns that
-- ended over :steps_grace seconds ago: an ended turn runs no tool again, and the grace
-- outlasts a stale worker still inside a call of a turn that ended under another. One
-- row: events deleted, the earliest and head seq after, tool steps deleted; no row: no
-- such session.
WITH s AS (
    SELECT head_seq, earliest_seq FROM sessions
    WHERE tenant_id = :tenant_id AND session_id = :session_id
), act AS (
    SELECT min(accepted_seq) AS floor FROM turns
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND state IN {active}
), base AS (
    -- the newest compaction (ix_events_compacted)
    SELECT LEAST(seq, coalesce(CAST(data ->> 'to_seq' AS bigint), seq - 1) + 1) AS floor
    FROM events
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND type = 'context.compacted'
    ORDER BY seq DESC LIMIT 1
), win AS (
    -- no compaction: the oldest of the window's conversation rows (a backward walk
    -- of the primary key from the oldest active turn, or the head)
    SELECT seq AS floor FROM events
    WHERE tenant_id = :tenant_id AND session_id = :session_id
      AND NOT EXISTS (SELECT 1 FROM base)
      AND seq < coalesce((SELECT floor FROM act), (SELECT head_seq + 1 FROM s))
      AND type IN ('turn.accepted', 'model.completed', 'tool.completed', 'tool.interrupted')
    ORDER BY seq DESC OFFSET :window_rows - 1 LIMIT 1
), cut AS (
    -- LEAST ignores NULLs: no active turn, no compaction
    SELECT s.earliest_seq AS lo,
           LEAST(s.earliest_seq + :batch,
                 s.head_seq - :retain + 1,
                 (SELECT floor FROM act),
                 (SELECT floor FROM base),
                 CASE WHEN NOT EXISTS (SELECT 1 FROM base)
                      THEN LEAST(s.head_seq - 2 * :window_rows + 1,
                                 coalesce((SELECT floor FROM win), s.earliest_seq))
                 END) AS hi
    FROM s
), d AS (
    DELETE FROM events ev USING cut
    WHERE ev.tenant_id = :tenant_id AND ev.session_id = :session_id
      AND ev.seq >= cut.lo AND ev.seq < cut.hi
    RETURNING ev.seq
), u AS (
    UPDATE sessions SET earliest_seq = GREATEST(sessions.earliest_seq, cut.hi)
    FROM cut
    WHERE sessions.tenant_id = :tenant_id AND sessions.session_id = :session_id
      AND cut.hi > cut.lo
    RETURNING sessions.earliest_seq
), ended AS (
    SELECT k.turn_id, k.step, k.name
    FROM tool_steps k
    JOIN turns t ON t.tenant_id = k.tenant_id AND t.session_id = k.session_id
                AND t.turn_id = k.turn_id
    WHERE k.tenant_id = :tenant_id AND k.session_id = :session_id
      AND t.state NOT IN {active}
      AND t.updated_at < now() - make_interval(secs => :steps_grace)
    LIMIT :batch
), st AS (
    DELETE FROM tool_steps ts USING ended
    WHERE ts.tenant_id = :tenant_id AND ts.session_id = :session_id
      AND ts.turn_id = ended.turn_id AND ts.step = ended.step AND ts.name = ended.name
    RETURNING 1
)
SELECT (SELECT count(*) FROM d) AS deleted,
       coalesce((SELECT earliest_seq FROM u), s.earliest_seq) AS earliest_seq, s.head_seq,
       (SELECT count(*) FROM st) AS steps_deleted
FROM s;

-- name: claim_fence
-- Postgres is the authority on fences: accept N only above the highest accepted.
-- (The worker claims inside start_turn; this one is for tools and tests.)
UPDATE sessions SET fence = :fence
WHERE tenant_id = :tenant_id AND session_id = :session_id AND fence < :fence
RETURNING fence;

-- name: start_turn
-- A task's first statement, one round trip: claim the fence (:claim; a lane that
-- goes on to its next turn under the same lease confirms it instead), and when the
-- lane head can run here (runnable, an agent definition this worker serves, under
-- the attempt cap; a wait coming back is not a retry) start its attempt: running,
-- attempt + 1, turn.started. Returns the head, the stored fence (for a lost claim)
-- and what the runner needs: the conversation of earlier turns and every event of
-- this one. Should the session row move but not the turn (a concurrent answer
-- bumped its revision), the final division by zero aborts the whole statement.
-- The conversation of earlier turns is a window, not the journal: the newest
-- context.compacted and what came after it, at most :window_rows rows and
-- :window_bytes bytes (the newest kept), so a turn's start costs the same in a
-- session of ten thousand events as in a fresh one.
WITH cur AS (
    SELECT fence FROM sessions WHERE tenant_id = :tenant_id AND session_id = :session_id
), h AS (
    SELECT * FROM turns
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND state IN {active}
    ORDER BY ordinal LIMIT 1
), go AS (
    SELECT h.turn_id, h.revision, CASE WHEN h.state IN {parked} THEN 0 ELSE 1 END AS inc
    FROM h
    WHERE (h.state IN {runnable} OR (h.state IN {parked} AND h.pending_input ? 'resolved'))
      AND h.agent_hash = ANY(:agent_hashes)
      AND (h.state IN {parked} OR h.attempt < :max_attempts)
), s AS (
    UPDATE sessions
    SET fence = :fence, head_seq = head_seq + (SELECT count(*) FROM go),
        updated_at = CASE WHEN EXISTS (SELECT 1 FROM go) THEN now() ELSE updated_at END
    WHERE tenant_id = :tenant_id AND session_id = :session_id
      AND CASE WHEN :claim THEN fence < :fence ELSE fence = :fence END
    RETURNING head_seq
), t AS (
    UPDATE turns
    SET state = 'running', revision = turns.revision + 1, attempt = turns.attempt + go.inc,
        pending_input = NULL, updated_at = now()
    FROM go, s
    WHERE turns.tenant_id = :tenant_id AND turns.session_id = :session_id
      AND turns.turn_id = go.turn_id AND turns.revision = go.revision
      AND turns.state IN {to:running}
    RETURNING turns.revision, turns.attempt, turns.cancel_requested, turns.ordinal
), e AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
    SELECT :tenant_id, :session_id, s.head_seq, go.turn_id, 'turn.started', NULL, :fence,
           jsonb_build_object('attempt', t.attempt)
    FROM s, t, go
    RETURNING seq, data, created_at
 ), base AS (
    -- the newest compaction: the conversation's base, whichever turn wrote it
    SELECT seq, CAST(data ->> 'to_seq' AS bigint) AS to_seq FROM events
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND type = 'context.compacted'
      AND EXISTS (SELECT 1 FROM t)
    ORDER BY seq DESC LIMIT 1
), win AS (
    -- earlier turns' conversation after the base, newest first, at most :window_rows
    -- rows (a backward walk of the primary key); later turns' inputs are not theirs
    SELECT ev.*, sum(pg_column_size(ev.data)) OVER (ORDER BY ev.seq DESC) AS upto
    FROM events ev
    WHERE ev.tenant_id = :tenant_id AND ev.session_id = :session_id AND EXISTS (SELECT 1 FROM t)
      AND ev.seq > coalesce((SELECT coalesce(to_seq, seq - 1) FROM base), 0)
      AND ev.turn_id <> (SELECT turn_id FROM go)
      AND ev.type IN ('turn.accepted', 'model.completed', 'tool.completed', 'tool.interrupted')
      AND NOT (ev.type = 'turn.accepted' AND ev.seq > (SELECT accepted_seq FROM h))
    ORDER BY ev.seq DESC LIMIT :window_rows
), ctx AS (
    SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.ordinal, x.seq), '[]') AS events
    FROM (
        -- (a lookup by primary key per row: the window is small, the session is not)
        SELECT w.tenant_id, w.session_id, w.seq, w.turn_id, w.type, w.step, w.fence, w.data,
               w.created_at,
               (SELECT tt.ordinal FROM turns tt
                WHERE tt.tenant_id = w.tenant_id AND tt.session_id = w.session_id
                  AND tt.turn_id = w.turn_id)
        FROM win w
        WHERE w.upto <= :window_bytes
        UNION ALL
        -- the base itself, when an earlier turn wrote it (this turn's events follow)
        SELECT ev.tenant_id, ev.session_id, ev.seq, ev.turn_id, ev.type, ev.step, ev.fence,
               ev.data, ev.created_at, -1
        FROM events ev
        WHERE ev.tenant_id = :tenant_id AND ev.session_id = :session_id
          AND ev.seq = (SELECT seq FROM base) AND ev.turn_id <> (SELECT turn_id FROM go)
        UNION ALL
        -- every event of this turn: the runner resumes from them
        SELECT ev.tenant_id, ev.session_id, ev.seq, ev.turn_id, ev.type, ev.step, ev.fence,
               ev.data, ev.created_at, (SELECT ordinal FROM t)
        FROM events ev
        WHERE ev.tenant_id = :tenant_id AND ev.session_id = :session_id
          AND ev.turn_id = (SELECT turn_id FROM go) AND EXISTS (SELECT 1 FROM t)
    ) x
)
SELECT cur.fence AS stored_fence, EXISTS (SELECT 1 FROM s) AS claimed, h.*,
       t.revision AS started_revision, t.attempt AS started_attempt,
       t.cancel_requested AS started_cancel_requested,
       e.seq AS started_seq, e.data AS started_data, e.created_at AS started_at,
       ctx.events AS context
FROM cur LEFT JOIN h ON true LEFT JOIN t ON true LEFT JOIN e ON true CROSS JOIN ctx
WHERE 1 / (CASE WHEN EXISTS (SELECT 1 FROM go) AND EXISTS (SELECT 1 FROM s)
                     AND e.seq IS NULL THEN 0 ELSE 1 END) = 1;

-- name: fenced_append
-- One step, one statement, in autocommit: check the fence and the turn's revision and
-- take the next seq(s) on the session row, move the turn by compare-and-swap on its
-- revision (only along a declared transition), append the step's event and, when
-- the step settles the turn, its terminal event after it (:n_events = 2). A settling
-- step also says whether the lane's next turn can run, so the worker re-reads
-- nothing, and whether the turn has a webhook to deliver (webhook). Zero rows: the fence moved on (nothing was written). Should the session
-- row move but not the turn, the final division by zero aborts the whole statement,
-- so a seq is never taken for nothing; the caller reads that error as a lost race.
WITH s AS (
    UPDATE sessions SET head_seq = head_seq + :n_events, updated_at = now(),
        -- a model step's tokens and cost, added up per session and (below) per turn
        usage = CASE WHEN CAST(:usage AS jsonb) IS NULL THEN usage
                     ELSE (SELECT jsonb_object_agg(k, COALESCE((usage ->> k)::numeric, 0)
                             + COALESCE((CAST(:usage AS jsonb) ->> k)::numeric, 0))
                           FROM jsonb_object_keys(usage || CAST(:usage AS jsonb)) k)
                END
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND fence = :fence
      AND EXISTS (SELECT 1 FROM turns
                  WHERE tenant_id = :tenant_id AND session_id = :session_id
                    AND turn_id = :turn_id AND revision = :revision
                    AND (state, CAST(:state AS text)) IN {transitions})
    RETURNING head_seq
), t AS (
    UPDATE turns SET state = :state,
                     usage = CASE WHEN CAST(:usage AS jsonb) IS NULL THEN usage
                                  ELSE (SELECT jsonb_object_agg(k, COALESCE((usage ->> k)::numeric, 0)
                                          + COALESCE((CAST(:usage AS jsonb) ->> k)::numeric, 0))
                                        FROM jsonb_object_keys(usage || CAST(:usage AS jsonb)) k)
                             END,
                     revision = revision + 1,
                     attempt = attempt + :attempt_inc,
                     result = COALESCE(CAST(:result AS jsonb), result),
                     error = COALESCE(CAST(:error AS jsonb), error),
                     -- set by input.requested, cleared by every other step
                     pending_input = CAST(:pending_input AS jsonb),
                     updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
      AND revision = :revision AND (state, CAST(:state AS text)) IN {transitions}
      AND EXISTS (SELECT 1 FROM s)
    RETURNING revision, attempt, cancel_requested
), e AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
    SELECT :tenant_id, :session_id, s.head_seq - :n_events + 1, :turn_id,
           CAST(:type AS text), CAST(:step AS integer), :fence, CAST(:data AS jsonb)
    FROM s, t
    UNION ALL
    SELECT :tenant_id, :session_id, s.head_seq, :turn_id,
           CAST(:then_type AS text), CAST(NULL AS integer), :fence, CAST(:then_data AS jsonb)
    FROM s, t WHERE :n_events = 2
    RETURNING *
), nxt AS (
    SELECT n.state, n.pending_input FROM turns n
    WHERE :settles AND n.tenant_id = :tenant_id AND n.session_id = :session_id
      AND n.state IN {active} AND n.turn_id <> :turn_id
    ORDER BY n.ordinal LIMIT 1
)
SELECT e.*, t.revision AS turn_revision, t.attempt AS turn_attempt,
       t.cancel_requested AS turn_cancel_requested,
       EXISTS (SELECT 1 FROM nxt
               WHERE nxt.state IN {runnable}
                  OR (nxt.state IN {parked} AND nxt.pending_input ? 'resolved'))
           AS lane_runnable,
       -- a settled turn with an undelivered webhook: the worker sends its prompt
       -- delivery (a primary-key probe, made only when the step settles)
       :settles AND EXISTS (SELECT 1 FROM webhooks w
                            WHERE w.tenant_id = :tenant_id AND w.session_id = :session_id
                              AND w.turn_id = :turn_id AND w.delivered_at IS NULL)
           AS webhook
FROM s LEFT JOIN t ON true LEFT JOIN e ON true
WHERE 1 / (e.seq IS NOT NULL)::int = 1
ORDER BY e.seq;

-- name: request_cancel
-- Cancel a turn. One no worker is stepping ({unattended}: queued, waiting, parked) is
-- settled at once: turn.cancel_requested and turn.cancelled, by compare-and-swap on its
-- state, so a worker that started it a moment earlier wins and only gets the
-- request. A running turn gets the request (a flag and an event) and its worker
-- stops at the next safe point. The session row is locked first, in the order every
-- worker statement takes its locks. Zero rows: terminal, unknown, or already requested.
WITH cur AS (
    SELECT head_seq FROM sessions
    WHERE tenant_id = :tenant_id AND session_id = :session_id
    FOR UPDATE
), t AS (
    UPDATE turns
    SET cancel_requested = true,
        state = CASE WHEN state IN {unattended} THEN 'cancelled' ELSE state END,
        revision = CASE WHEN state IN {unattended} THEN revision + 1 ELSE revision END,
        pending_input = CASE WHEN state IN {unattended} THEN NULL ELSE pending_input END,
        updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
      AND EXISTS (SELECT 1 FROM cur)
      AND state IN {active} AND state IN {to:cancelled}
      AND (NOT cancel_requested OR state IN {unattended})
    RETURNING state
), s AS (
    UPDATE sessions
    SET head_seq = head_seq + CASE WHEN (SELECT state FROM t) = 'cancelled' THEN 2 ELSE 1 END,
        updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND EXISTS (SELECT 1 FROM t)
    RETURNING head_seq
)
INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
SELECT :tenant_id, :session_id,
       s.head_seq - CASE WHEN t.state = 'cancelled' THEN 1 ELSE 0 END, :turn_id,
       'turn.cancel_requested', CAST(NULL AS integer), 0, CAST(:data AS jsonb)
FROM s, t
UNION ALL
SELECT :tenant_id, :session_id, s.head_seq, :turn_id, 'turn.cancelled', CAST(NULL AS integer),
       0, CAST(:data AS jsonb)
FROM s, t WHERE t.state = 'cancelled'
RETURNING *;

-- name: resolve_input
-- Answer a parked turn's open input request, once: the turn stays parked (a worker
-- moves it on), the answer is kept on the turn and journalled as input.resolved with
-- who answered and the response's hash (a secret answer is passed here as its hash
-- alone). Zero rows: no such open request, already answered, or expired. The
-- session row is locked first, in the order every other writer takes its locks, so
-- an answer racing a cancellation or an interrupt waits instead of deadlocking.
WITH cur AS (
    SELECT head_seq FROM sessions
    WHERE tenant_id = :tenant_id AND session_id = :session_id
    FOR UPDATE
), t AS (
    UPDATE turns
    SET pending_input = pending_input || jsonb_build_object(
            'resolved', true, 'response', CAST(:response AS jsonb),
            'response_hash', CAST(:response_hash AS text), 'by', CAST(:subject AS text)),
        revision = revision + 1, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
      AND EXISTS (SELECT 1 FROM cur)
      AND state IN {parked} AND pending_input ->> 'request_id' = :request_id
      AND NOT (pending_input ? 'resolved')
      AND (:expired OR CAST(pending_input ->> 'expires_at' AS timestamptz) > now())
    RETURNING turn_id, pending_input -> 'kind' AS kind, pending_input -> 'step' AS step
), s AS (
    UPDATE sessions SET head_seq = head_seq + 1, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND EXISTS (SELECT 1 FROM t)
    RETURNING head_seq
)
INSERT INTO events (tenant_id, session_id, seq, turn_id, type, fence, data)
SELECT :tenant_id, :session_id, s.head_seq, :turn_id, 'input.resolved', 0,
       jsonb_build_object('request_id', CAST(:request_id AS text), 'kind', t.kind,
                          'step', t.step, 'response', CAST(:response AS jsonb),
                          'response_hash', CAST(:response_hash AS text),
                          'by', CAST(:subject AS text))
FROM s, t
RETURNING *;

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
-- the scan answers them (worker/delegation.py settle_parent). Only such rows come
-- back, so parents whose children still run never crowd the page.
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
      WHERE k.turn_id IS NULL OR k.state IN {active}
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

-- name: lock_session
-- The first statement of an admission that looks at the lane (multitask reject or
-- interrupt, one transaction): lock the session row, so every other admission and
-- every worker statement of the session waits for this transaction, and the next
-- statements' snapshots hold every turn committed before it. A new session is created
-- here (head_seq 0, gone again on rollback): a SELECT ... FOR UPDATE would lock
-- nothing, and two first admissions would both find the lane idle. A row that exists
-- is locked and left unchanged (ON CONFLICT locks it even when its WHERE is false),
-- also when it is bound to another agent or project: admit_turn refuses that.
INSERT INTO sessions AS cur (tenant_id, session_id, agent_name, head_seq, project_id)
VALUES (:tenant_id, :session_id, :agent_name, 0, CAST(:project_id AS text))
ON CONFLICT (tenant_id, session_id) DO UPDATE SET head_seq = cur.head_seq WHERE false
RETURNING head_seq;

-- name: interrupt_lane
-- multitask=interrupt, after admit_turn in the same transaction (the session row is
-- locked by lock_session): cancel every active turn admitted before the new one
-- (ordinal < :ordinal), as request_cancel does for one. One no worker is stepping
-- ({unattended}) is settled at once: turn.cancel_requested then turn.cancelled; a
-- running one gets the request (flag and event) and its worker stops at the next safe
-- point; one already requested gets nothing more. Seqs are taken contiguously from
-- head_seq, in admission order. Rows: the events written (none for an idle lane).
WITH t AS (
    UPDATE turns
    SET cancel_requested = true,
        state = CASE WHEN state IN {unattended} THEN 'cancelled' ELSE state END,
        revision = CASE WHEN state IN {unattended} THEN revision + 1 ELSE revision END,
        pending_input = CASE WHEN state IN {unattended} THEN NULL ELSE pending_input END,
        updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND ordinal < :ordinal
      AND state IN {active} AND state IN {to:cancelled}
      AND (NOT cancel_requested OR state IN {unattended})
    RETURNING turn_id, ordinal, state
), n AS (
    SELECT turn_id, state, CASE WHEN state = 'cancelled' THEN 2 ELSE 1 END AS k,
           sum(CASE WHEN state = 'cancelled' THEN 2 ELSE 1 END) OVER (ORDER BY ordinal) AS upto
    FROM t
), s AS (
    UPDATE sessions
    SET head_seq = head_seq + (SELECT sum(k) FROM n), updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND EXISTS (SELECT 1 FROM t)
    RETURNING head_seq - (SELECT sum(k) FROM n) AS base
)
INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
SELECT :tenant_id, :session_id, s.base + n.upto - n.k + 1, n.turn_id,
       'turn.cancel_requested', CAST(NULL AS integer), 0, CAST(:data AS jsonb)
FROM s, n
UNION ALL
SELECT :tenant_id, :session_id, s.base + n.upto, n.turn_id, 'turn.cancelled',
       CAST(NULL AS integer), 0, CAST(:data AS jsonb)
FROM s, n WHERE n.state = 'cancelled'
RETURNING *;

-- name: get_tool_step
-- One recorded step of a tool call (ToolContext.step, worker/tool_steps.py), by the
-- call's key (tenant, session, turn, step) and the step's name; no row: not recorded.
SELECT * FROM tool_steps
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
  AND step = :step AND name = :name;

-- name: record_tool_step
-- Record a step's result once: the first writer wins. A later or racing writer writes
-- nothing and gets no row (ON CONFLICT waits for a racing insert to commit), and then
-- reads the winner with get_tool_step, a statement of its own whose snapshot holds the
-- row that beat it (this statement's snapshot may not). Not fenced on purpose: the
-- result is of an effect already done, which a worker that lost its lease did all the
-- same; the fence guards the journal, and this worker's journal writes stay refused.
INSERT INTO tool_steps (tenant_id, session_id, turn_id, step, name, result)
VALUES (:tenant_id, :session_id, :turn_id, :step, :name, CAST(:result AS jsonb))
ON CONFLICT (tenant_id, session_id, turn_id, step, name) DO NOTHING
RETURNING *;

-- name: fork_source
-- A fork's first statement, in its transaction (Store.fork): lock the source
-- session's row FOR SHARE, so every writer of the source (each takes that row first:
-- an admission, a worker's step or start, a cancellation, an answer, the prune's
-- move of earliest_seq) waits until the fork commits, and the statements after this
-- one see the source as it stands now; beside it, the fork's own row if it exists
-- already (a replay, or another session of that id). No row: no such source.
SELECT src.agent_name, src.fence, src.head_seq, src.earliest_seq,
       dst.session_id AS fork_id, dst.forked_from_session, dst.forked_from_seq
FROM sessions src
LEFT JOIN sessions dst ON dst.tenant_id = src.tenant_id AND dst.session_id = :session_id
WHERE src.tenant_id = :tenant_id AND src.session_id = :source_id
FOR SHARE OF src;

-- name: fork_session
-- The fork's session row: the source's agent, fence (so no copied event's fence is
-- above it), earliest retained seq and project (a fork of a project's session is in
-- that project, its owner's alone), head_seq :at_seq, and where it came from. No
-- row: a session of that id was committed meanwhile (a concurrent fork of the same
-- id); the caller reads it.
INSERT INTO sessions (tenant_id, session_id, agent_name, fence, head_seq, earliest_seq,
                      forked_from_session, forked_from_seq, project_id)
SELECT tenant_id, :session_id, agent_name, fence, :at_seq, earliest_seq, session_id, :at_seq,
       project_id
FROM sessions
WHERE tenant_id = :tenant_id AND session_id = :source_id
ON CONFLICT (tenant_id, session_id) DO NOTHING
RETURNING *;

-- name: fork_turns
-- Copies of the source's turns admitted at or before :at_seq, in admission order (new
-- ordinals, same ids). A turn settled by :at_seq (terminal, none of its events after
-- it) is copied as it is; one still active at :at_seq is cut: its copy is cancelled
-- with :cut_error (fork_cut) and no answer pending, so nothing ever runs it in the
-- fork. Turn rows outlive the journal prune: those of pruned events are copied too.
-- One row: how many turns were copied, and the ids of the cut ones (NULL: none).
WITH ins AS (
    INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                       input_hash, input, output_schema, budget, attempt, revision,
                       cancel_requested, pending_input, result, error, accepted_seq,
                       submitted_by, created_at, updated_at)
    SELECT t.tenant_id, :session_id, t.turn_id,
           CASE WHEN c.cut THEN 'cancelled' ELSE t.state END,
           t.agent_name, t.agent_hash, t.input_hash, t.input, t.output_schema, t.budget,
           t.attempt, t.revision, t.cancel_requested OR c.cut,
           CASE WHEN c.cut THEN NULL ELSE t.pending_input END,
           CASE WHEN c.cut THEN NULL ELSE t.result END,
           CASE WHEN c.cut THEN CAST(:cut_error AS jsonb) ELSE t.error END,
           t.accepted_seq, t.submitted_by, t.created_at,
           CASE WHEN c.cut THEN now() ELSE t.updated_at END
    FROM turns t
    CROSS JOIN LATERAL (
        SELECT t.state IN {active}
               OR EXISTS (SELECT 1 FROM events e
                          WHERE e.tenant_id = t.tenant_id AND e.session_id = t.session_id
                            AND e.turn_id = t.turn_id AND e.seq > :at_seq) AS cut
    ) c
    WHERE t.tenant_id = :tenant_id AND t.session_id = :source_id
      AND t.accepted_seq <= :at_seq
    ORDER BY t.ordinal
    RETURNING turn_id, error IS NOT DISTINCT FROM CAST(:cut_error AS jsonb) AS cut
)
SELECT count(*) AS turns, array_agg(turn_id ORDER BY turn_id) FILTER (WHERE cut) AS cut_turns
FROM ins;

-- name: fork_events
-- The source's retained events up to :at_seq, copied with their seq, turn id, type,
-- step, fence, data and time. One row: how many.
WITH ins AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data,
                        created_at)
    SELECT tenant_id, :session_id, seq, turn_id, type, step, fence, data, created_at
    FROM events
    WHERE tenant_id = :tenant_id AND session_id = :source_id AND seq <= :at_seq
    ORDER BY seq
    RETURNING seq
)
SELECT count(*) AS events FROM ins;

-- name: insert_attachment
-- An upload's first statement: the attachment's row, :pending and without its
-- content, in a session that exists. No row: no such session, or the id is taken
-- (a retry, or a concurrent upload of the same id): the caller reads which.
INSERT INTO attachments (tenant_id, session_id, attachment_id, state, filename,
                         content_type, size, sha256)
SELECT tenant_id, session_id, :attachment_id, :pending, :filename, :content_type, :size,
       :sha256
FROM sessions
WHERE tenant_id = :tenant_id AND session_id = :session_id
ON CONFLICT (tenant_id, session_id, attachment_id) DO NOTHING
RETURNING tenant_id, session_id, attachment_id, state, filename, content_type, size, sha256,
          created_at, updated_at;

-- name: attachment_content
-- An upload's second statement: the content of a :pending row whose hash it is.
-- Writing it again (a retry) changes nothing. No row: not pending, or another hash.
UPDATE attachments SET data = :data, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
  AND state = :pending AND sha256 = :sha256
RETURNING attachment_id;

-- name: attachment_ready
-- An upload's last statement: :pending with its content -> :ready. No row: not
-- pending (ready already, or on its way out: deleting, or swept).
UPDATE attachments SET state = :ready, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
  AND state = :pending AND data IS NOT NULL
RETURNING tenant_id, session_id, attachment_id, state, filename, content_type, size, sha256,
          created_at, updated_at;

-- name: get_attachment
-- An attachment's metadata, in whatever state; with :with_data, its content too.
SELECT tenant_id, session_id, attachment_id, state, filename, content_type, size, sha256,
       created_at, updated_at, CASE WHEN :with_data THEN data END AS data
FROM attachments
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id;

-- name: attachment_refs
-- The states of the attachments a turn's input names (:ids), in its session: an id
-- with no row here is missing (or another session's, or another tenant's).
SELECT attachment_id, state FROM attachments
WHERE tenant_id = :tenant_id AND session_id = :session_id
  AND attachment_id = ANY(:ids);

-- name: attachment_deleting
-- A deletion's first statement: any state -> :deleting (again for a deletion that
-- was cut short). No row: no such attachment.
UPDATE attachments SET state = :deleting, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
RETURNING attachment_id;

-- name: delete_attachment
-- A deletion's second statement: the :deleting row goes. No row: gone already.
DELETE FROM attachments
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
  AND state = :deleting
RETURNING attachment_id;

-- name: sweep_attachments
-- Across tenants: delete at most :limit rows left :pending or :deleting for more than
-- :grace seconds (an upload or a deletion whose API process died between its
-- statements), oldest first, on ix_attachments_state. SKIP LOCKED: a row a request is
-- finishing right now is left to it. Rows: what was deleted.
WITH stale AS (
    SELECT tenant_id, session_id, attachment_id FROM attachments
    WHERE state IN (:pending, :deleting)
      AND updated_at < now() - make_interval(secs => :grace)
    ORDER BY updated_at
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
DELETE FROM attachments a USING stale
WHERE a.tenant_id = stale.tenant_id AND a.session_id = stale.session_id
  AND a.attachment_id = stale.attachment_id
RETURNING a.tenant_id, a.session_id, a.attachment_id, a.state;

-- name: session_project
-- The session's project and that project's owner, in one read (the project by its
-- primary key): the API's owner check on every route that reaches a session
-- (api/submit.py visible). No row: no such session; NULLs: a session in no project.
SELECT s.project_id, p.owner
FROM sessions s
LEFT JOIN projects p ON p.tenant_id = s.tenant_id AND p.project_id = s.project_id
WHERE s.tenant_id = :tenant_id AND s.session_id = :session_id;

-- name: create_project
-- A new project owned by :owner. No row: the id is taken (a replay, another request's,
-- or another subject's project): the caller reads which with get_project.
INSERT INTO projects (tenant_id, project_id, owner, overrides, request_hash)
VALUES (:tenant_id, :project_id, :owner, CAST(:overrides AS jsonb), :request_hash)
ON CONFLICT (tenant_id, project_id) DO NOTHING
RETURNING *;

-- name: get_project
-- A project of :owner; no row: none, or another subject's (the same answer).
SELECT * FROM projects
WHERE tenant_id = :tenant_id AND project_id = :project_id AND owner = :owner;

-- name: list_projects
-- a keyset page of :owner's projects, newest first (ix_projects_owner)
SELECT * FROM projects
WHERE tenant_id = :tenant_id AND owner = :owner
  AND (CAST(:before_at AS timestamptz) IS NULL
       OR (created_at, project_id) < (CAST(:before_at AS timestamptz), :before_id))
ORDER BY created_at DESC, project_id DESC
LIMIT :limit;

-- name: update_project
-- Replace a project's overrides: turns admitted from now on pin the new ones, turns
-- admitted before keep theirs (in their input). No row: no project of :owner's.
UPDATE projects SET overrides = CAST(:overrides AS jsonb), updated_at = now()
WHERE tenant_id = :tenant_id AND project_id = :project_id AND owner = :owner
RETURNING *;

-- name: remember_fact
-- Keep a fact of a scope (runtime/memory.py, worker/memory.py), once per writing tool
-- call: a rerun of the call (same source_key, its idempotency key) writes nothing and
-- gets no row. Not fenced, as record_tool_step is not: the fact was remembered by the
-- call whichever worker ran it, and the fence guards the journal.
INSERT INTO memories (tenant_id, scope_key, source_key, fact, session_id, turn_id)
VALUES (:tenant_id, :scope_key, :source_key, :fact, :session_id, :turn_id)
ON CONFLICT (tenant_id, scope_key, source_key) DO NOTHING
RETURNING *;

-- name: recall_facts
-- At most :limit facts of a scope remembered before :before (the recalling turn
-- admission, so every attempt of the turn recalls the same ones), newest first, on
-- ix_memories_recall.
SELECT * FROM memories
WHERE tenant_id = :tenant_id AND scope_key = :scope_key
  AND created_at < :before
ORDER BY created_at DESC, source_key DESC
LIMIT :limit;
