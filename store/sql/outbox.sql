-- Statements of the webhook outbox of workflow nodes: claims and delivery records
-- (the row itself is written with its turn: insert_webhook, turns.sql). Only
-- store/outbox.py runs them (store/sql.py: how blocks are named, loaded and their
-- state sets filled in).

-- fragment: thread_order
-- The thread's order, on a webhook w of a turn t (aliases e and et taken): a bridge's
-- reply (a target: its thread) leaves after every earlier turn's reply of the thread:
-- the earlier one is delivered, or this one waits.
(w.target IS NULL OR NOT EXISTS (
    SELECT 1 FROM webhooks e
    JOIN turns et
      ON et.tenant_id = e.tenant_id AND et.session_id = e.session_id
     AND et.turn_id = e.turn_id
    WHERE e.tenant_id = w.tenant_id AND e.session_id = w.session_id
      AND e.target IS NOT NULL AND e.delivered_at IS NULL AND et.ordinal < t.ordinal))

-- name: get_webhook
SELECT * FROM webhooks
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id;

-- name: claim_webhook
-- The prompt delivery a worker sends once a turn with a webhook settled: claim that
-- one webhook when its turn is terminal and it is undelivered and due. A claim counts
-- an attempt, takes a new token (:claim) and moves next_attempt_at :lease seconds on:
-- a deliverer that dies mid-attempt leaves it due again once that runs out. A
-- concurrent claim waits for this one and then finds it no longer due. Zero rows:
-- the turn is active, the webhook delivered, claimed, or backing off, or it is a
-- bridge's reply whose thread has an earlier turn's reply undelivered (that one's
-- delivery claims this one next: claim_thread_reply).
UPDATE webhooks w
SET attempts = w.attempts + 1, claim = :claim,
    next_attempt_at = now() + make_interval(secs => :lease), updated_at = now()
FROM turns t
WHERE w.tenant_id = :tenant_id AND w.session_id = :session_id AND w.turn_id = :turn_id
  AND t.tenant_id = w.tenant_id AND t.session_id = w.session_id AND t.turn_id = w.turn_id
  AND t.state NOT IN {active}
  AND w.delivered_at IS NULL AND w.next_attempt_at <= now()
  AND {fragment:thread_order}
RETURNING w.*, t.state, t.result, t.error;

-- name: claim_webhooks
-- One keyset page of the delivery pass (beat): at most :limit undelivered webhooks
-- due now after the cursor (next_attempt_at, tenant, session, turn), walked by
-- ix_webhooks_due; those whose turn is terminal are claimed as claim_webhook claims
-- one (a bridge's reply only once its thread's earlier replies are delivered). SKIP
-- LOCKED: a row another pass is claiming right now is left to it. One row
-- per page entry, in keyset order (the last one is the next page's cursor); the
-- claimed ones carry the webhook and the turn's outcome, the others NULLs.
WITH page AS (
    SELECT tenant_id, session_id, turn_id, next_attempt_at FROM webhooks
    WHERE delivered_at IS NULL AND next_attempt_at <= now()
      AND (next_attempt_at, tenant_id, session_id, turn_id)
          > (:after_ts, :after_tenant, :after_session, :after_turn)
    ORDER BY next_attempt_at, tenant_id, session_id, turn_id
    LIMIT :limit
), due AS (
    SELECT w.tenant_id, w.session_id, w.turn_id
    FROM webhooks w
    JOIN page p
      ON p.tenant_id = w.tenant_id AND p.session_id = w.session_id AND p.turn_id = w.turn_id
    JOIN turns t
      ON t.tenant_id = w.tenant_id AND t.session_id = w.session_id AND t.turn_id = w.turn_id
    WHERE t.state NOT IN {active} AND w.delivered_at IS NULL AND w.next_attempt_at <= now()
      AND {fragment:thread_order}
    FOR UPDATE OF w SKIP LOCKED
), c AS (
    UPDATE webhooks w
    SET attempts = w.attempts + 1, claim = :claim,
        next_attempt_at = now() + make_interval(secs => :lease), updated_at = now()
    FROM due
    WHERE w.tenant_id = due.tenant_id AND w.session_id = due.session_id
      AND w.turn_id = due.turn_id
    RETURNING w.*
)
SELECT p.next_attempt_at AS page_at, p.tenant_id AS page_tenant,
       p.session_id AS page_session, p.turn_id AS page_turn,
       c.*, t.state, t.result, t.error
FROM page p
LEFT JOIN c
  ON c.tenant_id = p.tenant_id AND c.session_id = p.session_id AND c.turn_id = p.turn_id
LEFT JOIN turns t
  ON t.tenant_id = c.tenant_id AND t.session_id = c.session_id AND t.turn_id = c.turn_id
ORDER BY p.next_attempt_at, p.tenant_id, p.session_id, p.turn_id;

-- name: claim_thread_reply
-- A bridge's reply was delivered: claim its thread's next one at once (the earliest
-- turn's undelivered reply, when its turn is terminal and it is due), as claim_webhook
-- claims one, rather than leave it to the next pass. Only the earliest undelivered
-- reply of a thread passes the guard, so this claims one row at most. Zero rows:
-- none undelivered, the next turn still active, or the reply backing off or claimed.
UPDATE webhooks w
SET attempts = w.attempts + 1, claim = :claim,
    next_attempt_at = now() + make_interval(secs => :lease), updated_at = now()
FROM turns t
WHERE w.tenant_id = :tenant_id AND w.session_id = :session_id AND w.target IS NOT NULL
  AND t.tenant_id = w.tenant_id AND t.session_id = w.session_id AND t.turn_id = w.turn_id
  AND t.state NOT IN {active}
  AND w.delivered_at IS NULL AND w.next_attempt_at <= now()
  AND {fragment:thread_order}
RETURNING w.*, t.state, t.result, t.error;

-- name: webhook_delivered
-- A receiver acknowledged an attempt (2xx): delivered, whichever claim sent it (an
-- acknowledgement is a fact; a later one changes nothing). Zero rows: already recorded.
UPDATE webhooks
SET delivered_at = now(), last_status = :status, last_error = NULL, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
  AND delivered_at IS NULL
RETURNING delivered_at;

-- name: webhook_retry
-- An attempt failed: the next one is due in :delay seconds (the caller's backoff).
-- Only the newest claim's holder writes it: an attempt whose lease ran out, and was
-- taken over, records nothing. Zero rows: delivered meanwhile, or claimed again.
UPDATE webhooks
SET next_attempt_at = now() + make_interval(secs => :delay), last_status = :status,
    last_error = :error, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
  AND delivered_at IS NULL AND claim = :claim
RETURNING next_attempt_at;

-- name: due_prompts
-- A chat bridge's pass (beat, after the delivery pass): turns with a bridge's reply
-- row (connector set, undelivered) parked on an open input request that the thread
-- was not asked about yet (prompted is another request's id, or none). Walks the
-- undelivered rows (ix_webhooks_due: every active turn's row is one), at most :limit.
-- Not claimed: posting a prompt looks in the thread for it first (worker/connectors.py),
-- so two passes at once ask once. Like a reply, a prompt waits for the earlier turns'
-- replies of its thread.
SELECT w.*, t.pending_input
FROM webhooks w
JOIN turns t
  ON t.tenant_id = w.tenant_id AND t.session_id = w.session_id AND t.turn_id = w.turn_id
WHERE w.delivered_at IS NULL AND w.connector IS NOT NULL
  AND t.state IN {parked} AND t.pending_input IS NOT NULL
  AND NOT coalesce(CAST(t.pending_input->>'resolved' AS boolean), false)
  AND (w.prompted IS NULL OR w.prompted <> t.pending_input->>'request_id')
  AND {fragment:thread_order}
ORDER BY w.next_attempt_at, w.tenant_id, w.session_id, w.turn_id
LIMIT :limit;

-- name: prompt_posted
-- The thread was asked about :request_id (its prompt posted, or found posted).
UPDATE webhooks SET prompted = :request_id, updated_at = now()
WHERE tenant_id = :tenant_id AND session_id = :session_id AND turn_id = :turn_id
RETURNING prompted;

-- name: hold_delivery
-- A claimed delivery is about to leave (worker/webhooks.py): its session lives and the
-- claim is still the caller's. Held for the send: the share lock waits for a tombstone
-- that holds the row (lock_for_erasure) and then finds it deleted; a tombstone after
-- it waits for the send. No row: the session was deleted (its undelivered webhooks with
-- it) or the claim was taken over: nothing is sent. KEY SHARE, not SHARE: it conflicts
-- with the tombstone's FOR UPDATE alone, so the session's steps and admissions (which
-- update its row) never wait for a slow receiver.
SELECT s.session_id FROM sessions s
WHERE s.tenant_id = :tenant_id AND s.session_id = :session_id AND s.deleted_at IS NULL
  AND EXISTS (SELECT 1 FROM webhooks w
              WHERE w.tenant_id = s.tenant_id AND w.session_id = s.session_id
                AND w.turn_id = :turn_id AND w.claim = :claim)
FOR KEY SHARE OF s;
