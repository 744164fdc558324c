-- Statements of durable memory: facts remembered and recalled. Only store/memory.py
-- runs them (store/sql.py: how blocks are named, loaded and their state sets filled
-- in).

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
