-- Statements of experiments (api/service/experiments.py, recovery/experiments.py: the
-- driver). Only store/experiments.py runs them. States are parameters, named after
-- store/schema_eval.py's tuples (:running, :scored, :judge_pending, ...).

-- name: create_experiment
-- A new experiment, idempotent by its id: an existing one is left as it is (no row:
-- the caller reads it and compares its spec_hash).
INSERT INTO eval_experiments (tenant_id, experiment_id, dataset, dataset_version, agent_name,
                              agent_version, agent_hash, spec_hash, approvals, judge,
                              concurrency, recovery, state, created_by)
VALUES (:tenant_id, :experiment_id, :dataset, :dataset_version, :agent_name, :agent_version,
        :agent_hash, :spec_hash, CAST(:approvals AS jsonb), CAST(:judge AS jsonb),
        :concurrency, :recovery, :running, :created_by)
ON CONFLICT (tenant_id, experiment_id) DO NOTHING
RETURNING *;

-- name: insert_results
-- The experiment's cases, pending, in the same transaction: one per case of its
-- dataset version, each case's session and turn id derived (:case_prefix, case id).
INSERT INTO eval_results (tenant_id, experiment_id, case_id, ordinal, state, session_id,
                          turn_id)
SELECT :tenant_id, :experiment_id, case_id, ordinal, :pending, :case_prefix || case_id,
       :case_prefix || case_id
FROM eval_cases
WHERE tenant_id = :tenant_id AND dataset = :dataset AND version = :dataset_version
RETURNING case_id;

-- name: get_experiment
SELECT * FROM eval_experiments WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id;

-- name: list_experiments
-- A tenant's experiments newest first, of one dataset or agent when named.
SELECT * FROM eval_experiments
WHERE tenant_id = :tenant_id
  AND (CAST(:dataset AS text) IS NULL OR dataset = :dataset)
  AND (CAST(:agent_name AS text) IS NULL OR agent_name = :agent_name)
ORDER BY created_at DESC, experiment_id LIMIT :limit;

-- name: experiment_results
-- An experiment's cases in order.
SELECT * FROM eval_results
WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id
ORDER BY ordinal;

-- name: lock_experiment
-- The claim's first statement: the running experiment's row, locked for the
-- transaction, so two drivers claim one after the other and the window holds.
SELECT concurrency FROM eval_experiments
WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id AND state = :running
FOR UPDATE;

-- name: claim_cases
-- Pending cases, oldest first, to running: as many as the window (:window) has room
-- for beside the ones running. Their turns are admitted after the commit (a replay
-- when a crash came between: the ids are derived).
UPDATE eval_results r SET state = :running, updated_at = now()
FROM (
    SELECT case_id FROM eval_results
    WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id AND state = :pending
    ORDER BY ordinal
    LIMIT greatest(0, :window - (
        SELECT count(*) FROM eval_results
        WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id AND state = :running))
) c
WHERE r.tenant_id = :tenant_id AND r.experiment_id = :experiment_id AND r.case_id = c.case_id
RETURNING r.*;

-- name: running_cases
-- The cases whose turns are admitted and not scored yet, and those whose judge is
-- to be admitted or running.
SELECT * FROM eval_results
WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id
  AND (state = :running OR judge_state IN (:judge_pending, :judge_running))
ORDER BY ordinal;

-- name: score_case
-- The case's turn ended: its score, by compare-and-swap from running (no row: scored
-- already, by another driver); its judge pending when the experiment has one.
UPDATE eval_results
SET state = :scored, passed = :passed, score = CAST(:score AS jsonb),
    judge_state = :judge_state, judge = CAST(:judge AS jsonb), updated_at = now()
WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id AND case_id = :case_id
  AND state = :running
RETURNING case_id;

-- name: judge_moved
-- The case's judge from one state to the next (:from_state), with what it has so far.
UPDATE eval_results
SET judge_state = :to_state, judge = CAST(:judge AS jsonb), updated_at = now()
WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id AND case_id = :case_id
  AND judge_state = :from_state
RETURNING case_id;

-- name: finish_experiment
-- Running to completed once every case is scored and no judge is left to run.
UPDATE eval_experiments e SET state = :completed, completed_at = now(), updated_at = now()
WHERE e.tenant_id = :tenant_id AND e.experiment_id = :experiment_id AND e.state = :running
  AND NOT EXISTS (
      SELECT 1 FROM eval_results r
      WHERE r.tenant_id = :tenant_id AND r.experiment_id = :experiment_id
        AND (r.state <> :scored OR r.judge_state IN (:judge_pending, :judge_running)))
RETURNING experiment_id;

-- name: cancel_experiment
-- Running to cancelled (its running turns are cancelled by the caller).
UPDATE eval_experiments SET state = :cancelled, completed_at = now(), updated_at = now()
WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id AND state = :running
RETURNING experiment_id;

-- name: scan_experiments
-- Across tenants (the beat's pass): the running experiments, least recently advanced
-- first, at most :limit (on ix_eval_experiments_running).
SELECT tenant_id, experiment_id FROM eval_experiments
WHERE state = :running ORDER BY updated_at LIMIT :limit;

-- name: experiment_advanced
-- A driver's pass over the experiment is done: it goes to the back of the scan.
UPDATE eval_experiments SET updated_at = now()
WHERE tenant_id = :tenant_id AND experiment_id = :experiment_id AND state = :running
RETURNING experiment_id;

-- name: newest_completed
-- The gate's evidence: the newest completed experiment (or recovery drill) of one
-- agent version on one dataset version.
SELECT * FROM eval_experiments
WHERE tenant_id = :tenant_id AND agent_name = :agent_name AND agent_version = :agent_version
  AND dataset = :dataset AND dataset_version = :dataset_version AND state = :completed
  AND recovery = :recovery
ORDER BY completed_at DESC LIMIT 1;
