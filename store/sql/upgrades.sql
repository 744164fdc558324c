-- Statements of deploys: an operator's upgrade of turns to their agent's newest
-- version, and the active turns by definition (docs/deploy.md). Only
-- store/upgrades.py runs them (store/sql.py: how blocks are named, loaded and their
-- state sets filled in).

-- name: request_upgrade
-- An operator's upgrade of one active turn: the worker that next starts it moves it to
-- the newest version of its agent first (runtime/deploys.py), whatever its policy.
-- Not fenced, nor a transition: a flag the worker reads at the start and clears with
-- the move's own statement (fenced_append's agent_hash). Zero rows: no such active turn.
UPDATE turns SET upgrade_requested = true, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
  AND state IN {active}
RETURNING session_id, turn_id, state;

-- name: request_upgrades
-- The same for every active turn of a tenant on one definition of an agent (on the
-- active turns' partial index). Rows: the turns flagged now.
UPDATE turns SET upgrade_requested = true, updated_at = now()
WHERE tenant_id = :tenant_id AND agent_name = :agent_name AND agent_hash = :agent_hash
  AND state IN {active} AND NOT upgrade_requested
RETURNING session_id, turn_id, state;

-- name: turns_by_definition
-- A tenant's active turns of one agent, by definition hash and state: what an
-- operator watches drain before the last worker of an old build stops.
SELECT agent_hash, state, count(*) AS n FROM turns
WHERE tenant_id = :tenant_id AND agent_name = :agent_name AND state IN {active}
GROUP BY agent_hash, state
ORDER BY agent_hash, state;
