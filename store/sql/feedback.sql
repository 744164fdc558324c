-- Statements of feedback (api/service/feedback.py, docs/evaluation.md). Only
-- store/feedback.py runs them (store/sql.py: how blocks are named and loaded).

-- name: give_feedback
-- One per (turn, step, subject): a new one, or its author's replacement of the one it
-- gave before (created: whether this one is new).
INSERT INTO feedback (tenant_id, session_id, turn_id, step, subject, kind, score, scale_min,
                      scale_max, note_hash, note, trace_id, agent_name, agent_version)
VALUES (:tenant_id, :session_id, :turn_id, :step, :subject, :kind, :score, :scale_min,
        :scale_max, :note_hash, :note, :trace_id, :agent_name, :agent_version)
ON CONFLICT (tenant_id, session_id, turn_id, step, subject) DO UPDATE
SET kind = EXCLUDED.kind, score = EXCLUDED.score, scale_min = EXCLUDED.scale_min,
    scale_max = EXCLUDED.scale_max, note_hash = EXCLUDED.note_hash, note = EXCLUDED.note,
    updated_at = now()
RETURNING *, (xmax = 0) AS created;

-- name: feedback_summary
-- A tenant's feedback on one agent, per version of its definition: how many, the
-- thumbs up and down, and the mean score normalised to 0..1 over each one's scale.
SELECT agent_version, count(*) AS n,
       count(*) FILTER (WHERE kind = 'thumbs' AND score = scale_max) AS up,
       count(*) FILTER (WHERE kind = 'thumbs' AND score = scale_min) AS down,
       avg((score - scale_min) / (scale_max - scale_min)) AS mean
FROM feedback
WHERE tenant_id = :tenant_id AND agent_name = :agent_name
GROUP BY agent_version
ORDER BY agent_version;
