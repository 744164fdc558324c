-- Statements of schedules (runtime/schedules.py, docs/flow-control.md). Only
-- store/schedules.py runs them (store/sql.py: how blocks are named and loaded).

-- name: lock_live_session
-- A follow-up's first statement, in its transaction: its session is live, and stays
-- so until the insert commits. The share lock waits for a tombstone that holds the
-- row (lock_for_erasure), then sees it deleted; a tombstone after it waits for the
-- insert, and the erasure that follows finds the follow-up (erase_followups). No row:
-- the session was deleted (or erased): nothing is written. KEY SHARE conflicts with
-- the tombstone's FOR UPDATE only, never with a step's update of the row.
SELECT session_id FROM sessions
WHERE tenant_id = :tenant_id AND session_id = :session_id AND deleted_at IS NULL
FOR KEY SHARE;

-- name: create_schedule
-- A new schedule, idempotent by its id: an existing one of that id is left as it is
-- (no row: the caller reads it and compares its spec_hash). created_at is the
-- caller's clock, the one its first tick was computed from: an interval's ticks fall
-- at whole intervals after it.
INSERT INTO schedules (tenant_id, schedule_id, agent_name, cron, every_seconds, timezone,
                       input, session_id, missed, next_at, spec_hash, created_by, created_at,
                       origin)
VALUES (:tenant_id, :schedule_id, :agent_name, :cron, :every_seconds, :timezone,
        CAST(:input AS jsonb), :session_id, :missed, :next_at, :spec_hash, :created_by,
        :created_at, CAST(:origin AS jsonb))
ON CONFLICT (tenant_id, schedule_id) DO NOTHING
RETURNING *;

-- name: get_schedule
SELECT * FROM schedules WHERE tenant_id = :tenant_id AND schedule_id = :schedule_id;

-- name: list_schedules
-- A tenant's schedules, by id, after :after (keyset), at most :limit.
SELECT * FROM schedules
WHERE tenant_id = :tenant_id AND schedule_id > :after
ORDER BY schedule_id LIMIT :limit;

-- name: pause_schedule
-- Pause (:paused) or resume one; a resumed one waits for its next tick after now
-- (:next_at), never for the ticks that passed while it was paused (a one-shot: for its
-- time, should it not have fired). :reason: the refusal's code when a tick paused it
-- (NULL: its owner did; a resume clears it).
UPDATE schedules
SET paused = :paused, updated_at = now(), paused_reason = CAST(:reason AS text),
    next_at = CASE WHEN :paused THEN next_at ELSE CAST(:next_at AS timestamptz) END
WHERE tenant_id = :tenant_id AND schedule_id = :schedule_id
RETURNING *;

-- name: delete_schedule
DELETE FROM schedules WHERE tenant_id = :tenant_id AND schedule_id = :schedule_id
RETURNING schedule_id;

-- name: due_schedules
-- Across tenants (the beat's pass): schedules whose next tick is due, oldest first, at
-- most :limit (on ix_schedules_due).
SELECT * FROM schedules WHERE NOT paused AND next_at <= now()
ORDER BY next_at LIMIT :limit;

-- name: schedule_fired
-- After the tick's turn was admitted (or the tick skipped): move the schedule to its
-- next tick (none: a one-shot is done), counting the :skipped ticks passed over on the
-- way, by compare-and-swap on the tick it waited for, so two passes firing the same
-- tick move it once. Zero rows: another pass moved it, or it was paused.
UPDATE schedules
SET next_at = :next_at, last_tick = CASE WHEN :fired THEN :tick ELSE last_tick END,
    fired = fired + CASE WHEN :fired THEN 1 ELSE 0 END, skipped = skipped + :skipped,
    updated_at = now()
WHERE tenant_id = :tenant_id AND schedule_id = :schedule_id AND next_at = :tick
  AND NOT paused
RETURNING schedule_id;
