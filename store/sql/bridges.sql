-- Statements of the chat bridges' participant bindings (docs/bridges.md). Only
-- store/bridges.py runs them (store/sql.py: how blocks are named and loaded).

-- name: create_binding
-- A new binding of one sender (bridge, workspace, channel, user) to the tenant's
-- subject, role and agent. Zero rows: that sender has a live binding in this tenant
-- already (the partial unique index leads with the tenant, migration 0024: another
-- tenant's binding of the same sender neither blocks nor shows).
INSERT INTO bridge_bindings (tenant_id, binding_id, bridge, workspace, channel, user_id,
                             subject, role, agent, reply_url, created_by)
VALUES (:tenant_id, :binding_id, :bridge, :workspace, :channel, :user_id, :subject, :role,
        :agent, :reply_url, :created_by)
ON CONFLICT (tenant_id, bridge, workspace, channel, user_id) WHERE revoked_at IS NULL
DO NOTHING
RETURNING *;

-- name: list_bindings
-- The tenant's bindings, live ones first, newest first.
SELECT * FROM bridge_bindings
WHERE tenant_id = :tenant_id
ORDER BY revoked_at IS NOT NULL, created_at DESC, binding_id;

-- name: revoke_binding
-- Revoke a live binding: its sender's next message admits nothing. Zero rows: no such
-- live binding of this tenant.
UPDATE bridge_bindings SET revoked_at = now()
WHERE tenant_id = :tenant_id AND binding_id = :binding_id AND revoked_at IS NULL
RETURNING *;

-- name: find_binding
-- An inbound message's sender, in the tenant its workspace is assigned to (an
-- operator's setting, runtime/bridges tenant_of): its live binding in that channel,
-- else its live binding for every channel of the workspace (:any_channel, '*'), by
-- ux_bridge_bindings_sender. Another tenant's binding of the same sender is never
-- found, whatever its channel.
SELECT * FROM bridge_bindings
WHERE tenant_id = :tenant_id AND bridge = :bridge AND workspace = :workspace
  AND user_id = :user_id AND channel IN (:channel, :any_channel) AND revoked_at IS NULL
ORDER BY channel = :any_channel
LIMIT 1;
