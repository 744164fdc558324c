-- Statements of a fork, in its one transaction. Only store/forks.py runs them
-- (store/sql.py: how blocks are named, loaded and their state sets filled in).

-- name: fork_source
-- A fork's first statement, in its transaction (Store.fork): lock the source
-- session's row FOR SHARE, so every writer of the source (each takes that row first:
-- an admission, a worker's step or start, a cancellation, an answer, the prune's
-- move of earliest_seq) waits until the fork commits, and the statements after this
-- one see the source as it stands now; beside it, the fork's own row if it exists
-- already (a replay, or another session of that id). No row: no such source. A source
-- deleted or past its TTL (src_gone), or a fork id that names a deleted session
-- (dst_gone: no fork re-creates one), is refused (docs/erasure.md).
SELECT src.agent_name, src.fence, src.head_seq, src.earliest_seq,
       src.deleted_at IS NOT NULL OR src.expires_at <= now() AS src_gone,
       EXISTS (SELECT 1 FROM session_tombstones
               WHERE tenant_id = :tenant_id AND session_id = :session_id) AS dst_gone,
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
-- id); the caller reads it. The fork keeps the source's metadata (and its rows), and
-- its TTL: it expires at now + the source's own TTL, else the tenant's :default_ttl
-- (none: never), as a session an admission creates (docs/erasure.md).
WITH f AS (
    INSERT INTO sessions (tenant_id, session_id, agent_name, fence, head_seq, earliest_seq,
                          forked_from_session, forked_from_seq, project_id, metadata,
                          expires_after, expires_at)
    SELECT tenant_id, :session_id, agent_name, fence, :at_seq, earliest_seq, session_id,
           :at_seq, project_id, metadata, expires_after,
           now() + coalesce(expires_after, CAST(:default_ttl AS float8)) * interval '1s'
    FROM sessions
    WHERE tenant_id = :tenant_id AND session_id = :source_id
      AND NOT EXISTS (SELECT 1 FROM session_tombstones
                      WHERE tenant_id = :tenant_id AND session_id = :session_id)
    ON CONFLICT (tenant_id, session_id) DO NOTHING
    RETURNING *
), m AS (
    INSERT INTO session_metadata (tenant_id, session_id, key, value, created_at)
    SELECT f.tenant_id, f.session_id, m.key, m.value, f.created_at
    FROM f, jsonb_each_text(f.metadata) m
)
SELECT * FROM f;

-- name: fork_turns
-- Copies of the source's turns admitted at or before :at_seq, in admission order (new
-- ordinals, same ids). A turn settled by :at_seq (terminal, none of its events after
-- it) is copied as it is; one still active at :at_seq is cut: its copy is cancelled
-- with :cut_error (fork_cut) and no answer pending, so nothing ever runs it in the
-- fork. Turn rows outlive the journal prune: those of pruned events are copied too,
-- with their metadata. One row: how many turns were copied, and the ids of the cut
-- ones (NULL: none).
WITH ins AS (
    INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                       input_hash, input, output_schema, budget, attempt, revision,
                       cancel_requested, pending_input, result, error, accepted_seq,
                       submitted_by, created_at, updated_at, agent_version, on_deploy,
                       metadata, project_id)
    SELECT t.tenant_id, :session_id, t.turn_id,
           CASE WHEN c.cut THEN 'cancelled' ELSE t.state END,
           t.agent_name, t.agent_hash, t.input_hash, t.input, t.output_schema, t.budget,
           t.attempt, t.revision, t.cancel_requested OR c.cut,
           CASE WHEN c.cut THEN NULL ELSE t.pending_input END,
           CASE WHEN c.cut THEN NULL ELSE t.result END,
           CASE WHEN c.cut THEN CAST(:cut_error AS jsonb) ELSE t.error END,
           t.accepted_seq, t.submitted_by, t.created_at,
           CASE WHEN c.cut THEN now() ELSE t.updated_at END, t.agent_version, t.on_deploy,
           t.metadata, t.project_id
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
    RETURNING turn_id, error IS NOT DISTINCT FROM CAST(:cut_error AS jsonb) AS cut,
              metadata, created_at, ordinal
), m AS (
    -- the copies' metadata rows (their own ordinals: the walk finds them in the fork)
    INSERT INTO turn_metadata (tenant_id, session_id, turn_id, key, value, created_at, ordinal)
    SELECT :tenant_id, :session_id, ins.turn_id, m.key, m.value, ins.created_at, ins.ordinal
    FROM ins, jsonb_each_text(ins.metadata) m
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
