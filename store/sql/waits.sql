-- Statements of a wait on several requests at once (runtime/input_groups.py): the
-- approvals of one model answer, asked together. Only store/waits.py runs them
-- (store/sql.py: how blocks are named, loaded and their state sets filled in).

-- name: resolve_grouped
-- Answer one or more requests of a parked turn's group, by compare-and-swap on the
-- turn's revision: the caller computed the new pending_input from the one it read
-- (runtime/input_groups.py answer); the turn stays parked (a worker moves it on once
-- the group's top level is resolved). One input.resolved per answer, in the order
-- given, at contiguous seqs. The session row is locked first, in the order every
-- other writer takes its locks. Zero rows: the turn moved meanwhile (another answer,
-- a cancellation); the caller reads it again.
WITH cur AS (
    SELECT head_seq FROM sessions
    WHERE tenant_id = :tenant_id AND session_id = :session_id
    FOR UPDATE
), t AS (
    UPDATE turns
    SET pending_input = CAST(:pending_input AS jsonb), revision = revision + 1,
        updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
      AND EXISTS (SELECT 1 FROM cur) AND revision = :revision AND state IN {parked}
    RETURNING turn_id
), s AS (
    UPDATE sessions SET head_seq = head_seq + :n, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND EXISTS (SELECT 1 FROM t)
    RETURNING head_seq
)
INSERT INTO events (tenant_id, session_id, seq, turn_id, type, fence, data)
SELECT :tenant_id, :session_id, s.head_seq - :n + r.n, :turn_id, 'input.resolved', 0, r.data
FROM s, ROWS FROM (jsonb_to_recordset(CAST(:resolved AS jsonb)) AS (data jsonb))
     WITH ORDINALITY AS r(data, n)
RETURNING *;
