-- Statements of the provider state kept out of the journal (docs/erasure.md): a
-- model call's opaque state (Anthropic's thinking blocks and signatures) is written
-- by its step's own statement (fenced_append, sql/turns.sql) and read here, only to
-- build the next request for that provider. Only store/provider_state.py runs them
-- (store/sql.py: how blocks are named, loaded and their state sets filled in).

-- name: read_provider_state
-- The state :provider left with the model calls at :seqs of the session (the
-- model.completed events of a turn's context), by primary key.
SELECT seq, data FROM provider_state
WHERE tenant_id = :tenant_id AND session_id = :session_id AND seq = ANY(:seqs)
  AND provider = :provider;
