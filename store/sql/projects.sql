-- Statements of projects and their owners. Only store/projects.py runs them
-- (store/sql.py: how blocks are named, loaded and their state sets filled in).

-- name: session_access
-- The API's check on every route that reaches a session (api/service/access.py
-- visible), in one read: the session's project and that project's owner, and when
-- the session went (docs/erasure.md: its tombstone, which outlives its row, or its
-- TTL's expiry) with when its erasure finished. No row: no such session, nor was one.
SELECT coalesce(s.project_id, tb.project_id) AS project_id, p.owner,
       coalesce(tb.deleted_at, s.deleted_at,
                CASE WHEN s.expires_at <= now() THEN s.expires_at END) AS gone_at,
       tb.erased_at
FROM (SELECT 1) k
LEFT JOIN sessions s ON s.tenant_id = :tenant_id AND s.session_id = :session_id
LEFT JOIN session_tombstones tb ON tb.tenant_id = :tenant_id AND tb.session_id = :session_id
LEFT JOIN projects p
       ON p.tenant_id = :tenant_id AND p.project_id = coalesce(s.project_id, tb.project_id)
WHERE s.session_id IS NOT NULL OR tb.session_id IS NOT NULL;

-- name: create_project
-- A new project owned by :owner. No row: the id is taken (a replay, another request's,
-- or another subject's project): the caller reads which with get_project.
INSERT INTO projects (tenant_id, project_id, owner, overrides, request_hash)
VALUES (:tenant_id, :project_id, :owner, CAST(:overrides AS jsonb), :request_hash)
ON CONFLICT (tenant_id, project_id) DO NOTHING
RETURNING *;

-- name: get_project
-- A project of :owner; no row: none, or another subject's (the same answer).
SELECT * FROM projects
WHERE tenant_id = :tenant_id AND project_id = :project_id AND owner = :owner;

-- name: list_projects
-- a keyset page of :owner's projects, newest first (ix_projects_owner)
SELECT * FROM projects
WHERE tenant_id = :tenant_id AND owner = :owner
  AND (CAST(:before_at AS timestamptz) IS NULL
       OR (created_at, project_id) < (CAST(:before_at AS timestamptz), :before_id))
ORDER BY created_at DESC, project_id DESC
LIMIT :limit;

-- name: update_project
-- Replace a project's overrides: turns admitted from now on pin the new ones, turns
-- admitted before keep theirs (in their input). No row: no project of :owner's.
UPDATE projects SET overrides = CAST(:overrides AS jsonb), updated_at = now()
WHERE tenant_id = :tenant_id AND project_id = :project_id AND owner = :owner
RETURNING *;
