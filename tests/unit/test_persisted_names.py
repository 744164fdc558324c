"""Persisted names are compatibility data: journals, brokers and clients hold them.
Changing one of these values breaks stored data; add a migration, not an edit."""

from __future__ import annotations

from turnkeep.runtime.agents.definition import UnknownOutcomePolicy
from turnkeep.runtime.agents.tools import Effect
from turnkeep.runtime.names import (
    QUEUE,
    TASK_ADVANCE_EXPERIMENT,
    TASK_ADVANCE_EXPERIMENTS,
    TASK_DELIVER_WEBHOOKS,
    TASK_PRUNE_JOURNAL,
    TASK_RECOVERY_SCAN,
    TASK_RUN_SESSION,
    TASK_SWEEP_ATTACHMENTS,
)
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import ErrorCode, EventType, TurnState
from turnkeep.store.fleet import definition_queue
from turnkeep.store.keys import (
    events_channel,
    fence_key,
    lease_key,
    rerun_key,
    secret_key,
    worker_key,
    workers_key,
)
from turnkeep.store.sql import names


def test_turn_states():
    assert [s.value for s in TurnState] == [
        "queued",
        "running",
        "waiting",
        "needs_reconciliation",
        "completed",
        "failed",
        "cancelled",
    ]


def test_event_types():
    assert [e.value for e in EventType] == [
        "turn.accepted",
        "turn.started",
        "model.completed",
        "tool.completed",
        "tool.interrupted",
        "input.requested",
        "input.resolved",
        "context.compacted",
        "turn.definition_changed",
        "turn.paced",
        "turn.cancel_requested",
        "turn.needs_reconciliation",
        "turn.completed",
        "turn.failed",
        "turn.cancelled",
    ]


def test_error_codes():
    assert [c.value for c in ErrorCode] == [
        "retry_exhausted",
        "budget_exceeded",
        "output_invalid",
        "model_failed",
        "context_overflow",
        "agent_changed",
        "unknown_tool",
        "definition_invalid",
        "model_not_allowed",
        "processor_blocked",
        "agent_removed",
    ]


def test_input_kinds_roles_and_outcomes():
    from turnkeep.runtime.inputs import InputKind, ReconcileOutcome, request_id
    from turnkeep.runtime.tokens import TenantRole

    assert [k.value for k in InputKind] == [
        "approval",
        "question",
        "reconciliation",
        "budget_extension",
        "external_auth",
        "delegation",
        "timer",
    ]
    assert [r.value for r in TenantRole] == ["admin", "member", "reader"]
    assert [o.value for o in ReconcileOutcome] == ["succeeded", "failed", "not_executed"]
    assert request_id(InputKind.RECONCILIATION, 3, 2) == "reconciliation-3-2"


def test_effects_policies_and_fault_points():
    assert [e.value for e in Effect] == ["read", "idempotent", "effectful"]
    assert [p.value for p in UnknownOutcomePolicy] == ["interrupt", "reconcile"]
    assert [p.value for p in FaultPoint] == [
        "before_model_call",
        "after_model_call",
        "before_tool_effect",
        "after_tool_effect",
        "before_commit",
        "after_commit",
        "in_lease_renewal",
        "before_start",
        "after_start",
        "before_settle",
        "after_settle",
        "before_cancel",
        "after_cancel",
        "before_answer",
        "after_answer",
        "before_interrupt",
        "after_interrupt",
        "before_delivery",
        "after_delivery",
        "after_delivery_recorded",
        "before_tool_step_record",
        "after_tool_step_record",
        "before_fork",
        "after_fork",
        "before_child_admit",
        "before_join",
        "before_prune",
        "after_prune",
        "before_definition_change",
        "after_definition_change",
        "between_batch_commits",
        "between_group_asks",
        "before_rerun",
        "after_rerun",
        "after_case_claim",
        "before_case_score",
        "after_case_score",
        "after_reservation",
        "after_pace",
        "before_tombstone",
        "after_tombstone",
        "between_erase_batches",
        "limit_lock_held",
        "after_limited_start",
        "before_waiters_told",
        "after_waiters_told",
    ]


def test_multitask_strategies():
    from turnkeep.runtime.multitask import Multitask

    assert [m.value for m in Multitask] == ["enqueue", "reject", "interrupt"]


def test_run_outcomes():
    from turnkeep.worker.lane import RunOutcome

    assert [o.value for o in RunOutcome] == [
        "ran",
        "idle",
        "busy",
        "stale",
        "lease_lost",
        "unreachable",
        "handed_on",
        "held",
        "paced",
        "limited",
    ]


def test_task_names_queue_and_redis_keys():
    assert TASK_RUN_SESSION == "turnkeep.run_session"
    assert TASK_RECOVERY_SCAN == "turnkeep.recovery_scan"
    assert TASK_PRUNE_JOURNAL == "turnkeep.prune_journal"
    assert TASK_DELIVER_WEBHOOKS == "turnkeep.deliver_webhooks"
    assert TASK_SWEEP_ATTACHMENTS == "turnkeep.sweep_attachments"
    assert TASK_ADVANCE_EXPERIMENTS == "turnkeep.advance_experiments"
    assert TASK_ADVANCE_EXPERIMENT == "turnkeep.advance_experiment"
    assert QUEUE == "turnkeep"
    assert fence_key() == "turnkeep:fence"
    assert lease_key("t1", "s1") == "turnkeep:lease:t1:s1"
    assert rerun_key("t1", "s1") == "turnkeep:rerun:t1:s1"
    assert events_channel("t1", "s1") == "turnkeep:events:t1:s1"
    assert secret_key("t1", "s1", "u1", "r1") == "turnkeep:secret:t1:s1:u1:r1"
    assert worker_key("h:1:ab") == "turnkeep:worker:h:1:ab"
    assert workers_key() == "turnkeep:workers"
    assert definition_queue(QUEUE, "ab" * 32) == "turnkeep.def." + "ab" * 8


def test_named_queries():
    assert names() == {
        "request_upgrade",
        "request_upgrades",
        "turns_by_definition",
        "admit_turn",
        "admit_rerun",
        "rerun_copies",
        "resolve_grouped",
        "lock_live_session",
        "create_schedule",
        "get_schedule",
        "list_schedules",
        "pause_schedule",
        "delete_schedule",
        "due_schedules",
        "schedule_fired",
        "give_feedback",
        "get_limits",
        "set_limits",
        "limit_lock",
        "limit_unlock",
        "count_running",
        "declared_limits",
        "waiting_heads",
        "open_inputs",
        "feedback_summary",
        "get_session",
        "get_turn",
        "insert_webhook",
        "get_webhook",
        "claim_webhook",
        "claim_webhooks",
        "hold_delivery",
        "claim_thread_reply",
        "webhook_delivered",
        "webhook_retry",
        "due_prompts",
        "prompt_posted",
        "list_turns",
        "list_sessions",
        "turn_page",
        "count_active_turns",
        "scan_delegations",
        "waiting_on_session",
        "lane_head",
        "list_events",
        "turn_events",
        "list_conversation",
        "retention_candidates",
        "prune_events",
        "claim_fence",
        "start_turn",
        "fenced_append",
        "request_cancel",
        "scan_stalled",
        "resolve_input",
        "scan_expired_inputs",
        "lock_session",
        "interrupt_lane",
        "get_tool_step",
        "record_tool_step",
        "fork_source",
        "fork_session",
        "fork_turns",
        "fork_events",
        "insert_attachment",
        "attachment_content",
        "attachment_ready",
        "get_attachment",
        "attachment_refs",
        "attachment_deleting",
        "delete_attachment",
        "sweep_attachments",
        "create_project",
        "get_project",
        "list_projects",
        "update_project",
        "remember_fact",
        "recall_facts",
        "create_binding",
        "list_bindings",
        "revoke_binding",
        "find_binding",
        # the evaluation plane (store/datasets.py, experiments.py, promotions.py)
        "create_dataset_version",
        "insert_cases",
        "dataset_by_hash",
        "get_dataset_version",
        "dataset_versions",
        "list_datasets",
        "dataset_cases",
        "create_experiment",
        "insert_results",
        "get_experiment",
        "list_experiments",
        "experiment_results",
        "lock_experiment",
        "claim_cases",
        "running_cases",
        "score_case",
        "judge_moved",
        "finish_experiment",
        "cancel_experiment",
        "scan_experiments",
        "experiment_advanced",
        "newest_completed",
        "record_promotion",
        "list_promotions",
        "promoted_versions",
        "promoted_versions_of",
        # erasure (docs/erasure.md)
        "session_access",
        "get_tombstone",
        "lock_for_erasure",
        "tombstone_session",
        "scrub_eval_results",
        "erase_eval_cases",
        "erase_followups",
        "erase_feedback",
        "erase_webhooks",
        "erase_tool_steps",
        "erase_attachments",
        "erase_memories",
        "erase_provider_state",
        "erase_turn_metadata",
        "erase_session_metadata",
        "erase_events",
        "erase_turns",
        "erase_session_row",
        "expired_sessions",
        "stalled_erasures",
        "read_provider_state",
        "search_turns",
        "search_turns_by_metadata",
        "search_sessions",
        "search_sessions_by_metadata",
    }


def test_the_shared_wire_models_name_the_runtime_states_and_input_kinds():
    from typing import get_args

    from turnkeep import models
    from turnkeep.runtime.inputs import InputKind
    from turnkeep.runtime.states import TERMINAL_STATES

    assert set(get_args(models.TurnState)) == {s.value for s in TurnState}
    assert set(models.TERMINAL_STATES) == {s.value for s in TERMINAL_STATES}
    assert set(get_args(models.InputKind)) == {k.value for k in InputKind}


def test_the_state_machine_is_declared_for_every_state_and_terminal_states_are_final():
    from turnkeep.runtime.states import TERMINAL_STATES, TRANSITIONS

    assert set(TRANSITIONS) == set(TurnState)
    assert all(TRANSITIONS[s] == frozenset() for s in TERMINAL_STATES)
    assert TurnState.RUNNING in TRANSITIONS[TurnState.WAITING]
    assert TurnState.WAITING not in TRANSITIONS[TurnState.QUEUED]


def test_stream_wire_names():
    # what SSE clients listen for and read: the final frames and the metadata header
    from turnkeep.api.sse import EARLIEST_HEADER, STREAM_RESUME, STREAM_RESYNC

    assert (STREAM_RESUME, STREAM_RESYNC) == ("stream.resume", "stream.resync_required")
    assert EARLIEST_HEADER == "Turnkeep-Earliest-Seq"


def test_webhook_and_stream_token_wire_names():
    # what receivers verify and browsers hold: headers and the token format
    from turnkeep.api.stream_tokens import PARAM, PREFIX
    from turnkeep.runtime.webhooks import DELIVERY_HEADER, SIGNATURE_HEADER

    assert (SIGNATURE_HEADER, DELIVERY_HEADER) == ("Turnkeep-Signature", "Turnkeep-Delivery")
    assert (PREFIX, PARAM) == ("tkst1", "stream_token")


def test_row_security_names():
    # written into every database's policies and grants by migration 0006: the setting
    # the policies read, its cross-tenant value, the policy and the application's role
    from turnkeep.runtime.settings import APP_ROLE
    from turnkeep.store.db import ALL_TENANTS, TENANT_SETTING
    from turnkeep.store.row_security import POLICY
    from turnkeep.store.schema import TENANT_TABLES

    assert (TENANT_SETTING, ALL_TENANTS) == ("turnkeep.tenant", "*")
    assert (POLICY, APP_ROLE) == ("tenant_isolation", "turnkeep_app")
    # (tool_steps: migration 0008 put it under the same policy)
    # (attachments: migration 0009; projects: migration 0010; memories: migration 0012)
    assert TENANT_TABLES == (
        "sessions",
        "turns",
        "events",
        "webhooks",
        "tool_steps",
        "attachments",
        "projects",
        "memories",
        "schedules",
        "feedback",
        # (bridge_bindings: migration 0014)
        "bridge_bindings",
        # (the evaluation plane: migration 0019)
        "eval_datasets",
        "eval_cases",
        "eval_experiments",
        "eval_results",
        "agent_promotions",
        # (session_tombstones, provider_state: migration 0017)
        "session_tombstones",
        "provider_state",
        # (the metadata's rows: migration 0018)
        "session_metadata",
        "turn_metadata",
        # (tenant_limits: migration 0020)
        "tenant_limits",
    )


def test_fork_and_attachment_names():
    # the fork's cut error and its columns, the attachment states: stored in rows
    from turnkeep.store.attachments import AttachmentState
    from turnkeep.store.forks import FORK_CUT
    from turnkeep.store.schema import sessions

    assert FORK_CUT == "fork_cut"
    assert {"forked_from_session", "forked_from_seq"} <= set(sessions.c.keys())
    assert [s.value for s in AttachmentState] == ["pending", "ready", "deleting"]
    from typing import get_args

    from turnkeep import models

    assert set(get_args(models.AttachmentState)) == {s.value for s in AttachmentState}


def test_project_names():
    # stored in turns' inputs (and hashed), in the sessions and projects tables, and
    # answered to clients
    from turnkeep.api.service.projects import ProjectMismatch
    from turnkeep.runtime.admission import INPUT_KEY
    from turnkeep.runtime.projects import LIMIT_FIELDS
    from turnkeep.store.schema import projects, sessions

    assert INPUT_KEY == "project"
    assert LIMIT_FIELDS == (
        "max_iterations",
        "max_model_calls",
        "max_tool_calls",
        "max_tokens",
        "max_seconds",
    )
    assert "project_id" in sessions.c
    assert {"owner", "overrides", "request_hash"} <= set(projects.c.keys())
    assert ProjectMismatch.code == "project_mismatch"


def test_memory_names():
    # scope keys are stored in the memories table, the tool's name in journals
    from turnkeep.runtime.memory import TOOL_NAME, VERSION, MemoryScope, scope_key
    from turnkeep.store.schema import memories

    assert [s.value for s in MemoryScope] == ["subject", "project"]
    assert (TOOL_NAME, VERSION) == ("remember", "1")

    class Turn:
        session_id = "s1"
        submitted_by = "alice"
        input = {"project": {"id": "p1"}}

    class Case(Turn):
        session_id = "eval.x1.c1"

    assert scope_key(MemoryScope.SUBJECT, Turn()) == "subject:alice"
    assert scope_key(MemoryScope.PROJECT, Turn()) == "project:p1"
    assert scope_key(MemoryScope.SUBJECT, Case()) == "session:eval.x1.c1"
    assert list(memories.c.keys()) == [
        "tenant_id",
        "scope_key",
        "source_key",
        "fact",
        "session_id",
        "turn_id",
        "created_at",
    ]


def test_bridge_names():
    # in ids of sessions and turns (hashed from them), bindings' rows, the outbox's
    # connector column, Redis, and in the messages turnkeep posts to Slack and reads back
    from turnkeep.runtime.bridges import BRIDGES, session_id, slack, turn_id
    from turnkeep.store.bridges import ANY_CHANNEL
    from turnkeep.store.keys import refused_key
    from turnkeep.store.schema import bridge_bindings, webhooks

    assert BRIDGES == ("slack", "generic")
    assert ANY_CHANNEL == "*"
    # the channel is part of a thread's session since issue 37 (before: bridge,
    # workspace and thread only, "slack.8750e22ff0210d95af8173664e6a225d" here):
    # docs/bridges.md says what became of sessions made before
    assert session_id("slack", "T1", "C1", "1700000000.000100") == (
        "slack.dd8b2938f5202c589d0f1a898c9dd34c"
    )
    assert turn_id("slack", "T1", "C1:1700000000.000200") == (
        "slack.05ccd5600c9461639f520f79e7889486"
    )
    assert slack.METADATA_TYPE == "turnkeep_reply"
    assert (slack.APPROVE, slack.DENY) == ("turnkeep_approve", "turnkeep_deny")
    assert (slack.SIGNATURE_HEADER, slack.TIMESTAMP_HEADER, slack.RETRY_HEADER) == (
        "X-Slack-Signature",
        "X-Slack-Request-Timestamp",
        "X-Slack-Retry-Num",
    )
    assert refused_key("slack.x") == "turnkeep:refused:slack.x"
    assert {"connector", "target", "prompted"} <= set(webhooks.c.keys())
    assert list(bridge_bindings.c.keys())[:6] == [
        "tenant_id",
        "binding_id",
        "bridge",
        "workspace",
        "channel",
        "user_id",
    ]


def test_evaluation_names():
    # stored in the evaluation plane's rows (store/schema_eval.py, migration 0019), in
    # its assertions' JSON and in the ids of its turns; answered to clients
    from typing import get_args

    from turnkeep import assertions, evaluation
    from turnkeep.runtime.evaluation import case_ids
    from turnkeep.store.schema_eval import EXPERIMENT_STATES, JUDGE_STATES, RESULT_STATES

    assert EXPERIMENT_STATES == ("running", "completed", "cancelled")
    assert RESULT_STATES == ("pending", "running", "scored")
    assert JUDGE_STATES == ("pending", "running", "done", "failed")
    assert get_args(evaluation.ExperimentState) == EXPERIMENT_STATES
    assert get_args(evaluation.ResultState) == RESULT_STATES
    assert assertions.CATEGORIES == {
        "tool_called": "trajectory",
        "tool_not_called": "trajectory",
        "tool_order": "trajectory",
        "at_most": "trajectory",
        "outcome": "trajectory",
        "output_valid": "output",
        "output_contains": "output",
        "output_matches": "output",
        "output_equals": "output",
        "never_called": "none_of",
        "never_appears": "none_of",
    }
    kinds = {
        get_args(m.model_fields["kind"].annotation)[0]
        for m in get_args(get_args(assertions.Assertion)[0])
    }
    assert kinds == set(assertions.CATEGORIES)
    assert case_ids.case_session("e1", "c1") == "eval.e1.c1"
    assert case_ids.judge_session("e1", "c1") == "judge.e1.c1"


def test_waits_on_a_session_that_has_gone():
    # in joins' results (a delegate call's, journalled) and in scored cases' rows
    from turnkeep.runtime.delegation import CHILD_DELETED, deleted
    from turnkeep.runtime.evaluation.case_ids import DELETED

    assert (CHILD_DELETED, DELETED) == ("child_deleted", "deleted")
    assert deleted("t1", "a") == {
        "id": "a",
        "turn_id": "t1",
        "state": "cancelled",
        "error": {"code": "child_deleted", "message": "the child's session was deleted"},
    }


def test_erasure_names():
    # in brokers (task names), rows (the tombstone's reasons and columns, the payload's
    # key naming a provider that left state), the live channel and the SSE stream
    from turnkeep.api.sse import STREAM_DELETED
    from turnkeep.runtime.names import TASK_ERASE_SESSION, TASK_SWEEP_ERASURES
    from turnkeep.runtime.payloads import ModelCompleted
    from turnkeep.store.channel import BATCH, DELETED, encode_batch, encode_deleted
    from turnkeep.store.erasure import Reason
    from turnkeep.store.erasure_registry import Part
    from turnkeep.store.schema import provider_state, session_tombstones, sessions
    from turnkeep.store.schema_erasure import TOMBSTONE_REASONS

    assert (TASK_ERASE_SESSION, TASK_SWEEP_ERASURES) == (
        "turnkeep.erase_session",
        "turnkeep.sweep_erasures",
    )
    assert [r.value for r in Reason] == list(TOMBSTONE_REASONS) == ["deleted", "expired"]
    assert [p.value for p in Part][-2:] == ["erase_events", "erase_turns"]
    assert (STREAM_DELETED, DELETED) == ("stream.session_deleted", "deleted")
    assert encode_deleted() == '{"kind":"deleted"}'
    # several messages in one publish (issue 39): what every subscriber unpacks
    assert BATCH == "batch"
    assert encode_batch(["{}", "{}"]) == '{"kind":"batch","items":[{},{}]}'
    assert ModelCompleted(message={}, provider_state="anthropic").to_json() == {
        "message": {},
        "provider_state": "anthropic",
    }
    assert list(session_tombstones.c.keys()) == [
        "tenant_id",
        "session_id",
        "project_id",
        "reason",
        "deleted_by",
        "deleted_at",
        "tombstone_xid",
        "erased_rows",
        "updated_at",
        "erased_at",
    ]
    assert list(provider_state.c.keys()) == [
        "tenant_id",
        "session_id",
        "seq",
        "provider",
        "data",
        "created_at",
    ]
    assert {"expires_after", "expires_at", "deleted_at"} <= set(sessions.c.keys())
