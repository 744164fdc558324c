-- Statements of journal retention: the prune's work list and the prune. Only
-- store/retention.py runs them (store/sql.py: how blocks are named, loaded and their
-- state sets filled in).

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
    -- a new context epoch: a worker's cached window may hold rows deleted here
    UPDATE sessions SET earliest_seq = GREATEST(sessions.earliest_seq, cut.hi),
                        context_epoch = nextval('session_context_epochs')
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
