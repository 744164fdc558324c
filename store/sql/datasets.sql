-- Statements of datasets (api/service/datasets.py, docs/evaluation.md). Only
-- store/datasets.py runs them (store/sql.py: how blocks are named and loaded).

-- name: create_dataset_version
-- The next version of a dataset, numbered after its newest (the first is 1). No row:
-- a version with these cases exists (the caller reads it: ``dataset_by_hash``), or a
-- concurrent creation took the number (the caller tries again).
INSERT INTO eval_datasets (tenant_id, name, version, cases_hash, case_count, created_by)
SELECT :tenant_id, :name, coalesce(max(version), 0) + 1, :cases_hash, :case_count,
       :created_by
FROM eval_datasets
WHERE tenant_id = :tenant_id AND name = :name
ON CONFLICT DO NOTHING
RETURNING *;

-- name: insert_cases
-- The cases of a version just created, in the same transaction (a JSON array of
-- {case_id, ordinal, input, assertions, source}).
INSERT INTO eval_cases (tenant_id, dataset, version, case_id, ordinal, input, assertions,
                        source)
SELECT :tenant_id, :name, :version, c.case_id, c.ordinal, c.input, c.assertions, c.source
FROM jsonb_to_recordset(CAST(:cases AS jsonb))
     AS c(case_id text, ordinal int, input jsonb, assertions jsonb, source jsonb)
RETURNING case_id;

-- name: dataset_by_hash
SELECT * FROM eval_datasets
WHERE tenant_id = :tenant_id AND name = :name AND cases_hash = :cases_hash;

-- name: get_dataset_version
-- One version; :version NULL: the newest.
SELECT * FROM eval_datasets
WHERE tenant_id = :tenant_id AND name = :name
  AND (CAST(:version AS int) IS NULL OR version = :version)
ORDER BY version DESC LIMIT 1;

-- name: dataset_versions
-- Every version of a dataset, newest first.
SELECT * FROM eval_datasets WHERE tenant_id = :tenant_id AND name = :name
ORDER BY version DESC LIMIT :limit;

-- name: list_datasets
-- The tenant's datasets by name: the newest version, how many, when last added to.
SELECT name, max(version) AS latest_version, count(*) AS versions,
       max(created_at) AS updated_at
FROM eval_datasets WHERE tenant_id = :tenant_id
GROUP BY name ORDER BY name LIMIT :limit;

-- name: dataset_cases
-- A version's cases in order.
SELECT * FROM eval_cases
WHERE tenant_id = :tenant_id AND dataset = :name AND version = :version
ORDER BY ordinal;
