-- Statements of the transitions: admission (and the lane statements of multitask
-- reject and interrupt, and a workflow node's webhook written with its turn), the
-- fence claim, a turn's start, a step's commit, cancellation and answers. Only
-- store/turns.py runs them (store/sql.py: how blocks are named, loaded and their
-- state sets filled in).

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
-- quota: the turn id is looked up first, and it aborts as above. Metadata (docs/
-- search.md): the turn's is stored with it and as turn_metadata rows; a session's is
-- set by its first turn (with session_metadata rows), and a later turn that names
-- :session_metadata must name the same (else it aborts as for another agent). The counts see this
-- statement's snapshot, in autocommit taken before it waits for the session row:
-- admissions racing each other may overshoot a bound by as many as race (a session's
-- by its concurrent admissions, a tenant's by its admissions in flight); none is lost.
-- A session that is gone (docs/erasure.md: deleted, its tombstone kept after its row,
-- or past its TTL) admits nothing, a replay neither: the one row has gone set and no
-- turn. One deleted while this statement waited for its row is refused by the
-- upsert's guard (deleted_at, read on the row as it is now). Each admission moves the
-- session's expires_at to now + its TTL (:expires_after, else the session's, else the
-- tenant's :default_ttl; none: never).
WITH r AS MATERIALIZED (
    -- one probe of the primary key, first: a replay is never busy nor over a quota
    SELECT EXISTS (SELECT 1 FROM turns
                   WHERE tenant_id = :tenant_id AND session_id = :session_id
                     AND turn_id = :turn_id) AS replay,
           EXISTS (SELECT 1 FROM session_tombstones
                   WHERE tenant_id = :tenant_id AND session_id = :session_id)
           OR EXISTS (SELECT 1 FROM sessions
                      WHERE tenant_id = :tenant_id AND session_id = :session_id
                        AND (deleted_at IS NOT NULL OR expires_at <= now())) AS gone
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
                    LIMIT :max_session) n)
               >= CAST(:max_session AS bigint) AS session_full,
           NOT r.replay AND CAST(:max_tenant AS bigint) IS NOT NULL
           AND (SELECT count(*) FROM (
                    SELECT 1 FROM turns
                    WHERE tenant_id = :tenant_id AND state IN {active}
                    LIMIT :max_tenant) n)
               >= CAST(:max_tenant AS bigint) AS tenant_full,
           r.gone
    FROM r
), s AS (
    INSERT INTO sessions AS cur (tenant_id, session_id, agent_name, head_seq, project_id,
                                 expires_after, expires_at, metadata)
    SELECT :tenant_id, :session_id, :agent_name, 1, CAST(:project_id AS text),
           CAST(:expires_after AS int),
           now() + coalesce(CAST(:expires_after AS int), CAST(:default_ttl AS float8))
                   * interval '1s',
           coalesce(CAST(:session_metadata AS jsonb), '{}')
    FROM b
    -- (busy: only ever in a transaction the caller rolls back; it answers busy first)
    WHERE NOT b.gone AND (b.busy OR NOT (b.session_full OR b.tenant_full))
    ON CONFLICT (tenant_id, session_id) DO UPDATE
        SET head_seq = cur.head_seq + 1, updated_at = now(),
            expires_after = coalesce(EXCLUDED.expires_after, cur.expires_after),
            expires_at = now() + coalesce(EXCLUDED.expires_after, cur.expires_after,
                                          CAST(:default_ttl AS float8)) * interval '1s'
        WHERE cur.agent_name = EXCLUDED.agent_name
          AND cur.project_id IS NOT DISTINCT FROM EXCLUDED.project_id
          AND cur.deleted_at IS NULL AND coalesce(cur.expires_at > now(), true)
          AND (CAST(:session_metadata AS jsonb) IS NULL OR cur.metadata = EXCLUDED.metadata)
    RETURNING head_seq, created_at, metadata
), t AS (
    INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                       input_hash, input, output_schema, budget, accepted_seq, submitted_by,
                       agent_version, on_deploy, metadata, project_id)
    SELECT :tenant_id, :session_id, :turn_id, 'queued', :agent_name, :agent_hash,
           :input_hash, CAST(:input AS jsonb), CAST(:output_schema AS jsonb),
           CAST(:budget AS jsonb), s.head_seq, :submitted_by, :agent_version, :on_deploy,
           coalesce(CAST(:metadata AS jsonb), '{}'), CAST(:project_id AS text)
    FROM s, b
    WHERE NOT b.busy
    ON CONFLICT (tenant_id, session_id, turn_id) DO NOTHING
    RETURNING *
), tm AS (
    INSERT INTO turn_metadata (tenant_id, session_id, turn_id, key, value, created_at, ordinal)
    SELECT t.tenant_id, t.session_id, t.turn_id, m.key, m.value, t.created_at, t.ordinal
    FROM t, jsonb_each_text(t.metadata) m
), sm AS (
    -- the session's first turn (head_seq 1, also after lock_session made it at 0)
    INSERT INTO session_metadata (tenant_id, session_id, key, value, created_at)
    SELECT t.tenant_id, t.session_id, m.key, m.value, s.created_at
    FROM s, t, jsonb_each_text(s.metadata) m
    WHERE s.head_seq = 1
), e AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
    SELECT t.tenant_id, t.session_id, t.accepted_seq, t.turn_id, 'turn.accepted', NULL, 0,
           jsonb_build_object('input', t.input, 'agent', t.agent_name, 'by', t.submitted_by)
    FROM t
    RETURNING data AS event_data, created_at AS event_created_at
)
SELECT t.*, e.event_data, e.event_created_at, x.busy, b.session_full, b.tenant_full, b.gone
FROM b LEFT JOIN s ON true LEFT JOIN t ON true LEFT JOIN e ON true
     -- busy only in a session of this agent: another agent's is refused as such
     CROSS JOIN LATERAL (SELECT b.busy AND s.head_seq IS NOT NULL AS busy) x
WHERE 1 / (t.turn_id IS NOT NULL OR x.busy OR b.session_full OR b.tenant_full
           OR b.gone)::int = 1;

-- name: lock_session
-- The first statement of an admission that looks at the lane (multitask reject or
-- interrupt, one transaction): lock the session row, so every other admission and
-- every worker statement of the session waits for this transaction, and the next
-- statements' snapshots hold every turn committed before it. A new session is created
-- here (head_seq 0, gone again on rollback): a SELECT ... FOR UPDATE would lock
-- nothing, and two first admissions would both find the lane idle. A row that exists
-- is locked and left unchanged (ON CONFLICT locks it even when its WHERE is false),
-- also when it is bound to another agent or project: admit_turn refuses that.
INSERT INTO sessions AS cur (tenant_id, session_id, agent_name, head_seq, project_id,
                             metadata)
VALUES (:tenant_id, :session_id, :agent_name, 0, CAST(:project_id AS text),
        coalesce(CAST(:session_metadata AS jsonb), jsonb_build_object()))
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

-- name: insert_webhook
-- A workflow node's webhook (or a turn's callback, or a chat bridge's reply: its
-- connector and target), in the transaction that admits its turn (right after
-- admit_turn): the outbox row the turn's settlement is delivered from, whichever
-- statement settles it (fenced_append, request_cancel, interrupt_lane).
INSERT INTO webhooks (tenant_id, session_id, turn_id, run_id, node_id, url, secret_id,
                      delivery_id, connector, target)
VALUES (:tenant_id, :session_id, :turn_id, :run_id, :node_id, :url, :secret_id,
        :delivery_id, :connector, CAST(:target AS jsonb))
RETURNING delivery_id;

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
-- session of ten thousand events as in a fresh one. A delegated child's start carries
-- none: its own task is its whole conversation, whichever lane its siblings share.
-- A worker that kept the window of an earlier start (store/context_cache.py) names it
-- (:since_epoch, :since_floor, :since_base; NULL: none) and, while it still holds
-- (warm), is sent only the rows from :since_floor on: docs/context.md.
WITH cur AS (
    SELECT fence, context_epoch FROM sessions
    WHERE tenant_id = :tenant_id AND session_id = :session_id
), h AS (
    SELECT * FROM turns
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND state IN {active}
    ORDER BY ordinal LIMIT 1
), go AS (
    -- cut: the context is the earlier events before it. A delegated child's
    -- conversation is its own task alone: no sibling's task or answer from an earlier
    -- turn of its lane (runtime/delegation.py); a rerun's is the one its source saw,
    -- the session's events before the source was admitted (runtime/reruns.py; its own
    -- compactions are among its own events, which follow)
    SELECT h.turn_id, h.revision, CASE WHEN h.state IN {parked} THEN 0 ELSE 1 END AS inc,
           CASE WHEN h.input ? 'delegation' THEN 0
                ELSE coalesce((h.input #>> '{rerun,before_seq}')::int8, 1e18::int8) END AS cut
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
      AND EXISTS (SELECT 1 FROM t) AND seq < (SELECT cut FROM go)
    ORDER BY seq DESC LIMIT 1
), warm AS (
    -- the caller's window still holds: no prune or erasure since (the epoch they move),
    -- the same base, and a head that reads the whole conversation, accepted no earlier
    -- than the turn the window was read for (:since_floor, its turn.accepted's seq).
    -- Every row before that seq was committed before that turn's admission, and no
    -- row is ever rewritten but by those two, so the caller's rows before it are the
    -- ones this statement would read
    SELECT 1 FROM cur, go, h
    WHERE cur.context_epoch = CAST(:since_epoch AS bigint) AND go.cut = 1e18::int8
      AND h.accepted_seq >= CAST(:since_floor AS bigint)
      AND (SELECT seq FROM base) IS NOT DISTINCT FROM CAST(:since_base AS bigint)
), win AS (
    -- earlier turns' conversation after the base, newest first, at most :window_rows
    -- rows (a backward walk of the primary key); later turns' inputs are not theirs.
    -- Warm: only the rows from :since_floor on (the walk stops there)
    SELECT ev.*, sum(pg_column_size(ev.data)) OVER (ORDER BY ev.seq DESC) AS upto
    FROM events ev
    WHERE ev.tenant_id = :tenant_id AND ev.session_id = :session_id AND EXISTS (SELECT 1 FROM t)
      AND ev.seq < (SELECT cut FROM go)
      AND ev.seq > GREATEST(coalesce((SELECT coalesce(to_seq, seq - 1) FROM base), 0),
                            CASE WHEN EXISTS (SELECT 1 FROM warm)
                                 THEN CAST(:since_floor AS bigint) - 1 ELSE 0 END)
      AND ev.turn_id <> (SELECT turn_id FROM go)
      AND ev.type IN ('turn.accepted', 'model.completed', 'tool.completed', 'tool.interrupted')
      AND NOT (ev.type = 'turn.accepted' AND ev.seq > (SELECT accepted_seq FROM h))
    ORDER BY ev.seq DESC LIMIT :window_rows
), ctx AS (
    -- each row a positional JSON array (seq, turn_id, type, step, fence, data,
    -- created_at, its turn's ordinal, its stored bytes), json not jsonb: the window is
    -- sent, not kept, and building a jsonb value of 2,000 rows cost more than reading
    -- them (store/rows.py event_from_row); the last two let a worker's cache extend it
    SELECT coalesce(json_agg(json_build_array(x.seq, x.turn_id, x.type, x.step, x.fence,
                                              x.data, x.created_at, x.ordinal,
                                              pg_column_size(x.data))
                             ORDER BY x.ordinal, x.seq), '[]') AS events
    FROM (
        -- each row's turn ordinal by one hash join over the session's turns, not a
        -- lookup per row (left: a row whose turn is not there sorts last, as before)
        SELECT w.seq, w.turn_id, w.type, w.step, w.fence, w.data, w.created_at, tt.ordinal
        FROM win w
        LEFT JOIN turns tt ON tt.tenant_id = :tenant_id AND tt.session_id = :session_id
                     AND tt.turn_id = w.turn_id
        WHERE w.upto <= :window_bytes
        UNION ALL
        -- the base itself, when an earlier turn wrote it (this turn's events follow;
        -- warm: only from :since_floor on, as every row: one before it the caller has)
        SELECT ev.seq, ev.turn_id, ev.type, ev.step, ev.fence, ev.data, ev.created_at, -1
        FROM events ev
        WHERE ev.tenant_id = :tenant_id AND ev.session_id = :session_id
          AND ev.seq = (SELECT seq FROM base) AND ev.turn_id <> (SELECT turn_id FROM go)
          AND (NOT EXISTS (SELECT 1 FROM warm) OR ev.seq >= CAST(:since_floor AS bigint))
        UNION ALL
        -- every event of this turn: the runner resumes from them
        SELECT ev.seq, ev.turn_id, ev.type, ev.step, ev.fence, ev.data, ev.created_at,
               (SELECT ordinal FROM t)
        FROM events ev
        WHERE ev.tenant_id = :tenant_id AND ev.session_id = :session_id
          AND ev.turn_id = (SELECT turn_id FROM go) AND EXISTS (SELECT 1 FROM t)
    ) x
)
SELECT cur.fence AS stored_fence, EXISTS (SELECT 1 FROM s) AS claimed, h.*,
       t.revision AS started_revision, t.attempt AS started_attempt,
       t.cancel_requested AS started_cancel_requested,
       e.seq AS started_seq, e.data AS started_data, e.created_at AS started_at,
       ctx.events AS context, cur.context_epoch, EXISTS (SELECT 1 FROM warm) AS warm,
       (SELECT seq FROM base) AS base_seq, (SELECT cut FROM go) = 1e18::int8 AS whole,
       -- warm: the rows from :since_floor on fill the window alone (none before counts)
       (SELECT count(*) FROM win) >= :window_rows
           OR EXISTS (SELECT 1 FROM win WHERE upto > :window_bytes) AS window_full
FROM cur LEFT JOIN h ON true LEFT JOIN t ON true LEFT JOIN e ON true CROSS JOIN ctx
WHERE 1 / (NOT (EXISTS (SELECT 1 FROM go) AND EXISTS (SELECT 1 FROM s)
                AND e.seq IS NULL))::int = 1;

-- name: fenced_append
-- One step, one statement, in autocommit: check the fence and the turn's revision and
-- take the next seq(s) on the session row, move the turn by compare-and-swap on its
-- revision (only along a declared transition), append the step's event and, when
-- the step settles the turn, its terminal event after it (:n_events = 2). A settling
-- step also says whether the lane's next turn can run, so the worker re-reads
-- nothing, and whether the turn has a webhook to deliver (webhook); a model step's
-- provider state (:provider_state) goes to its own table, keyed by the step's seq.
-- Zero rows: the fence moved on (nothing was written). Should the session
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
                     -- turn.definition_changed: the definition the turn runs on from here
                     agent_hash = COALESCE(CAST(:agent_hash AS text), agent_hash),
                     agent_version = COALESCE(CAST(:agent_version AS text), agent_version),
                     upgrade_requested = upgrade_requested AND CAST(:agent_hash AS text) IS NULL,
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
), ps AS (
    -- a model call's opaque provider state (reasoning): beside its event (the step's,
    -- not the terminal one after it), never in it
    INSERT INTO provider_state (tenant_id, session_id, seq, provider, data)
    SELECT :tenant_id, :session_id, e.seq, :provider, CAST(:provider_state AS jsonb) FROM e
    WHERE e.step IS NOT NULL AND CAST(:provider_state AS jsonb) IS NOT NULL
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
-- alone). A request of a group (asked with others) is store/waits.py's. Zero rows:
-- no such open request, already answered, expired, or one of a group. The
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
      AND NOT (pending_input ? 'resolved') AND NOT (pending_input ? 'group')
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
