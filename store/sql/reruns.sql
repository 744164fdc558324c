-- Statements of a rerun from a step (docs/reruns.md), in one transaction. Only
-- store/reruns.py runs them (store/sql.py: how blocks are named, loaded and their
-- state sets filled in).

-- name: admit_rerun
-- A rerun's admission, its transaction's first statement: lock the session's row and
-- take 1 + :n_copies seqs at once (turn.accepted, then the reused outcomes written by
-- rerun_copies), insert the turn queued, append turn.accepted. Should the turn id
-- exist already (a replay, or another request under the key) or the session be
-- another agent's, nothing matches and the final division by zero aborts the whole
-- transaction; the caller reads the stored turn to answer. Quotas bound a new turn
-- as admit_turn's do: at a bound nothing is written and the one row says which. The
-- session's expires_at moves to now + its TTL (its own, else :default_ttl), as
-- admit_turn moves it.
WITH r AS MATERIALIZED (
    SELECT EXISTS (SELECT 1 FROM turns
                   WHERE tenant_id = :tenant_id AND session_id = :session_id
                     AND turn_id = :turn_id) AS replay
), b AS (
    SELECT NOT r.replay AND CAST(:max_session AS bigint) IS NOT NULL
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
               >= CAST(:max_tenant AS bigint) AS tenant_full,
           r.replay
    FROM r
), s AS (
    -- the session's expiry moved as any admission moves it (admit_turn's rule)
    UPDATE sessions SET head_seq = head_seq + 1 + :n_copies, updated_at = now(),
                        expires_at = now() + coalesce(expires_after,
                                                      CAST(:default_ttl AS float8))
                                             * interval '1s'
    WHERE tenant_id = :tenant_id AND session_id = :session_id
      AND agent_name = :agent_name
      -- not a session deleted or past its TTL (docs/erasure.md): refused as gone
      AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())
      AND NOT (SELECT replay OR session_full OR tenant_full FROM b)
    RETURNING head_seq - :n_copies AS accepted_seq, project_id
), t AS (
    -- with its source's metadata (:metadata) and its session's project
    INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                       input_hash, input, output_schema, budget, accepted_seq, submitted_by,
                       agent_version, on_deploy, metadata, project_id)
    SELECT :tenant_id, :session_id, :turn_id, 'queued', :agent_name, :agent_hash,
           :input_hash, CAST(:input AS jsonb), CAST(:output_schema AS jsonb),
           CAST(:budget AS jsonb), s.accepted_seq, :submitted_by, :agent_version, :on_deploy,
           coalesce(CAST(:metadata AS jsonb), jsonb_build_object()), s.project_id
    FROM s
    ON CONFLICT (tenant_id, session_id, turn_id) DO NOTHING
    RETURNING *
), tm AS (
    INSERT INTO turn_metadata (tenant_id, session_id, turn_id, key, value, created_at, ordinal)
    SELECT t.tenant_id, t.session_id, t.turn_id, m.key, m.value, t.created_at, t.ordinal
    FROM t, jsonb_each_text(t.metadata) m
), e AS (
    INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
    SELECT :tenant_id, :session_id, t.accepted_seq, :turn_id, 'turn.accepted', NULL, 0,
           jsonb_build_object('input', t.input, 'agent', t.agent_name, 'by', t.submitted_by)
    FROM t
    RETURNING data AS event_data, created_at AS event_created_at
)
SELECT t.*, e.event_data, e.event_created_at, b.session_full, b.tenant_full
FROM b LEFT JOIN t ON true LEFT JOIN e ON true
WHERE 1 / (t.turn_id IS NOT NULL OR b.session_full OR b.tenant_full)::int = 1;

-- name: rerun_copies
-- The rerun's first events, right after admit_rerun in its transaction: the reused
-- outcomes (and the edited one) at the seqs after its turn.accepted, in step order.
-- Written with fence 0, as the API's events are: no worker wrote them.
INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
SELECT :tenant_id, :session_id, :accepted_seq + c.n, :turn_id, c.type, c.step, 0, c.data
FROM ROWS FROM (jsonb_to_recordset(CAST(:copies AS jsonb))
                AS (type text, step integer, data jsonb)) WITH ORDINALITY AS c(type, step, data, n)
RETURNING *;
