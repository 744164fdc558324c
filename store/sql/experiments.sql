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
-- A tenant's experiments newest first, of one dataset or agent when named, each with
-- its sums over its cases (runtime/evaluation/summary.py Totals, what totals adds up
-- in Python from the cases GET reads): the scored cases' figures from their score, the
-- none-of assertions of each, the judges' cost and scores; then its failures by error
-- code (a cancelled turn's :cancelled_code, a failed one's without a code
-- :failed_code). Costs and scores are float8 summed in the cases' order, as Python
-- sums them, so the rounded figures are the same to the last digit. One statement for
-- the page: each experiment's results are read on their primary key, twice (the sums,
-- then the failures, which are few).
SELECT e.*, t.*, coalesce(f.failures, '{}') AS failures
FROM (SELECT * FROM eval_experiments
      WHERE tenant_id = :tenant_id
        AND (CAST(:dataset AS text) IS NULL OR dataset = :dataset)
        AND (CAST(:agent_name AS text) IS NULL OR agent_name = :agent_name)
      ORDER BY created_at DESC, experiment_id LIMIT :limit) e
CROSS JOIN LATERAL (
    SELECT count(*) AS cases,
           count(*) FILTER (WHERE r.state = :scored) AS scored,
           count(*) FILTER (WHERE r.state = :scored AND r.passed) AS passed,
           sum(s.cost_usd ORDER BY r.ordinal) FILTER (WHERE r.state = :scored) AS cost_usd,
           sum(s.tokens) FILTER (WHERE r.state = :scored) AS tokens,
           sum(s.steps) FILTER (WHERE r.state = :scored) AS steps,
           sum(s.latency_ms) FILTER (WHERE r.state = :scored) AS latency_ms_sum,
           count(s.latency_ms) FILTER (WHERE r.state = :scored) AS latency_ms_count,
           max(s.latency_ms) FILTER (WHERE r.state = :scored) AS latency_ms_max,
           sum(s.recovered) FILTER (WHERE r.state = :scored) AS recovered,
           bool_and(n.clean) FILTER (WHERE r.state = :scored) AS none_of_clean,
           sum(j.cost_usd ORDER BY r.ordinal) AS judge_cost_usd,
           sum(j.score ORDER BY r.ordinal) FILTER (WHERE r.judge_state = :judge_done)
               AS judge_score_sum,
           count(j.score) FILTER (WHERE r.judge_state = :judge_done) AS judged
    FROM eval_results r
    LEFT JOIN LATERAL jsonb_to_record(r.score)
        AS s(cost_usd float8, tokens numeric, steps numeric, latency_ms numeric,
             recovered numeric, assertions jsonb) ON true
    LEFT JOIN LATERAL (
        SELECT bool_and(a.passed) AS clean
        FROM jsonb_to_recordset(s.assertions) AS a(category text, passed boolean)
        WHERE a.category = :none_of) n ON true
    -- a case judged: a judge state and what the judge has so far (none: not judged)
    LEFT JOIN LATERAL jsonb_to_record(r.judge) AS j(cost_usd float8, score float8)
        ON r.judge_state IS NOT NULL AND r.judge <> '{}'
    WHERE r.tenant_id = e.tenant_id AND r.experiment_id = e.experiment_id) t
LEFT JOIN LATERAL (
    SELECT jsonb_object_agg(c.code, c.n) AS failures
    FROM (SELECT CASE WHEN s.turn_state = :turn_cancelled THEN :cancelled_code
                      WHEN length(s.error_code) > 0 THEN s.error_code
                      ELSE :failed_code END AS code,
                 count(*) AS n
          FROM eval_results r, jsonb_to_record(r.score) AS s(turn_state text, error_code text)
          WHERE r.tenant_id = e.tenant_id AND r.experiment_id = e.experiment_id
            AND r.state = :scored
            AND (s.turn_state = :turn_failed OR s.turn_state = :turn_cancelled)
          GROUP BY 1) c) f ON true
ORDER BY e.created_at DESC, e.experiment_id;

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
