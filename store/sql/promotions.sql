-- Statements of the promotions' journal (api/service/promotions.py,
-- runtime/evaluation/gate.py). Only store/promotions.py runs them.

-- name: record_promotion
-- Append one promotion, accepted or refused, numbered after the agent's newest, by
-- compare-and-swap on the version the caller found promoted last (:promoted_before,
-- NULL: none): no row when another promotion was accepted meanwhile, or took the
-- number (the caller's checks read a default that is no longer the default).
INSERT INTO agent_promotions (tenant_id, agent_name, seq, version, definition_hash, accepted,
                              default_before, subject, policy, checks, experiments)
SELECT :tenant_id, :agent_name, coalesce(max(p.seq), 0) + 1, :version, :definition_hash,
       :accepted, :default_before, :subject, CAST(:policy AS jsonb), CAST(:checks AS jsonb),
       CAST(:experiments AS jsonb)
FROM agent_promotions p
WHERE p.tenant_id = :tenant_id AND p.agent_name = :agent_name
HAVING (SELECT q.version FROM agent_promotions q
        WHERE q.tenant_id = :tenant_id AND q.agent_name = :agent_name AND q.accepted
        ORDER BY q.seq DESC LIMIT 1) IS NOT DISTINCT FROM CAST(:promoted_before AS text)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: list_promotions
-- An agent's journal, newest first.
SELECT * FROM agent_promotions WHERE tenant_id = :tenant_id AND agent_name = :agent_name
ORDER BY seq DESC LIMIT :limit;

-- name: promoted_versions
-- The versions of an agent's accepted promotions, newest first (the default rule:
-- runtime/evaluation/gate.py default_version).
SELECT version FROM agent_promotions
WHERE tenant_id = :tenant_id AND agent_name = :agent_name AND accepted
ORDER BY seq DESC LIMIT :limit;

-- name: promoted_versions_of
-- The same for several agents at once, each newest first (at most :limit each): what
-- every gated agent's default is for the tenant, in one read, for a listing of agents
-- (GET /v1/agents, MCP's tools/list, A2A's extended card).
SELECT a.agent_name, p.version
FROM unnest(CAST(:agent_names AS text[])) AS a(agent_name)
CROSS JOIN LATERAL (
    SELECT q.version, q.seq FROM agent_promotions q
    WHERE q.tenant_id = :tenant_id AND q.agent_name = a.agent_name AND q.accepted
    ORDER BY q.seq DESC LIMIT :limit) p
ORDER BY a.agent_name, p.seq DESC;
