-- Statements of the searches across a tenant's turns and sessions (docs/search.md).
-- Only store/search.py runs them (store/sql.py: how blocks are named, loaded and their
-- state sets filled in).
--
-- Every filter is a parameter that may be NULL (no such filter). They are run
-- unprepared (store/statements.py UNPREPARED), so each is planned with its values:
-- the planner folds the filters left NULL away and walks the index the others name
-- (store/schema_search.py says which, chosen from EXPLAIN). A page is a keyset page,
-- newest first, after the cursor (:before_at and its tie-breaker): no OFFSET, and a
-- row never moves between pages, for created_at never changes. A session deleted or
-- past its TTL (docs/erasure.md) is gone: neither it nor its turns are found.

-- fragment: turn_filters
-- The filters of a turn search, on its turns t (aliases g and p taken): a turn of a
-- session gone is never found; each filter left NULL folds away; a turn of a session
-- in a project only when :subject owns the project.
NOT EXISTS (SELECT 1 FROM sessions g
            WHERE g.tenant_id = t.tenant_id AND g.session_id = t.session_id
              AND (g.deleted_at IS NOT NULL OR g.expires_at <= now()))
AND (CAST(:state AS text) IS NULL OR t.state = :state)
AND (CAST(:states AS text[]) IS NULL OR t.state = ANY(CAST(:states AS text[])))
AND (CAST(:agent AS text) IS NULL OR t.agent_name = :agent)
AND (CAST(:agent_version AS text) IS NULL OR t.agent_version = :agent_version)
AND (CAST(:error AS text) IS NULL OR t.error ->> 'code' = :error)
AND (CAST(:created_since AS timestamptz) IS NULL OR t.created_at >= :created_since)
AND (CAST(:created_until AS timestamptz) IS NULL OR t.created_at < :created_until)
AND (CAST(:updated_since AS timestamptz) IS NULL OR t.updated_at >= :updated_since)
AND (CAST(:updated_until AS timestamptz) IS NULL OR t.updated_at < :updated_until)
AND (CAST(:project AS text) IS NULL OR t.project_id = :project)
AND (t.project_id IS NULL
     OR EXISTS (SELECT 1 FROM projects p
                WHERE p.tenant_id = t.tenant_id AND p.project_id = t.project_id
                  AND p.owner = :subject))

-- fragment: lane_head
-- A session's lane head (h): its oldest active turn, if any.
LEFT JOIN LATERAL (
    SELECT turn_id, state FROM turns
    WHERE tenant_id = s.tenant_id AND session_id = s.session_id AND state IN {active}
    ORDER BY ordinal LIMIT 1
) h ON true

-- fragment: session_filters
-- The filters of a session search, on its sessions s and their lane heads h
-- (lane_head; alias p taken): a session gone is never found; each filter left NULL
-- folds away (a session's state is its head's, or :idle with none); a session in a
-- project only when :subject owns the project.
s.deleted_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > now())
AND (CAST(:state AS text) IS NULL OR coalesce(h.state, :idle) = :state)
AND (CAST(:states AS text[]) IS NULL
     OR coalesce(h.state, :idle) = ANY(CAST(:states AS text[])))
AND (CAST(:agent AS text) IS NULL OR s.agent_name = :agent)
AND (CAST(:created_since AS timestamptz) IS NULL OR s.created_at >= :created_since)
AND (CAST(:created_until AS timestamptz) IS NULL OR s.created_at < :created_until)
AND (CAST(:updated_since AS timestamptz) IS NULL OR s.updated_at >= :updated_since)
AND (CAST(:updated_until AS timestamptz) IS NULL OR s.updated_at < :updated_until)
AND (CAST(:project AS text) IS NULL OR s.project_id = :project)
AND (s.project_id IS NULL
     OR EXISTS (SELECT 1 FROM projects p
                WHERE p.tenant_id = s.tenant_id AND p.project_id = s.project_id
                  AND p.owner = :subject))

-- name: search_turns
-- The tenant's turns the filters match, newest first, across its sessions; a turn of
-- a session in a project only when :subject owns the project. One state is an
-- equality (:state), so ix_turns_state walks it in order; several are an array.
SELECT t.*
FROM turns t
WHERE t.tenant_id = :tenant_id
  AND {fragment:turn_filters}
  AND (CAST(:before_at AS timestamptz) IS NULL
       OR (t.created_at, t.ordinal) < (CAST(:before_at AS timestamptz), :before_ordinal))
ORDER BY t.created_at DESC, t.ordinal DESC
LIMIT :limit;

-- name: search_turns_by_metadata
-- search_turns with metadata, in batches: c is the next :batch turns (newest first,
-- after the cursor) holding one pair (:key, :value), an ordered walk of
-- turn_metadata's index that reads no turn; only those turns are read, held to every
-- pair (containment, :metadata) and the other filters, at most :limit of them. The
-- one row without a turn says how many c held and where it ended (edge_at,
-- edge_ordinal): store/search.py walks on from there while a page is not full. No
-- operator on jsonb is leakproof, so under row security no index on the jsonb column
-- could serve (store/schema_search.py).
WITH c AS MATERIALIZED (
    SELECT session_id, turn_id, created_at, ordinal FROM turn_metadata
    WHERE tenant_id = :tenant_id AND key = :key AND value = :value
      AND (CAST(:created_since AS timestamptz) IS NULL OR created_at >= :created_since)
      AND (CAST(:created_until AS timestamptz) IS NULL OR created_at < :created_until)
      AND (CAST(:before_at AS timestamptz) IS NULL
           OR (created_at, ordinal) < (CAST(:before_at AS timestamptz), :before_ordinal))
    ORDER BY created_at DESC, ordinal DESC
    LIMIT :batch
)
SELECT n.scanned, e.edge_at, e.edge_ordinal, f.*
FROM (SELECT count(*) AS scanned FROM c) n
LEFT JOIN LATERAL (
    SELECT created_at AS edge_at, ordinal AS edge_ordinal FROM c
    ORDER BY created_at, ordinal LIMIT 1
) e ON true
LEFT JOIN LATERAL (
    SELECT t.*
    FROM c JOIN turns t ON t.tenant_id = :tenant_id AND t.session_id = c.session_id
                       AND t.turn_id = c.turn_id
    WHERE (CAST(:metadata AS jsonb) IS NULL OR t.metadata @> CAST(:metadata AS jsonb))
      AND {fragment:turn_filters}
    ORDER BY c.created_at DESC, c.ordinal DESC
    LIMIT :limit
) f ON true;

-- name: search_sessions
-- The tenant's sessions the filters match, newest first (ix_sessions_created), each
-- with its lane head (the oldest active turn): a session's state is its head's, or
-- :idle with none. A session in a project only when :subject owns the project.
SELECT s.*, h.turn_id AS active_turn, h.state AS active_state
FROM sessions s
{fragment:lane_head}
WHERE s.tenant_id = :tenant_id
  AND {fragment:session_filters}
  AND (CAST(:before_at AS timestamptz) IS NULL
       OR (s.created_at, s.session_id) < (CAST(:before_at AS timestamptz), :before_id))
ORDER BY s.created_at DESC, s.session_id DESC
LIMIT :limit;

-- name: search_sessions_by_metadata
-- search_sessions with metadata, in batches on session_metadata's index, as
-- search_turns_by_metadata walks turn_metadata's (edge_at, edge_id: where c ended).
WITH c AS MATERIALIZED (
    SELECT session_id, created_at FROM session_metadata
    WHERE tenant_id = :tenant_id AND key = :key AND value = :value
      AND (CAST(:created_since AS timestamptz) IS NULL OR created_at >= :created_since)
      AND (CAST(:created_until AS timestamptz) IS NULL OR created_at < :created_until)
      AND (CAST(:before_at AS timestamptz) IS NULL
           OR (created_at, session_id) < (CAST(:before_at AS timestamptz), :before_id))
    ORDER BY created_at DESC, session_id DESC
    LIMIT :batch
)
SELECT n.scanned, e.edge_at, e.edge_id, f.*
FROM (SELECT count(*) AS scanned FROM c) n
LEFT JOIN LATERAL (
    SELECT created_at AS edge_at, session_id AS edge_id FROM c
    ORDER BY created_at, session_id LIMIT 1
) e ON true
LEFT JOIN LATERAL (
    SELECT s.*, h.turn_id AS active_turn, h.state AS active_state
    FROM c JOIN sessions s ON s.tenant_id = :tenant_id AND s.session_id = c.session_id
    {fragment:lane_head}
    WHERE (CAST(:metadata AS jsonb) IS NULL OR s.metadata @> CAST(:metadata AS jsonb))
      AND {fragment:session_filters}
    ORDER BY c.created_at DESC, c.session_id DESC
    LIMIT :limit
) f ON true;
