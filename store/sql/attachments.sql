-- Statements of attachments: upload, deletion and the sweep. Only
-- store/attachments.py runs them (store/sql.py: how blocks are named, loaded and
-- their state sets filled in).

-- name: insert_attachment
-- An upload's first statement: the attachment's row, :pending and without its
-- content, in a session that exists (and is not gone). No row: no such session, or
-- the id is taken (a retry, or a concurrent upload of the same id): the caller reads
-- which.
INSERT INTO attachments (tenant_id, session_id, attachment_id, state, filename,
                         content_type, size, sha256)
SELECT tenant_id, session_id, :attachment_id, :pending, :filename, :content_type, :size,
       :sha256
FROM sessions
WHERE tenant_id = :tenant_id AND session_id = :session_id
  -- never into a session deleted (its erasure under way) or past its TTL
  AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())
ON CONFLICT (tenant_id, session_id, attachment_id) DO NOTHING
RETURNING tenant_id, session_id, attachment_id, state, filename, content_type, size, sha256,
          created_at, updated_at;

-- name: attachment_content
-- An upload's second statement: the content of a :pending row whose hash it is.
-- Writing it again (a retry) changes nothing. No row: not pending, or another hash.
UPDATE attachments SET data = :data, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
  AND state = :pending AND sha256 = :sha256
RETURNING attachment_id;

-- name: attachment_ready
-- An upload's last statement: :pending with its content -> :ready. No row: not
-- pending (ready already, or on its way out: deleting, or swept).
UPDATE attachments SET state = :ready, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
  AND state = :pending AND data IS NOT NULL
RETURNING tenant_id, session_id, attachment_id, state, filename, content_type, size, sha256,
          created_at, updated_at;

-- name: get_attachment
-- An attachment's metadata, in whatever state; with :with_data, its content too.
SELECT tenant_id, session_id, attachment_id, state, filename, content_type, size, sha256,
       created_at, updated_at, CASE WHEN :with_data THEN data END AS data
FROM attachments
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id;

-- name: attachment_refs
-- The states of the attachments a turn's input names (:ids), in its session: an id
-- with no row here is missing (or another session's, or another tenant's).
SELECT attachment_id, state FROM attachments
WHERE tenant_id = :tenant_id AND session_id = :session_id
  AND attachment_id = ANY(:ids);

-- name: attachment_deleting
-- A deletion's first statement: any state -> :deleting (again for a deletion that
-- was cut short). No row: no such attachment.
UPDATE attachments SET state = :deleting, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
RETURNING attachment_id;

-- name: delete_attachment
-- A deletion's second statement: the :deleting row goes. No row: gone already.
DELETE FROM attachments
WHERE tenant_id = :tenant_id AND session_id = :session_id AND attachment_id = :attachment_id
  AND state = :deleting
RETURNING attachment_id;

-- name: sweep_attachments
-- Across tenants: delete at most :limit rows left :pending or :deleting for more than
-- :grace seconds (an upload or a deletion whose API process died between its
-- statements), oldest first, on ix_attachments_state. SKIP LOCKED: a row a request is
-- finishing right now is left to it. Rows: what was deleted.
WITH stale AS (
    SELECT tenant_id, session_id, attachment_id FROM attachments
    WHERE state IN (:pending, :deleting)
      AND updated_at < now() - make_interval(secs => :grace)
    ORDER BY updated_at
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
DELETE FROM attachments a USING stale
WHERE a.tenant_id = stale.tenant_id AND a.session_id = stale.session_id
  AND a.attachment_id = stale.attachment_id
RETURNING a.tenant_id, a.session_id, a.attachment_id, a.state;
