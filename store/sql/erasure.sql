-- Statements of erasure (docs/erasure.md): a session's tombstone, the bounded batches
-- that delete what it held, the last statement that deletes its row, and the sweep's
-- two work lists. Only store/erasure.py runs them (store/sql.py: how blocks are named,
-- loaded and their state sets filled in).

-- name: lock_for_erasure
-- The tombstone's first statement, in its transaction: lock the session's row, so
-- every admission and worker statement of the session waits for the tombstone, and
-- the next statement's snapshot holds every turn committed before it. No row: no
-- session row (never one, or erased already).
SELECT session_id FROM sessions
WHERE tenant_id = :tenant_id AND session_id = :session_id
FOR UPDATE;

-- name: tombstone_session
-- The session is gone from this statement's commit on: its row is marked deleted
-- (no admission writes it again: admit_turn's upsert is guarded by deleted_at), its
-- tombstone is written (every read answers 410 from it), and its active turns are
-- cancelled with their revision moved, so a worker running one has its next write
-- refused by the guards fenced_append already has (the turn's revision and state);
-- no event is written: the journal is erased next. Its undelivered webhooks (a
-- workflow node's, a callback, a chat bridge's reply) go now, so none is delivered
-- after it. With :expired_only (the TTL sweep's), only a session past its expires_at,
-- checked under the lock: an admission that came first moved it. No row: no live
-- session, or a tombstone already there.
WITH s AS (
    -- a new context epoch: no worker's cached window of it is sent again
    UPDATE sessions SET deleted_at = now(), context_epoch = nextval('session_context_epochs')
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND deleted_at IS NULL
      AND (NOT :expired_only OR expires_at <= now())
    RETURNING project_id
), w AS (
    DELETE FROM webhooks
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND delivered_at IS NULL
      AND EXISTS (SELECT 1 FROM s)
    RETURNING 1
), tb AS (
    INSERT INTO session_tombstones (tenant_id, session_id, project_id, reason, deleted_by,
                                    tombstone_xid, erased_rows)
    SELECT :tenant_id, :session_id, s.project_id, :reason, CAST(:deleted_by AS text),
           CAST(CAST(pg_current_xact_id() AS text) AS bigint), (SELECT count(*) FROM w)
    FROM s
    ON CONFLICT (tenant_id, session_id) DO NOTHING
    RETURNING *
), t AS (
    UPDATE turns
    SET state = 'cancelled', cancel_requested = true, revision = revision + 1,
        pending_input = NULL, updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id
      AND state IN {active} AND state IN {to:cancelled} AND EXISTS (SELECT 1 FROM tb)
    RETURNING 1
)
SELECT tb.*, (SELECT count(*) FROM t) AS cancelled FROM tb;

-- Each erase_* statement deletes at most :batch rows of one table of a tombstoned
-- session (none of a session without a tombstone, or whose erasure has finished) and
-- adds them to its tombstone's count, moving its updated_at (the sweep's "progress").
-- It locks the tombstone first (lk): two erasers of one session (the DELETE's task and
-- the sweep's) take turns, statement by statement, instead of deadlocking over the
-- same rows. Children before parents (feedback and webhooks before turns; everything
-- before the session row). One row: the rows deleted.
-- The lock and the count are shared (erase_lock, erase_counted); the statements of
-- the tables erased by plain batches are all one shape, erase_batch, made once for
-- each table the registry (store/erasure_registry.py, ``generated``) erases so.

-- fragment: erase_lock
-- the tombstone, locked first (lk); no row: no tombstone, or its erasure has finished
lk AS MATERIALIZED (
    SELECT 1 FROM session_tombstones
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND erased_at IS NULL
    FOR UPDATE
)

-- fragment: erase_counted
-- the rows the statement's d deleted (or scrubbed), added to the tombstone's count;
-- its one row says how many
p AS (
    UPDATE session_tombstones
    SET erased_rows = erased_rows + (SELECT count(*) FROM d), updated_at = now()
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND erased_at IS NULL
    RETURNING 1
)
SELECT count(*) AS deleted FROM d

-- template: erase_batch
-- At most :batch of the session's rows of {table}: those {where} also holds (an
-- extra condition, " AND ...", or nothing), in the order {order} takes them ("ORDER
-- BY ... " or nothing: any).
WITH {fragment:erase_lock}, d AS (
    DELETE FROM {table}
    WHERE tenant_id = :tenant_id AND session_id = :session_id{where}
      AND ctid = ANY(ARRAY(SELECT ctid FROM {table}
                           WHERE tenant_id = :tenant_id AND session_id = :session_id{where}
                           {order}LIMIT :batch))
      AND EXISTS (SELECT 1 FROM lk)
    RETURNING 1
), {fragment:erase_counted};

-- name: scrub_eval_results
-- An experiment's cases outlive the session: a case run in it (session_id), or a case
-- made from one of its turns (eval_cases.source, found before erase_eval_cases runs),
-- keeps its state and figures, and loses what may quote the turn: each assertion's
-- detail (emptied) and the judge's reason. Only rows that still hold either.
WITH {fragment:erase_lock}, src AS (
    SELECT c.dataset, c.version, c.case_id FROM eval_cases c
    WHERE c.tenant_id = :tenant_id AND c.source ->> 'session_id' = :session_id
), d AS (
    UPDATE eval_results r
    SET score = CASE WHEN r.score IS NULL THEN NULL ELSE jsonb_set(
                    r.score, '{assertions}',
                    coalesce((SELECT jsonb_agg(a || CAST('{"detail": ""}' AS jsonb) ORDER BY n)
                              FROM jsonb_array_elements(r.score -> 'assertions')
                                   WITH ORDINALITY AS e(a, n)), CAST('[]' AS jsonb))) END,
        judge = CASE WHEN r.judge IS NULL THEN NULL
                     ELSE r.judge || CAST('{"reason": null}' AS jsonb) END,
        updated_at = now()
    WHERE r.tenant_id = :tenant_id
      AND r.ctid = ANY(ARRAY(
          SELECT x.ctid FROM eval_results x
          WHERE x.tenant_id = :tenant_id
            AND (x.session_id = :session_id OR EXISTS (
                     SELECT 1 FROM eval_experiments e
                     JOIN src ON src.dataset = e.dataset AND src.version = e.dataset_version
                     WHERE e.tenant_id = x.tenant_id AND e.experiment_id = x.experiment_id
                       AND src.case_id = x.case_id))
            AND (jsonb_path_exists(x.score, '$.assertions[*] ? (@.detail != "")')
                 OR x.judge ->> 'reason' IS NOT NULL)
          LIMIT :batch))
      AND EXISTS (SELECT 1 FROM lk)
    RETURNING 1
), {fragment:erase_counted};

-- name: erase_eval_cases
-- Dataset cases made from the session's turns (a copy of a turn's input, files and
-- output, in every version that took the case over from its base): deleted, and their
-- version's case_count lowered with them. No index on source: a tenant's cases are few.
WITH {fragment:erase_lock}, d AS (
    DELETE FROM eval_cases
    WHERE tenant_id = :tenant_id
      AND ctid = ANY(ARRAY(SELECT ctid FROM eval_cases
                           WHERE tenant_id = :tenant_id
                             AND source ->> 'session_id' = :session_id
                           LIMIT :batch))
      AND EXISTS (SELECT 1 FROM lk)
    RETURNING dataset, version
), v AS (
    UPDATE eval_datasets ds SET case_count = ds.case_count - n.k
    FROM (SELECT dataset, version, count(*) AS k FROM d GROUP BY dataset, version) n
    WHERE ds.tenant_id = :tenant_id AND ds.name = n.dataset AND ds.version = n.version
    RETURNING 1
), {fragment:erase_counted};

-- name: erase_session_row
-- The erasure's last statement: the session row goes and the tombstone says when. A
-- row the batches missed (a stale worker's tool step recorded after they passed)
-- still references the session: the foreign key refuses the whole statement, and the
-- caller runs the batches again; once the row is gone no such late write can land
-- (each references it). Nor may it go while a snapshot older than the tombstone is
-- open (a backend's xmin at or before the tombstone's transaction, pg_stat_activity):
-- an admission that began before the tombstone committed would insert the session
-- row anew once it is gone; until then it finds the row, deleted, and is refused
-- (admit_turn). Such a statement ends within moments: then drained is false and the
-- caller asks again. One row: the tombstone (erased_at set once done); none: none.
WITH tb AS (
    SELECT * FROM session_tombstones
    WHERE tenant_id = :tenant_id AND session_id = :session_id
), ok AS (
    SELECT tb.erased_at IS NULL AND NOT EXISTS (
               SELECT 1 FROM pg_stat_activity a
               WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
                 AND a.backend_xmin IS NOT NULL
                 AND age(a.backend_xmin)
                     >= age(CAST(CAST(CAST(tb.tombstone_xid AS text) AS xid8) AS xid))
           ) AS drained
    FROM tb
), d AS (
    DELETE FROM sessions
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND deleted_at IS NOT NULL
      AND (SELECT drained FROM ok)
    RETURNING 1
), u AS (
    UPDATE session_tombstones
    SET erased_at = now(), updated_at = now(),
        erased_rows = erased_rows + (SELECT count(*) FROM d)
    WHERE tenant_id = :tenant_id AND session_id = :session_id AND (SELECT drained FROM ok)
    RETURNING *
)
SELECT coalesce(u.erased_rows, tb.erased_rows) AS erased_rows,
       coalesce(u.erased_at, tb.erased_at) AS erased_at, coalesce(u.updated_at, tb.updated_at)
       AS updated_at, tb.tenant_id, tb.session_id, tb.project_id, tb.reason, tb.deleted_by,
       tb.deleted_at, tb.tombstone_xid
FROM tb LEFT JOIN u ON true;

-- name: expired_sessions
-- The sweep's first work list (across tenants, on ix_sessions_expires): sessions past
-- their TTL that no tombstone marks yet, oldest expiry first.
SELECT tenant_id, session_id FROM sessions
WHERE expires_at IS NOT NULL AND deleted_at IS NULL AND expires_at <= now()
ORDER BY expires_at
LIMIT :limit;

-- name: stalled_erasures
-- The sweep's second work list (across tenants, on ix_session_tombstones_erasing):
-- erasures that have not moved for :grace seconds (their eraser died, or its task
-- was lost), oldest first.
SELECT tenant_id, session_id FROM session_tombstones
WHERE erased_at IS NULL AND updated_at < now() - make_interval(secs => :grace)
ORDER BY updated_at
LIMIT :limit;
