-- Statements of a tool call's recorded steps. Only store/tool_steps.py runs them
-- (store/sql.py: how blocks are named, loaded and their state sets filled in).

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
