/**
 * Generated from turnkeep's OpenAPI document by openapi-typescript
 * (clients/typescript/scripts/types.mjs): do not edit. Regenerate with `make ts-types`.
 */

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Healthz */
        get: operations["healthz_healthz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readyz */
        get: operations["readyz_readyz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Metrics
         * @description Prometheus text; needs a token like every non-public path (api/auth.py). Off the
         *     event loop: the backlog gauges read Redis and Postgres (at most every 2 s).
         */
        get: operations["metrics_metrics_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List Turns */
        get: operations["list_turns_v1_sessions__sid__turns_get"];
        put?: never;
        /** Admit Turn */
        post: operations["admit_turn_v1_sessions__sid__turns_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Turn */
        get: operations["get_turn_v1_sessions__sid__turns__tid__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}/timeline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Timeline */
        get: operations["get_timeline_v1_sessions__sid__turns__tid__timeline_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel Turn
         * @description Cancel a turn: at once when no worker is stepping it (queued, waiting, parked),
         *     else at its worker's next safe point. 409 ``turn_not_active`` once it ended.
         */
        post: operations["cancel_turn_v1_sessions__sid__turns__tid__cancel_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Answer Input
         * @description Answer a parked turn's open request (approval, question, reconciliation, budget
         *     extension, external auth), once, as its bound response schema says; the turn goes
         *     on. 404 unknown, 403 not yours to answer, 409 answered, 410 expired, 422 invalid.
         */
        post: operations["answer_input_v1_sessions__sid__turns__tid__inputs__rid__post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}/inputs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Answer Inputs
         * @description Answer several open requests of the turn's wait at once (the approvals of one
         *     model answer, asked together: its ``pending_inputs``), all or none: each is
         *     checked as a lone answer is before any is recorded. The turn goes on once every
         *     request of its wait is answered.
         */
        post: operations["answer_inputs_v1_sessions__sid__turns__tid__inputs_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}/rerun": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rerun Turn
         * @description Re-run the turn from a step as a new turn, reusing its committed outcomes before
         *     ``from_step`` (never run again) and, given ``replace``, starting from an edited
         *     outcome of that step; in the session, or in a fork of it (docs/reruns.md).
         */
        post: operations["rerun_turn_v1_sessions__sid__turns__tid__rerun_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Sessions
         * @description The tenant's sessions, newest first; with filters, those they match (the query
         *     language: api/service/search.py). A parameter the route does not know is a 422.
         */
        get: operations["list_sessions_v1_sessions_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Session */
        get: operations["get_session_v1_sessions__sid__get"];
        put?: never;
        post?: never;
        /**
         * Delete Session
         * @description Delete the session (docs/erasure.md): its active turns are cancelled (a running
         *     one's worker has its next write refused) and everything it held is erased in
         *     bounded batches; its tombstone stays. From this answer on every read of it is 410
         *     ``session_deleted``, and no admission re-creates it. Idempotent: a DELETE again
         *     answers the same tombstone, 200 once ``erased_at`` is set.
         */
        delete: operations["delete_session_v1_sessions__sid__delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Messages */
        get: operations["get_messages_v1_sessions__sid__messages_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/inbox": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Open Inputs
         * @description The inbox: every open request the caller may answer across the tenant's sessions
         *     (approvals, questions, reconciliations, …; not those only the runtime answers), by
         *     session and admission, with its binding and expiry.
         */
        get: operations["open_inputs_v1_inbox_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get Events
         * @description A JSON page with `Accept: application/json` (and not `text/event-stream`); else an event stream: the journal from the cursor on, then live. The cursor is `Last-Event-ID`, else `after`; without one, the earliest retained event. An event stream counts against the tenant's stream quota (429).
         */
        get: operations["get_events_v1_sessions__sid__events_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/stream-tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Issue Stream Token
         * @description A token to follow this session's events with ``?stream_token=`` (404 for a
         *     session this tenant does not have, or another owner's project has).
         */
        post: operations["issue_stream_token_v1_sessions__sid__stream_tokens_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workflows/{run_id}/nodes/{node_id}/turns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Admit Node Turn */
        post: operations["admit_node_turn_v1_workflows__run_id__nodes__node_id__turns_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workflows/{run_id}/nodes/{node_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Node */
        get: operations["get_node_v1_workflows__run_id__nodes__node_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/fork": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Fork Session
         * @description Fork the session at a seq into a new session of the same agent.
         */
        post: operations["fork_session_v1_sessions__sid__fork_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/attachments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upload Attachment
         * @description Upload a file to an existing session (404 for none): JSON with its bytes as
         *     base64, at most 192 KiB decoded. Answered once it is ready for a turn to name.
         */
        post: operations["upload_attachment_v1_sessions__sid__attachments_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/attachments/{aid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Attachment */
        get: operations["get_attachment_v1_sessions__sid__attachments__aid__get"];
        put?: never;
        post?: never;
        /**
         * Delete Attachment
         * @description Delete an attachment; a retry finishes a deletion that was cut short. Turns that
         *     named it keep its id in their input.
         */
        delete: operations["delete_attachment_v1_sessions__sid__attachments__aid__delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/attachments/{aid}/content": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Attachment Content */
        get: operations["get_attachment_content_v1_sessions__sid__attachments__aid__content_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/projects": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List Projects */
        get: operations["list_projects_v1_projects_get"];
        put?: never;
        /**
         * Create Project
         * @description Create a project owned by the caller (the token's subject).
         */
        post: operations["create_project_v1_projects_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/projects/{pid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Project */
        get: operations["get_project_v1_projects__pid__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Update Project
         * @description Replace the project's overrides. Turns admitted from now on pin the new ones;
         *     turns admitted before keep theirs.
         */
        patch: operations["update_project_v1_projects__pid__patch"];
        trace?: never;
    };
    "/v1/schedules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Schedules
         * @description The tenant's schedules by id, ``limit`` after ``after`` (``next``: the last id).
         */
        get: operations["list_schedules_v1_schedules_get"];
        put?: never;
        /**
         * Create Schedule
         * @description A schedule: the agent's turn with this input on every tick (a cron expression in
         *     a time zone, or an interval), in one session or a new one per tick.
         */
        post: operations["create_schedule_v1_schedules_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{schedule_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Schedule */
        get: operations["get_schedule_v1_schedules__schedule_id__get"];
        put?: never;
        post?: never;
        /** Delete Schedule */
        delete: operations["delete_schedule_v1_schedules__schedule_id__delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{schedule_id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Pause Schedule */
        post: operations["pause_schedule_v1_schedules__schedule_id__pause_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{schedule_id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resume Schedule */
        post: operations["resume_schedule_v1_schedules__schedule_id__resume_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Agents
         * @description The agents the API declares, each with its versions (oldest first, the last is
         *     the latest) and definition hashes, and its default: what the caller's tenant's new
         *     turns get unless they name one (for a gated agent, the version it last promoted).
         */
        get: operations["list_agents_v1_agents_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}/versions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Agent Versions
         * @description Per definition hash of the agent: the caller's tenant's active turns by state and
         *     the live workers serving it; an old build is drained once its hash has no turns.
         */
        get: operations["agent_versions_v1_agents__name__versions_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}/versions/{definition_hash}/upgrade": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upgrade Version
         * @description Move every active turn of the tenant on this definition to the agent's newest
         *     version at its next safe point, pinned or not (admin).
         */
        post: operations["upgrade_version_v1_agents__name__versions__definition_hash__upgrade_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}/upgrade": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upgrade Turn
         * @description Move the turn to its agent's newest version at its next safe point, pinned or
         *     not (admin). 409 ``turn_not_active`` once it ended.
         */
        post: operations["upgrade_turn_v1_sessions__sid__turns__tid__upgrade_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{sid}/turns/{tid}/feedback": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Give Feedback
         * @description Score the turn, or one of its committed steps: a thumb or a number on a declared
         *     scale, and an optional note kept as its hash. One per (turn, step, subject).
         */
        post: operations["give_feedback_v1_sessions__sid__turns__tid__feedback_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}/feedback": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Feedback Summary
         * @description The tenant's feedback on the agent, per version: how many, thumbs up and down,
         *     and the mean score over each one's scale (0 to 1).
         */
        get: operations["feedback_summary_v1_agents__name__feedback_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/bridges/bindings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List Bindings */
        get: operations["list_bindings_v1_bridges_bindings_get"];
        put?: never;
        /**
         * Create Binding
         * @description Bind a bridge's sender to a subject of the tenant. 404
         *     ``bridge_workspace_not_found`` when the workspace is not assigned to this tenant;
         *     409 ``binding_taken`` when that sender has a live binding (revoke it first).
         */
        post: operations["create_binding_v1_bridges_bindings_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/bridges/bindings/{binding_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke Binding
         * @description Revoke a live binding: its sender's next message admits nothing.
         */
        delete: operations["revoke_binding_v1_bridges_bindings__binding_id__delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/datasets/{name}/versions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create Version
         * @description A new version of the dataset with these cases (each an input and its
         *     assertions); the same cases again answer the version that holds them.
         */
        post: operations["create_version_v1_datasets__name__versions_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/datasets/{name}/cases": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Add Turns
         * @description A new version: the cases of ``base`` (default: the newest version) and one case
         *     per real turn, its input and the assertions given or derived from what it did.
         */
        post: operations["add_turns_v1_datasets__name__cases_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/datasets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Datasets
         * @description The tenant's datasets by name, each with its newest version.
         */
        get: operations["list_datasets_v1_datasets_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/datasets/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Dataset Versions
         * @description Every version of the dataset, newest first (their cases: ``…/versions/{v}``).
         */
        get: operations["dataset_versions_v1_datasets__name__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/datasets/{name}/versions/{version}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Dataset Version
         * @description One version with its cases (a ``never_appears`` secret sealed: never answered).
         */
        get: operations["dataset_version_v1_datasets__name__versions__version__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/experiments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Experiments
         * @description Newest first, of one dataset or agent when named; each with its figures.
         */
        get: operations["list_experiments_v1_experiments_get"];
        put?: never;
        /**
         * Create Experiment
         * @description Run a dataset version against an agent version: each case a real turn in its own
         *     session, through the ordinary submit path, on the ordinary workers.
         */
        post: operations["create_experiment_v1_experiments_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/experiments/{eid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get Experiment
         * @description Its state, its figures (pass rate, cost, tokens, latency, steps, failures by
         *     code), and each case's turn, assertions and judge.
         */
        get: operations["get_experiment_v1_experiments__eid__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/experiments/{eid}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel Experiment
         * @description No more cases are admitted and the running ones' turns are cancelled.
         */
        post: operations["cancel_experiment_v1_experiments__eid__cancel_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/experiments/{a}/compare/{b}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Compare Experiments
         * @description ``b`` against ``a``, case by case: fixed, regressed, the same; the assertions
         *     whose result changed; the judges' scores; the pass rate's and the cost's deltas.
         */
        get: operations["compare_experiments_v1_experiments__a__compare__b__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}/versions/{version}/promote": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Promote
         * @description Check the version against the agent's promotion policy (pass rates on the named
         *     datasets, no regression against the current default, every none-of assertion
         *     clean, optionally a recovery drill); record the outcome either way.
         */
        post: operations["promote_v1_agents__name__versions__version__promote_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}/promotions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Agent Promotions
         * @description The version the tenant's new turns get, the declared policy, and every promotion
         *     (accepted or refused), newest first.
         */
        get: operations["agent_promotions_v1_agents__name__promotions_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/turns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Search Turns
         * @description The tenant's turns the filters match, across its sessions, newest first; a
         *     parameter the route does not know is a 422.
         */
        get: operations["search_turns_v1_turns_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/limits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Limits */
        get: operations["get_limits_v1_limits_get"];
        /**
         * Put Limits
         * @description Declare the tenant's max_running (null clears it): at most that many of its turns
         *     run at once, the rest stay queued; workers take it up within a few seconds.
         */
        put: operations["put_limits_v1_limits_put"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * AgentInfo
         * @description An agent the API declares: its latest version, its default for the caller's
         *     tenant (the latest, or for a ``gated`` agent the version the tenant last promoted,
         *     before any the first declared: docs/evaluation.md) and every declared version,
         *     oldest first (the last is the latest).
         */
        AgentInfo: {
            /** Name */
            name: string;
            latest: components["schemas"]["VersionRef"];
            default: components["schemas"]["VersionRef"];
            /** Gated */
            gated: boolean;
            /** Versions */
            versions: components["schemas"]["DeclaredVersion"][];
        };
        /**
         * AgentList
         * @description ``GET /v1/agents``: the declared agents, by name.
         */
        AgentList: {
            /** Agents */
            agents: components["schemas"]["AgentInfo"][];
        };
        /**
         * AgentOverride
         * @description What the project changes of one agent: its instructions (replaced), its limits
         *     (lowered). Both optional.
         */
        AgentOverride: {
            /** Instructions */
            instructions?: string | null;
            limits?: components["schemas"]["LimitsOverride"] | null;
        };
        /**
         * AgentPromotions
         * @description ``GET /v1/agents/{name}/promotions``: the version new turns get, the declared
         *     policy (null: the agent is not gated, its latest declared version is the default)
         *     and the journal, newest first.
         */
        AgentPromotions: {
            /** Agent */
            agent: string;
            /** Gated */
            gated: boolean;
            /** Default Version */
            default_version: string;
            /** Policy */
            policy?: {
                [key: string]: unknown;
            } | null;
            /** Promotions */
            promotions: components["schemas"]["Promotion"][];
        };
        /**
         * AgentVersions
         * @description ``GET /v1/agents/{name}/versions``: every definition of the agent that is
         *     declared, has active turns of the caller's tenant, or is served by a live worker.
         */
        AgentVersions: {
            /** Name */
            name: string;
            /** Versions */
            versions: components["schemas"]["DefinitionUse"][];
        };
        /**
         * AnswersRequest
         * @description ``POST /v1/sessions/{sid}/turns/{tid}/inputs``: several answers at once.
         */
        AnswersRequest: {
            /** Answers */
            answers: components["schemas"]["OneAnswer"][];
        };
        /**
         * ApprovalPolicy
         * @description How an experiment's turns' approvals are answered: ``tools`` by name, every
         *     other by ``default``. Other requests (a question, credentials) are nobody's to
         *     answer in an experiment: the case's turn is cancelled.
         */
        ApprovalPolicy: {
            /**
             * Default
             * @default deny
             * @enum {string}
             */
            default?: "approve" | "deny";
            /** Tools */
            tools?: {
                [key: string]: "approve" | "deny";
            };
        };
        /** AssertionChange */
        AssertionChange: {
            /** Index */
            index: number;
            /** Kind */
            kind: string;
            /** A */
            a?: boolean | null;
            /** B */
            b?: boolean | null;
        };
        /**
         * AssertionResult
         * @description One assertion of a case, against the case's turn.
         */
        AssertionResult: {
            /** Index */
            index: number;
            /** Kind */
            kind: string;
            /**
             * Category
             * @enum {string}
             */
            category: "trajectory" | "output" | "none_of";
            /** Passed */
            passed: boolean;
            /** Detail */
            detail: string;
        };
        /**
         * AtMost
         * @description The turn took at most ``max`` steps, model calls, tool calls, tokens or USD.
         */
        AtMost: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "at_most";
            /**
             * Of
             * @enum {string}
             */
            of: "steps" | "model_calls" | "tool_calls" | "tokens" | "cost_usd";
            /** Max */
            max: number;
        };
        /**
         * Attachment
         * @description An attachment's metadata (``GET …/attachments/{aid}/content`` has its bytes). A
         *     turn's input may refer to it by ``attachment_id`` once it is ``ready``.
         */
        Attachment: {
            /** Session Id */
            session_id: string;
            /** Attachment Id */
            attachment_id: string;
            /**
             * State
             * @enum {string}
             */
            state: "pending" | "ready" | "deleting";
            /** Filename */
            filename: string;
            /** Content Type */
            content_type: string;
            /** Size */
            size: number;
            /** Sha256 */
            sha256: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
        };
        /**
         * AttachmentUpload
         * @description ``POST /v1/sessions/{sid}/attachments``.
         */
        AttachmentUpload: {
            /** Filename */
            filename: string;
            /**
             * Content Type
             * @enum {string}
             */
            content_type: "text/plain" | "text/markdown" | "text/csv" | "application/json" | "application/pdf" | "image/png" | "image/jpeg" | "image/gif" | "image/webp";
            /**
             * Data Base64
             * @description the content, base64 (standard, padded); at most 196608 bytes once decoded
             */
            data_base64: string;
        };
        /**
         * Attempt
         * @description One worker's run of the turn: ``fence`` is the lease token it committed under;
         *     ``kind`` ``start``, ``resume`` (after a wait) or ``takeover`` (the run before died
         *     or lost its lease); ``ended_at`` its last commit (null while it runs).
         */
        Attempt: {
            /** Attempt */
            attempt: number;
            /** Fence */
            fence: number;
            /** Seq */
            seq: number;
            /**
             * Started At
             * Format: date-time
             */
            started_at: string;
            /** Ended At */
            ended_at?: string | null;
            /**
             * Kind
             * @default start
             * @enum {string}
             */
            kind?: "start" | "resume" | "takeover";
        };
        /**
         * Binding
         * @description A participant binding of a chat bridge: messages from ``user`` in ``channel``
         *     (``*``: every channel) of ``workspace`` are admitted as ``subject`` with ``role``
         *     in the tenant, answered by ``agent``; a revoked one (``revoked_at``) admits
         *     nothing.
         */
        Binding: {
            /** Binding Id */
            binding_id: string;
            /** Bridge */
            bridge: string;
            /** Workspace */
            workspace: string;
            /** Channel */
            channel: string;
            /** User */
            user: string;
            /** Subject */
            subject: string;
            /** Role */
            role: string;
            /** Agent */
            agent: string;
            /** Reply Url */
            reply_url: string | null;
            /** Created By */
            created_by: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Revoked At */
            revoked_at: string | null;
        };
        /**
         * BindingList
         * @description ``GET /v1/bridges/bindings``: the tenant's bindings, live ones first.
         */
        BindingList: {
            /** Bindings */
            bindings: components["schemas"]["Binding"][];
        };
        /**
         * BindingRequest
         * @description ``POST /v1/bridges/bindings``.
         */
        BindingRequest: {
            /**
             * Bridge
             * @enum {string}
             */
            bridge: "slack" | "generic";
            /** Workspace */
            workspace: string;
            /** Channel */
            channel: string;
            /** User */
            user: string;
            /** Subject */
            subject?: string | null;
            /**
             * Role
             * @default member
             * @enum {string}
             */
            role?: "admin" | "member";
            /** Agent */
            agent: string;
            /** Reply Url */
            reply_url?: string | null;
        };
        /**
         * Budget
         * @description Per-turn bounds; each may only lower the agent's limits. All optional.
         */
        Budget: {
            /** Max Iterations */
            max_iterations?: number | null;
            /** Max Model Calls */
            max_model_calls?: number | null;
            /** Max Tool Calls */
            max_tool_calls?: number | null;
            /** Max Tokens */
            max_tokens?: number | null;
            /** Max Seconds */
            max_seconds?: number | null;
            /** Max Cost Usd */
            max_cost_usd?: number | null;
        };
        /**
         * Case
         * @description A case of a dataset version as it is stored and answered (a ``never_appears``
         *     sealed).
         */
        Case: {
            /** Case Id */
            case_id: string;
            /** Ordinal */
            ordinal: number;
            input: components["schemas"]["CaseInput"];
            /**
             * Assertions
             * @default []
             */
            assertions?: (components["schemas"]["ToolCalled"] | components["schemas"]["ToolNotCalled"] | components["schemas"]["ToolOrder"] | components["schemas"]["AtMost"] | components["schemas"]["Outcome"] | components["schemas"]["OutputValid"] | components["schemas"]["OutputContains"] | components["schemas"]["OutputMatches"] | components["schemas"]["OutputEquals"] | components["schemas"]["NeverCalled"] | components["schemas"]["NeverAppears"])[];
            source?: components["schemas"]["CaseSource"] | null;
        };
        /**
         * CaseAttachment
         * @description A file a case's turn is admitted with: uploaded to the case's session before its
         *     turn runs, under the id ``att-<position>`` (what the turn's input names). The
         *     content types and size an upload takes (api/service/attachments.py).
         */
        CaseAttachment: {
            /** Filename */
            filename: string;
            /** Content Type */
            content_type: string;
            /** Data Base64 */
            data_base64: string;
        };
        /**
         * CaseComparison
         * @description One case in two experiments: ``change`` is ``fixed`` (fails in a, passes in b),
         *     ``regressed``, ``same``, ``only_a`` or ``only_b``.
         */
        CaseComparison: {
            /** Case Id */
            case_id: string;
            /** A */
            a?: boolean | null;
            /** B */
            b?: boolean | null;
            /**
             * Change
             * @enum {string}
             */
            change: "fixed" | "regressed" | "same" | "only_a" | "only_b";
            /**
             * Assertions
             * @default []
             */
            assertions?: components["schemas"]["AssertionChange"][];
            /** Judge A */
            judge_a?: number | null;
            /** Judge B */
            judge_b?: number | null;
        };
        /**
         * CaseInput
         * @description What a case's turn is admitted with.
         */
        CaseInput: {
            /** Messages */
            messages: components["schemas"]["CaseMessage"][];
            /** Attachments */
            attachments?: components["schemas"]["CaseAttachment"][];
        };
        /**
         * CaseMessage
         * @description One message of a case's input, as a turn's input has it.
         */
        CaseMessage: {
            /**
             * Role
             * @enum {string}
             */
            role: "user" | "system";
            /** Content */
            content: string;
        };
        /**
         * CaseResult
         * @description A case of an experiment: its turn, its outcome and figures, each assertion's
         *     result, and the judge's beside them. ``passed``: every assertion passed (null until
         *     scored).
         */
        CaseResult: {
            /** Case Id */
            case_id: string;
            /** Ordinal */
            ordinal: number;
            /**
             * State
             * @enum {string}
             */
            state: "pending" | "running" | "scored";
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /** Turn State */
            turn_state?: ("queued" | "running" | "waiting" | "needs_reconciliation" | "completed" | "failed" | "cancelled") | null;
            /** Error Code */
            error_code?: string | null;
            /** Passed */
            passed?: boolean | null;
            /**
             * Assertions
             * @default []
             */
            assertions?: components["schemas"]["AssertionResult"][];
            /**
             * Cost Usd
             * @default 0
             */
            cost_usd?: number;
            /**
             * Tokens
             * @default 0
             */
            tokens?: number;
            /** Latency Ms */
            latency_ms?: number | null;
            /**
             * Steps
             * @default 0
             */
            steps?: number;
            /**
             * Model Calls
             * @default 0
             */
            model_calls?: number;
            /**
             * Tool Calls
             * @default 0
             */
            tool_calls?: number;
            /**
             * Recovered
             * @default 0
             */
            recovered?: number;
            /** Agent Version */
            agent_version?: string | null;
            judge?: components["schemas"]["JudgeResult"] | null;
        };
        /**
         * CaseSource
         * @description The real turn a case was made from (``POST /v1/datasets/{name}/cases``).
         */
        CaseSource: {
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
        };
        /**
         * CaseSpec
         * @description A case as a client writes it: an input and what its turn must show.
         *     ``case_id``: unique in the dataset version (absent: ``case-<position>``).
         */
        CaseSpec: {
            /** Case Id */
            case_id?: string | null;
            input: components["schemas"]["CaseInput"];
            /** Assertions */
            assertions?: (components["schemas"]["ToolCalled"] | components["schemas"]["ToolNotCalled"] | components["schemas"]["ToolOrder"] | components["schemas"]["AtMost"] | components["schemas"]["Outcome"] | components["schemas"]["OutputValid"] | components["schemas"]["OutputContains"] | components["schemas"]["OutputMatches"] | components["schemas"]["OutputEquals"] | components["schemas"]["NeverCalled"] | components["schemas"]["NeverAppears"])[];
        };
        /** Checks */
        Checks: {
            /**
             * Postgres
             * @enum {string}
             */
            postgres: "ok" | "failed";
            /**
             * Redis
             * @enum {string}
             */
            redis: "ok" | "failed";
        };
        /**
         * Comparison
         * @description ``GET /v1/experiments/{a}/compare/{b}``: side by side, case by case.
         */
        Comparison: {
            a: components["schemas"]["Experiment"];
            b: components["schemas"]["Experiment"];
            /** Pass Rate Delta */
            pass_rate_delta?: number | null;
            /** Cost Usd Delta */
            cost_usd_delta: number;
            /** Fixed */
            fixed: number;
            /** Regressed */
            regressed: number;
            /** Cases */
            cases: components["schemas"]["CaseComparison"][];
        };
        /**
         * DatasetCreate
         * @description ``POST /v1/datasets/{name}/versions``: the version's cases (as JSON Lines, one
         *     case a line, with ``Content-Type: application/x-ndjson``).
         */
        DatasetCreate: {
            /** Cases */
            cases: components["schemas"]["CaseSpec"][];
        };
        /** DatasetInfo */
        DatasetInfo: {
            /** Name */
            name: string;
            /** Latest Version */
            latest_version: number;
            /** Versions */
            versions: number;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
        };
        /**
         * DatasetList
         * @description ``GET /v1/datasets``: the tenant's datasets by name.
         */
        DatasetList: {
            /** Datasets */
            datasets: components["schemas"]["DatasetInfo"][];
        };
        /**
         * DatasetVersion
         * @description One immutable version of a dataset (``cases`` only where asked for).
         */
        DatasetVersion: {
            /** Dataset */
            dataset: string;
            /** Version */
            version: number;
            /** Cases Hash */
            cases_hash: string;
            /** Case Count */
            case_count: number;
            /** Created By */
            created_by: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Cases
             * @default []
             */
            cases?: components["schemas"]["Case"][];
        };
        /**
         * DatasetVersions
         * @description ``GET /v1/datasets/{name}``: every version, newest first (without cases).
         */
        DatasetVersions: {
            /** Dataset */
            dataset: string;
            /** Versions */
            versions: components["schemas"]["DatasetVersion"][];
        };
        /**
         * DeclaredVersion
         * @description A version the API's agents module declares: ``latest`` for the last one
         *     declared of its name, ``default`` for the one the caller's tenant's new turns get
         *     unless they name one, and what its turns do on a deploy.
         */
        DeclaredVersion: {
            /** Version */
            version: string;
            /** Definition Hash */
            definition_hash: string;
            /** Latest */
            latest: boolean;
            /** Default */
            default: boolean;
            /**
             * On Deploy
             * @enum {string}
             */
            on_deploy: "upgrade" | "pinned";
        };
        /**
         * DefinitionUse
         * @description One definition hash of an agent: whether the API declares it (``version`` is
         *     null when not), the caller's tenant's active turns on it by state, and the live
         *     workers serving it. Drained: no ``turns`` left.
         */
        DefinitionUse: {
            /** Definition Hash */
            definition_hash: string;
            /** Version */
            version: string | null;
            /** Declared */
            declared: boolean;
            /** Latest */
            latest: boolean;
            /** Default */
            default: boolean;
            /**
             * Turns
             * @default {}
             */
            turns?: {
                [key: string]: number;
            };
            /**
             * Workers
             * @default []
             */
            workers?: components["schemas"]["LiveWorker"][];
        };
        /**
         * EditedCall
         * @description A tool call an edited model answer asks for.
         */
        EditedCall: {
            /** Id */
            id?: string | null;
            /** Name */
            name: string;
            /**
             * Arguments
             * @default {}
             */
            arguments?: {
                [key: string]: unknown;
            };
        };
        /**
         * Event
         * @description One committed event of a session's journal: ``seq`` is per session, gap-free.
         */
        Event: {
            /** Seq */
            seq: number;
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string | null;
            type: components["schemas"]["EventType"];
            /** Step */
            step?: number | null;
            /** Data */
            data: {
                [key: string]: unknown;
            };
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
        };
        /**
         * EventPage
         * @description ``GET /v1/sessions/{sid}/events`` with ``Accept: application/json``.
         */
        EventPage: {
            /** Events */
            events: components["schemas"]["Event"][];
            /** Head Seq */
            head_seq: number;
            /** Earliest Seq */
            earliest_seq: number;
            /** Next After */
            next_after: number;
        };
        /**
         * EventType
         * @description One committed journal record's type.
         * @enum {string}
         */
        EventType: "turn.accepted" | "turn.started" | "model.completed" | "tool.completed" | "tool.interrupted" | "input.requested" | "input.resolved" | "context.compacted" | "turn.definition_changed" | "turn.paced" | "turn.cancel_requested" | "turn.needs_reconciliation" | "turn.completed" | "turn.failed" | "turn.cancelled";
        /**
         * Experiment
         * @description A dataset version run against an agent version through the submit path.
         */
        Experiment: {
            /** Experiment Id */
            experiment_id: string;
            /** Dataset */
            dataset: string;
            /** Dataset Version */
            dataset_version: number;
            /** Agent */
            agent: string;
            /** Agent Version */
            agent_version: string;
            /** Definition Hash */
            definition_hash: string;
            /**
             * State
             * @enum {string}
             */
            state: "running" | "completed" | "cancelled";
            approvals: components["schemas"]["ApprovalPolicy"];
            judge?: components["schemas"]["JudgeSpec"] | null;
            /** Concurrency */
            concurrency: number;
            /** Recovery */
            recovery: boolean;
            /** Created By */
            created_by: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Completed At */
            completed_at?: string | null;
            summary: components["schemas"]["ExperimentSummary"];
            /**
             * Results
             * @default []
             */
            results?: components["schemas"]["CaseResult"][];
        };
        /**
         * ExperimentList
         * @description ``GET /v1/experiments``: newest first.
         */
        ExperimentList: {
            /** Experiments */
            experiments: components["schemas"]["Experiment"][];
        };
        /**
         * ExperimentRequest
         * @description ``POST /v1/experiments``.
         */
        ExperimentRequest: {
            /** Dataset */
            dataset: string;
            /** Dataset Version */
            dataset_version?: number | null;
            /** Agent */
            agent: string;
            /** Agent Version */
            agent_version?: string | null;
            approvals?: components["schemas"]["ApprovalPolicy"];
            judge?: components["schemas"]["JudgeSpec"] | null;
            /**
             * Concurrency
             * @default 4
             */
            concurrency?: number;
            /**
             * Recovery
             * @default false
             */
            recovery?: boolean;
        };
        /**
         * ExperimentSummary
         * @description An experiment's figures over its scored cases.
         */
        ExperimentSummary: {
            /** Cases */
            cases: number;
            /** Scored */
            scored: number;
            /** Passed */
            passed: number;
            /** Failed */
            failed: number;
            /** Pass Rate */
            pass_rate?: number | null;
            /** None Of Clean */
            none_of_clean?: boolean | null;
            /** Cost Usd */
            cost_usd: number;
            /** Tokens */
            tokens: number;
            /** Steps */
            steps: number;
            /** Latency Ms Mean */
            latency_ms_mean?: number | null;
            /** Latency Ms Max */
            latency_ms_max?: number | null;
            /** Recovered */
            recovered: number;
            /** Failures */
            failures: {
                [key: string]: number;
            };
            /** Judge Cost Usd */
            judge_cost_usd: number;
            /** Judge Mean */
            judge_mean?: number | null;
            /**
             * Judged
             * @default 0
             */
            judged?: number;
        };
        /**
         * Feedback
         * @description A person's score of a turn (``step`` null) or of one of its committed steps:
         *     ``kind`` thumbs (1 up, 0 down, on [0, 1]) or score (on ``scale``); the note as its
         *     hash; the turn's trace id and the agent version it ran on.
         */
        Feedback: {
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /** Step */
            step?: number | null;
            /** Subject */
            subject: string;
            /**
             * Kind
             * @enum {string}
             */
            kind: "thumbs" | "score";
            /** Score */
            score: number;
            /** Scale */
            scale: number[];
            /** Note Hash */
            note_hash?: string | null;
            /** Trace Id */
            trace_id: string;
            /** Agent */
            agent: string;
            /** Agent Version */
            agent_version?: string | null;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
        };
        /**
         * FeedbackRequest
         * @description ``POST /v1/sessions/{sid}/turns/{tid}/feedback``: exactly one of ``thumbs`` and
         *     ``score``.
         */
        FeedbackRequest: {
            /** Thumbs */
            thumbs?: ("up" | "down") | null;
            /** Score */
            score?: number | null;
            /**
             * Scale
             * @default [
             *       1,
             *       5
             *     ]
             */
            scale?: [
                number,
                number
            ];
            /** Step */
            step?: number | null;
            /** Note */
            note?: string | null;
        };
        /**
         * FeedbackSummary
         * @description ``GET /v1/agents/{name}/feedback``: the tenant's feedback per version.
         */
        FeedbackSummary: {
            /** Agent */
            agent: string;
            /** Versions */
            versions: components["schemas"]["VersionFeedback"][];
        };
        /**
         * Fork
         * @description ``POST /v1/sessions/{sid}/fork``: the new session. Its journal is the source's
         *     events up to ``forked_from.seq`` (same seqs and turn ids); ``cut_turns`` were active
         *     at that seq and are cancelled in the fork (error ``fork_cut``); empty on a replay.
         */
        Fork: {
            /** Session Id */
            session_id: string;
            /** Agent */
            agent: string;
            /** Head Seq */
            head_seq: number;
            /** Earliest Seq */
            earliest_seq: number;
            forked_from: components["schemas"]["ForkedFrom"];
            /**
             * Cut Turns
             * @default []
             */
            cut_turns?: string[];
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
        };
        /**
         * ForkRequest
         * @description ``POST /v1/sessions/{sid}/fork``.
         */
        ForkRequest: {
            /** At Seq */
            at_seq: number;
            /** Session Id */
            session_id?: string | null;
        };
        /**
         * ForkedFrom
         * @description Where a forked session came from: the source session and the seq it was cut at.
         */
        ForkedFrom: {
            /** Session Id */
            session_id: string;
            /** Seq */
            seq: number;
        };
        /**
         * FromTurns
         * @description ``POST /v1/datasets/{name}/cases``: a new version, the cases of ``base`` (absent:
         *     the newest version; 0: none) followed by one case per turn.
         */
        FromTurns: {
            /** Turns */
            turns: components["schemas"]["TurnCase"][];
            /** Base */
            base?: number | null;
        };
        /** Health */
        Health: {
            /**
             * Status
             * @constant
             */
            status: "ok";
        };
        /**
         * Held
         * @description Why a runnable turn does not run: ``definition_unavailable``, no live worker
         *     serves ``definition_hash`` (a pinned turn whose version is not deployed).
         */
        Held: {
            /** Reason */
            reason: string;
            /** Definition Hash */
            definition_hash: string;
        };
        /**
         * InboxItem
         * @description One open request the caller may answer: the turn it parks and the request, with
         *     its binding (``answered_by``) and expiry.
         */
        InboxItem: {
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /** Agent */
            agent: string;
            /**
             * State
             * @enum {string}
             */
            state: "queued" | "running" | "waiting" | "needs_reconciliation" | "completed" | "failed" | "cancelled";
            request: components["schemas"]["PendingInput"];
        };
        /**
         * InboxPage
         * @description ``GET /v1/inbox?state=open``: by session and admission; ``next`` is the
         *     ``after`` of the next page (null: the last).
         */
        InboxPage: {
            /** Inputs */
            inputs: components["schemas"]["InboxItem"][];
            /** Next */
            next?: string | null;
        };
        /**
         * InputMessage
         * @description One message of a turn's input.
         */
        InputMessage: {
            /**
             * Role
             * @enum {string}
             */
            role: "user" | "system";
            /** Content */
            content: string;
        };
        /**
         * JudgeResult
         * @description A judge's score of a case: beside the assertions, never instead of them.
         */
        JudgeResult: {
            /**
             * State
             * @enum {string}
             */
            state: "pending" | "running" | "done" | "failed";
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /** Verdict */
            verdict?: ("pass" | "fail") | null;
            /** Score */
            score?: number | null;
            /** Reason */
            reason?: string | null;
            /** Error */
            error?: string | null;
            /**
             * Cost Usd
             * @default 0
             */
            cost_usd?: number;
        };
        /**
         * JudgeSpec
         * @description A judge agent scores each case after its turn ended (its own turn, its cost
         *     counted apart); ``rubric``: what it is told to look for.
         */
        JudgeSpec: {
            /** Agent */
            agent: string;
            /** Version */
            version?: string | null;
            /** Rubric */
            rubric?: string | null;
        };
        /**
         * LimitsOverride
         * @description Bounds of the agent's turns in the project; each may only lower the agent's own.
         */
        LimitsOverride: {
            /** Max Iterations */
            max_iterations?: number | null;
            /** Max Model Calls */
            max_model_calls?: number | null;
            /** Max Tool Calls */
            max_tool_calls?: number | null;
            /** Max Tokens */
            max_tokens?: number | null;
            /** Max Seconds */
            max_seconds?: number | null;
        };
        /**
         * LimitsRequest
         * @description ``PUT /v1/limits``: the tenant's max_running; null clears it (the deployment's
         *     ``TURNKEEP_MAX_RUNNING_PER_TENANT`` then applies, if set).
         */
        LimitsRequest: {
            /** Max Running */
            max_running: number | null;
        };
        /**
         * LiveWorker
         * @description A live worker process advertising a definition; ``seen_at``: unix seconds.
         */
        LiveWorker: {
            /** Worker */
            worker: string;
            /** Host */
            host: string;
            /** Seen At */
            seen_at: number;
        };
        /**
         * Message
         * @description One message of the provider-neutral transcript (``role``, ``content``, and a tool
         *     call's or result's fields), with the event it came from.
         */
        Message: {
            /** Role */
            role: string;
            /** Turn Id */
            turn_id: string;
            /** Seq */
            seq: number;
        } & {
            [key: string]: unknown;
        };
        /**
         * MessagePage
         * @description ``GET /v1/sessions/{sid}/messages``: ``next`` is null on the last page.
         */
        MessagePage: {
            /** Messages */
            messages: components["schemas"]["Message"][];
            /** Next */
            next: number | null;
            /** Head Seq */
            head_seq: number;
            /** Earliest Seq */
            earliest_seq: number;
        };
        /**
         * Missed
         * @description What a tick does that passed while nothing fired it (everything was down).
         * @enum {string}
         */
        Missed: "run_once" | "skip";
        /**
         * ModelAnswerEdit
         * @description What the model call of ``from_step`` answers instead.
         */
        ModelAnswerEdit: {
            /**
             * Content
             * @default
             */
            content?: string;
            /**
             * Tool Calls
             * @default []
             */
            tool_calls?: components["schemas"]["EditedCall"][];
        };
        /**
         * Multitask
         * @description The admission strategy for a session with an active (non-terminal) turn.
         * @enum {string}
         */
        Multitask: "enqueue" | "reject" | "interrupt";
        /**
         * NeverAppears
         * @description None-of: a secret appears nowhere in the turn's journal or output. Written with
         *     ``secret``; stored and answered sealed (``salt``, ``digest``, ``length``), the
         *     secret itself never kept.
         */
        NeverAppears: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "never_appears";
            /** Secret */
            secret?: string | null;
            /** Salt */
            salt?: string | null;
            /** Digest */
            digest?: string | null;
            /** Length */
            length?: number | null;
        };
        /**
         * NeverCalled
         * @description None-of: the tool never ran (security: a tool this case must never reach).
         */
        NeverCalled: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "never_called";
            /** Tool */
            tool: string;
        };
        /**
         * Node
         * @description A workflow node as its turn stands.
         */
        Node: {
            /** Run Id */
            run_id: string;
            /** Node Id */
            node_id: string;
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /**
             * State
             * @enum {string}
             */
            state: "running" | "waiting" | "done";
            turn_state: components["schemas"]["TurnState"];
            pending_input?: components["schemas"]["PendingInput"] | null;
            /** Result */
            result: {
                [key: string]: unknown;
            } | null;
            /** Error */
            error: {
                [key: string]: unknown;
            } | null;
            /** Agent */
            agent: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            webhook: components["schemas"]["Webhook"] | null;
        };
        /**
         * NodeRequest
         * @description ``POST /v1/workflows/{run_id}/nodes/{node_id}/turns``: a turn's body and an
         *     optional ``callback_url`` for the completion webhook.
         */
        NodeRequest: {
            /** Agent */
            agent: string;
            /** Agent Version */
            agent_version?: string | null;
            /** Input */
            input: components["schemas"]["InputMessage"][];
            /** Output Schema */
            output_schema?: {
                [key: string]: unknown;
            } | null;
            budget?: components["schemas"]["Budget"] | null;
            /**
             * @default enqueue
             * @enum {unknown}
             */
            multitask?: components["schemas"]["Multitask"];
            /** Priority */
            priority?: number | null;
            /** Expires After */
            expires_after?: number | null;
            /**
             * Callback Url
             * @description an http(s) URL for the completion webhook (needs TURNKEEP_WEBHOOK_SECRET)
             */
            callback_url?: string | null;
            /** Metadata */
            metadata?: {
                [key: string]: string;
            } | null;
            /** Session Metadata */
            session_metadata?: {
                [key: string]: string;
            } | null;
            /** Attachments */
            attachments?: string[] | null;
            /** Project */
            project?: string | null;
        };
        /**
         * OneAnswer
         * @description An answer to one request of the turn's wait.
         */
        OneAnswer: {
            /** Request Id */
            request_id: string;
            /** Response */
            response: {
                [key: string]: unknown;
            };
        };
        /**
         * Outcome
         * @description The turn ended ``state`` (and, given, with error ``code``).
         */
        Outcome: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "outcome";
            /**
             * State
             * @enum {string}
             */
            state: "completed" | "failed" | "cancelled";
            /** Code */
            code?: string | null;
        };
        /**
         * OutputContains
         * @description The final answer's text contains ``text``.
         */
        OutputContains: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "output_contains";
            /** Text */
            text: string;
            /**
             * Ignore Case
             * @default false
             */
            ignore_case?: boolean;
        };
        /**
         * OutputEquals
         * @description The output (the parsed JSON of a turn with an output schema, else the text)
         *     equals ``value``.
         */
        OutputEquals: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "output_equals";
            /** Value */
            value: unknown;
        };
        /**
         * OutputMatches
         * @description The final answer's text has a match of the regular expression ``pattern``.
         */
        OutputMatches: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "output_matches";
            /** Pattern */
            pattern: string;
        };
        /**
         * OutputValid
         * @description The turn completed with an output that validates ``output_schema`` (absent: the
         *     schema the turn was admitted with; with none, the output must be JSON).
         */
        OutputValid: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "output_valid";
            /** Output Schema */
            output_schema?: {
                [key: string]: unknown;
            } | null;
        };
        /**
         * Overrides
         * @description A project's overrides, by agent name (declared agents only).
         */
        Overrides: {
            /** Agents */
            agents?: {
                [key: string]: components["schemas"]["AgentOverride"];
            };
        };
        /**
         * Paced
         * @description Why a running turn's model call waits: its provider rate limits' slot comes at
         *     ``until`` (``limit``: the declared limit's name; ``reason``: ``requests``,
         *     ``tokens`` or ``provider``). It holds no worker meanwhile (docs/flow-control.md).
         */
        Paced: {
            /**
             * Until
             * Format: date-time
             */
            until: string;
            /** Limit */
            limit: string;
            /** Reason */
            reason: string;
            /** Step */
            step?: number | null;
        };
        /**
         * PendingInput
         * @description The open input request of a parked turn: what a person needs to answer it at
         *     ``POST /v1/sessions/{sid}/turns/{tid}/inputs/{request_id}``.
         */
        PendingInput: {
            /** Request Id */
            request_id: string;
            /**
             * Kind
             * @enum {string}
             */
            kind: "approval" | "question" | "reconciliation" | "budget_extension" | "external_auth" | "delegation" | "timer";
            /** Step */
            step?: number | null;
            /** At Seq */
            at_seq?: number | null;
            /** Tool */
            tool?: {
                [key: string]: unknown;
            } | null;
            /** Call Id */
            call_id?: string | null;
            /** Arguments */
            arguments?: {
                [key: string]: unknown;
            } | null;
            /** Arguments Hash */
            arguments_hash?: string | null;
            /** Response Schema */
            response_schema?: {
                [key: string]: unknown;
            } | null;
            /** Response Schema Hash */
            response_schema_hash?: string | null;
            /** Expires At */
            expires_at?: string | null;
            /** Answered By */
            answered_by?: {
                [key: string]: unknown;
            } | null;
            /** Detail */
            detail?: {
                [key: string]: unknown;
            } | null;
            /** Resolved */
            resolved?: unknown;
        } & {
            [key: string]: unknown;
        };
        /**
         * Project
         * @description A project: the caller's own (nobody else sees it or its sessions), and what it
         *     changes of agents for its sessions' turns: ``overrides.agents.<name>`` may replace
         *     ``instructions`` and lower ``limits``. A turn pins its agent's entry at admission.
         */
        Project: {
            /** Project Id */
            project_id: string;
            /** Owner */
            owner: string;
            /** Overrides */
            overrides: {
                [key: string]: unknown;
            };
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
        };
        /**
         * ProjectCreate
         * @description ``POST /v1/projects``.
         */
        ProjectCreate: {
            /** Project Id */
            project_id?: string | null;
            overrides?: components["schemas"]["Overrides"];
        };
        /**
         * ProjectPage
         * @description ``GET /v1/projects``: the caller's projects, newest first; ``next`` is the cursor
         *     of the next page (``?after=``), null on the last.
         */
        ProjectPage: {
            /** Projects */
            projects: components["schemas"]["Project"][];
            /** Next */
            next: string | null;
        };
        /**
         * ProjectUpdate
         * @description ``PATCH /v1/projects/{pid}``: the new overrides, replacing the old ones.
         */
        ProjectUpdate: {
            overrides: components["schemas"]["Overrides"];
        };
        /**
         * Promotion
         * @description An entry of an agent's promotion journal: accepted (the version is the default
         *     for the tenant's new turns from then on) or refused, who, when, what was checked.
         */
        Promotion: {
            /** Agent */
            agent: string;
            /** Seq */
            seq: number;
            /** Version */
            version: string;
            /** Definition Hash */
            definition_hash: string;
            /** Accepted */
            accepted: boolean;
            /** Default Before */
            default_before?: string | null;
            /** By */
            by: string;
            /**
             * At
             * Format: date-time
             */
            at: string;
            /** Checks */
            checks: components["schemas"]["PromotionCheck"][];
            /** Experiments */
            experiments: string[];
        };
        /**
         * PromotionCheck
         * @description One check of a promotion policy (runtime/evaluation/gate.py).
         */
        PromotionCheck: {
            /** Check */
            check: string;
            /** Dataset */
            dataset?: string | null;
            /** Passed */
            passed: boolean;
            /** Detail */
            detail: string;
            /**
             * Experiments
             * @default []
             */
            experiments?: string[];
        };
        /** Ready */
        Ready: {
            /**
             * Status
             * @constant
             */
            status: "ready";
            checks: components["schemas"]["Checks"];
        };
        /**
         * Replacement
         * @description The outcome ``from_step`` starts from: one of the two.
         */
        Replacement: {
            tool_result?: components["schemas"]["ToolResultEdit"] | null;
            model_answer?: components["schemas"]["ModelAnswerEdit"] | null;
        };
        /**
         * RerunOf
         * @description Which turn a rerun re-runs and how (POST .../turns/{tid}/rerun): the steps
         *     before ``from_step`` are the source's outcomes, reused; ``edited`` says which
         *     outcome of ``from_step`` was replaced (``tool_result``, ``model_answer``), if any.
         */
        RerunOf: {
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /** From Step */
            from_step: number;
            /** Edited */
            edited?: ("tool_result" | "model_answer") | null;
            /** By */
            by: string;
        };
        /**
         * RerunRequest
         * @description ``POST /v1/sessions/{sid}/turns/{tid}/rerun``.
         */
        RerunRequest: {
            /** From Step */
            from_step: number;
            replace?: components["schemas"]["Replacement"] | null;
            /** Turn Id */
            turn_id?: string | null;
            /**
             * Fork
             * @default false
             */
            fork?: boolean;
            /** Session Id */
            session_id?: string | null;
        };
        /**
         * Schedule
         * @description A schedule: its agent's turn with ``input`` on every tick (``cron`` in
         *     ``timezone``, every ``every_seconds``, or once ``at`` a time), in ``session_id`` or
         *     a new session per tick; ``next_at`` is the tick it waits for (null: a one-shot that
         *     fired), ``fired`` how many turns it admitted, ``skipped`` how many ticks it passed
         *     over (more than the grace late, or their agent or session gone); ``origin`` the
         *     turn and step whose tool call asked for it (a follow-up turn), null for one made
         *     over the API.
         */
        Schedule: {
            /** Schedule Id */
            schedule_id: string;
            /** Agent */
            agent: string;
            /** Cron */
            cron?: string | null;
            /** Every Seconds */
            every_seconds?: number | null;
            /** At */
            at?: string | null;
            /** Timezone */
            timezone: string;
            /** Input */
            input: {
                [key: string]: unknown;
            }[];
            /** Session Id */
            session_id?: string | null;
            /**
             * Missed
             * @enum {string}
             */
            missed: "run_once" | "skip";
            /** Paused */
            paused: boolean;
            /** Paused Reason */
            paused_reason?: string | null;
            /** Next At */
            next_at?: string | null;
            /** Last Tick */
            last_tick?: string | null;
            /** Fired */
            fired: number;
            /**
             * Skipped
             * @default 0
             */
            skipped?: number;
            /** Created By */
            created_by: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Origin */
            origin?: {
                [key: string]: unknown;
            } | null;
        };
        /**
         * SchedulePage
         * @description ``GET /v1/schedules``: by id; ``next`` is the ``after`` of the next page.
         */
        SchedulePage: {
            /** Schedules */
            schedules: components["schemas"]["Schedule"][];
            /** Next */
            next?: string | null;
        };
        /**
         * ScheduleRequest
         * @description ``POST /v1/schedules``: exactly one of ``cron`` and ``every_seconds``.
         */
        ScheduleRequest: {
            /** Schedule Id */
            schedule_id?: string | null;
            /** Agent */
            agent: string;
            /** Input */
            input: components["schemas"]["InputMessage"][];
            /** Cron */
            cron?: string | null;
            /** Every Seconds */
            every_seconds?: number | null;
            /** At */
            at?: string | null;
            /**
             * Timezone
             * @default UTC
             */
            timezone?: string;
            /** Session Id */
            session_id?: string | null;
            /** @default run_once */
            missed?: components["schemas"]["Missed"];
        };
        /**
         * Session
         * @description A session's summary: ``state`` is its active turn's, ``idle`` without one.
         */
        Session: {
            /** Session Id */
            session_id: string;
            /** Agent */
            agent: string;
            /** Head Seq */
            head_seq: number;
            /** State */
            state: "idle" | ("queued" | "running" | "waiting" | "needs_reconciliation" | "completed" | "failed" | "cancelled");
            /** Active Turn */
            active_turn: string | null;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            /** Project */
            project?: string | null;
            /**
             * Usage
             * @default {}
             */
            usage?: {
                [key: string]: number;
            };
            /** Expires After */
            expires_after?: number | null;
            /** Expires At */
            expires_at?: string | null;
            /**
             * Metadata
             * @default {}
             */
            metadata?: {
                [key: string]: string;
            };
        };
        /**
         * SessionPage
         * @description ``GET /v1/sessions``: the tenant's sessions, newest first; ``next`` is the
         *     cursor of the next page (``?after=``), null on the last.
         */
        SessionPage: {
            /** Sessions */
            sessions: components["schemas"]["Session"][];
            /** Next */
            next: string | null;
        };
        /**
         * Step
         * @description One model call, tool call or compaction of the turn, as committed.
         *
         *     ``duration_ms`` is the call's own time where the worker recorded it, else the time
         *     since the turn's previous commit; ``retries`` the provider retries of a model call
         *     or the re-runs of a tool; ``cost`` the call's price where a price is known.
         */
        Step: {
            /** Step */
            step: number | null;
            /**
             * Kind
             * @enum {string}
             */
            kind: "model" | "tool" | "compaction";
            /** Name */
            name: string | null;
            /** Seq */
            seq: number;
            /** Attempt */
            attempt: number;
            /** Fence */
            fence: number;
            /** Started At */
            started_at?: string | null;
            /**
             * Committed At
             * Format: date-time
             */
            committed_at: string;
            /** Duration Ms */
            duration_ms: number | null;
            /** Retries */
            retries: number;
            /**
             * Outcome
             * @enum {string}
             */
            outcome: "ok" | "error" | "interrupted";
            /** Usage */
            usage: {
                [key: string]: number;
            } | null;
            /** Cost */
            cost: number | null;
            /**
             * Origin
             * @default live
             * @enum {string}
             */
            origin?: "live" | "reused" | "edited";
        };
        /**
         * StreamToken
         * @description A token for ``?stream_token=`` on the session's events, and when it expires.
         */
        StreamToken: {
            /** Token */
            token: string;
            /**
             * Expires At
             * Format: date-time
             */
            expires_at: string;
        };
        /**
         * TenantMaxRunning
         * @description A tenant's max_running (docs/flow-control.md): at most this many of its turns
         *     running at once, the rest queued.
         */
        TenantMaxRunning: {
            /** Max Running */
            max_running: number | null;
            /** Effective Max Running */
            effective_max_running: number | null;
            /** Updated By */
            updated_by?: string | null;
            /** Updated At */
            updated_at?: string | null;
            /**
             * May Declare
             * @default false
             */
            may_declare?: boolean;
        };
        /**
         * Timeline
         * @description ``GET /v1/sessions/{sid}/turns/{tid}/timeline``: a turn's steps, attempts and
         *     waits in journal order, without message content.
         */
        Timeline: {
            turn: components["schemas"]["Turn"];
            /** Attempts */
            attempts: components["schemas"]["Attempt"][];
            /** Steps */
            steps: components["schemas"]["Step"][];
            /** Waits */
            waits: components["schemas"]["Wait"][];
            /** Elapsed Ms */
            elapsed_ms: number;
        };
        /**
         * Tombstone
         * @description What stays of a deleted session (``DELETE /v1/sessions/{sid}``, docs/erasure.md):
         *     who deleted it and when, ``reason`` ``deleted`` or ``expired`` (its TTL), and
         *     ``erased_at`` once everything it held is gone (null while its erasure runs);
         *     ``erased_rows`` counts the rows deleted so far.
         */
        Tombstone: {
            /** Session Id */
            session_id: string;
            /**
             * Reason
             * @enum {string}
             */
            reason: "deleted" | "expired";
            /** Deleted By */
            deleted_by?: string | null;
            /**
             * Deleted At
             * Format: date-time
             */
            deleted_at: string;
            /** Erased At */
            erased_at?: string | null;
            /** Erased Rows */
            erased_rows: number;
        };
        /**
         * ToolCalled
         * @description The tool was called at least ``times`` times (with ``arguments``: that many of
         *     its calls' arguments validate that JSON Schema).
         */
        ToolCalled: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "tool_called";
            /** Tool */
            tool: string;
            /**
             * Times
             * @default 1
             */
            times?: number;
            /** Arguments */
            arguments?: {
                [key: string]: unknown;
            } | null;
        };
        /**
         * ToolNotCalled
         * @description The tool was never called.
         */
        ToolNotCalled: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "tool_not_called";
            /** Tool */
            tool: string;
        };
        /**
         * ToolOrder
         * @description These tools were called in this order (other calls may come between).
         */
        ToolOrder: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            kind: "tool_order";
            /** Tools */
            tools: string[];
        };
        /**
         * ToolResultEdit
         * @description What the tool call of ``from_step`` answers instead.
         */
        ToolResultEdit: {
            /** Content */
            content: string;
            /**
             * Is Error
             * @default false
             */
            is_error?: boolean;
        };
        /**
         * Turn
         * @description A turn as it stands (never the tenant, the input or its hash).
         */
        Turn: {
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /**
             * State
             * @enum {string}
             */
            state: "queued" | "running" | "waiting" | "needs_reconciliation" | "completed" | "failed" | "cancelled";
            /** Agent */
            agent: string;
            /** Attempt */
            attempt: number;
            /** Result */
            result?: {
                [key: string]: unknown;
            } | null;
            /** Error */
            error?: {
                [key: string]: unknown;
            } | null;
            /** Accepted Seq */
            accepted_seq: number;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            /**
             * Cancel Requested
             * @default false
             */
            cancel_requested?: boolean;
            pending_input?: components["schemas"]["PendingInput"] | null;
            /**
             * Pending Inputs
             * @default []
             */
            pending_inputs?: components["schemas"]["PendingInput"][];
            /**
             * Usage
             * @default {}
             */
            usage?: {
                [key: string]: number;
            };
            /** Agent Version */
            agent_version?: string | null;
            rerun_of?: components["schemas"]["RerunOf"] | null;
            /**
             * Metadata
             * @default {}
             */
            metadata?: {
                [key: string]: string;
            };
            held?: components["schemas"]["Held"] | null;
            paced?: components["schemas"]["Paced"] | null;
        };
        /**
         * TurnCase
         * @description A real turn of the tenant, as a case: its input, and ``assertions`` given and
         *     derived (``derive``: ``trajectory``, ``output``: runtime/evaluation/derive.py).
         */
        TurnCase: {
            /** Session Id */
            session_id: string;
            /** Turn Id */
            turn_id: string;
            /** Case Id */
            case_id?: string | null;
            /** Assertions */
            assertions?: (components["schemas"]["ToolCalled"] | components["schemas"]["ToolNotCalled"] | components["schemas"]["ToolOrder"] | components["schemas"]["AtMost"] | components["schemas"]["Outcome"] | components["schemas"]["OutputValid"] | components["schemas"]["OutputContains"] | components["schemas"]["OutputMatches"] | components["schemas"]["OutputEquals"] | components["schemas"]["NeverCalled"] | components["schemas"]["NeverAppears"])[];
            /** Derive */
            derive?: ("trajectory" | "output")[];
        };
        /**
         * TurnPage
         * @description ``GET /v1/sessions/{sid}/turns``: the session's turns, newest first; ``next`` is
         *     the cursor of the next page (``?after=``), null on the last.
         */
        TurnPage: {
            /** Turns */
            turns: components["schemas"]["Turn"][];
            /** Next */
            next: string | null;
        };
        /**
         * TurnRequest
         * @description ``POST /v1/sessions/{sid}/turns``.
         */
        TurnRequest: {
            /** Agent */
            agent: string;
            /** Agent Version */
            agent_version?: string | null;
            /** Input */
            input: components["schemas"]["InputMessage"][];
            /** Output Schema */
            output_schema?: {
                [key: string]: unknown;
            } | null;
            budget?: components["schemas"]["Budget"] | null;
            /** @default enqueue */
            multitask?: components["schemas"]["Multitask"];
            /** Priority */
            priority?: number | null;
            /** Expires After */
            expires_after?: number | null;
            /**
             * Callback Url
             * @description an http(s) URL for the completion webhook (needs TURNKEEP_WEBHOOK_SECRET)
             */
            callback_url?: string | null;
            /** Metadata */
            metadata?: {
                [key: string]: string;
            } | null;
            /** Session Metadata */
            session_metadata?: {
                [key: string]: string;
            } | null;
            /** Attachments */
            attachments?: string[] | null;
            /** Project */
            project?: string | null;
        };
        /**
         * TurnState
         * @description Where a turn is. Terminal states never change.
         * @enum {string}
         */
        TurnState: "queued" | "running" | "waiting" | "needs_reconciliation" | "completed" | "failed" | "cancelled";
        /**
         * TurnUpgrade
         * @description ``POST …/turns/{tid}/upgrade``: the turn moves to the newest version of its
         *     agent at its next safe point, pinned or not.
         */
        TurnUpgrade: {
            /** Turn Id */
            turn_id: string;
            /** Upgrade Requested */
            upgrade_requested: boolean;
        };
        /**
         * VersionFeedback
         * @description The feedback on one version of an agent.
         */
        VersionFeedback: {
            /** Version */
            version?: string | null;
            /** Count */
            count: number;
            /** Thumbs Up */
            thumbs_up: number;
            /** Thumbs Down */
            thumbs_down: number;
            /** Mean Score */
            mean_score: number;
        };
        /**
         * VersionRef
         * @description One version of an agent and the hash of its definition.
         */
        VersionRef: {
            /** Version */
            version: string;
            /** Definition Hash */
            definition_hash: string;
        };
        /**
         * VersionUpgrade
         * @description ``POST /v1/agents/{name}/versions/{hash}/upgrade``: how many of the tenant's
         *     active turns on that definition were flagged to move.
         */
        VersionUpgrade: {
            /** Requested */
            requested: number;
        };
        /**
         * Wait
         * @description A typed input request of the turn and how it was answered.
         */
        Wait: {
            /** Request Id */
            request_id: string;
            /**
             * Kind
             * @enum {string}
             */
            kind: "approval" | "question" | "reconciliation" | "budget_extension" | "external_auth" | "delegation" | "timer";
            /** Step */
            step: number | null;
            /** Tool */
            tool: string | null;
            /** Requested Seq */
            requested_seq: number;
            /**
             * Requested At
             * Format: date-time
             */
            requested_at: string;
            /** Resolved At */
            resolved_at: string | null;
            /** Waited Ms */
            waited_ms: number | null;
            /** Outcome */
            outcome: string | null;
            /** Answered By */
            answered_by: string | null;
        };
        /**
         * Webhook
         * @description The completion webhook of a workflow node and its delivery.
         */
        Webhook: {
            /** Url */
            url: string;
            /** Delivery Id */
            delivery_id: string;
            /**
             * Status
             * @enum {string}
             */
            status: "pending" | "delivered";
            /** Attempts */
            attempts: number;
            /** Delivered At */
            delivered_at: string | null;
            /** Next Attempt At */
            next_attempt_at: string | null;
            /** Last Status */
            last_status: number | null;
            /** Last Error */
            last_error: string | null;
        };
        /**
         * Problem
         * @description An RFC 9457 problem (``application/problem+json``): every error the API answers.
         *     ``code`` is stable; some codes add fields (listed, all optional). The body never
         *     carries tenant data, ids, tokens or request input.
         */
        Problem: {
            /** Type */
            type: string;
            /** Title */
            title: string;
            /** Status */
            status: number;
            /** Code */
            code: string;
            /** Detail */
            detail: string;
            /**
             * Errors
             * @default null
             */
            errors?: {
                [key: string]: unknown;
            }[] | null;
            /**
             * Cursor
             * @default null
             */
            cursor?: number | null;
            /**
             * Head Seq
             * @default null
             */
            head_seq?: number | null;
            /**
             * Requested
             * @default null
             */
            requested?: number | null;
            /**
             * Earliest
             * @default null
             */
            earliest?: number | null;
            /**
             * Latest
             * @default null
             */
            latest?: number | null;
            /**
             * Quota
             * @default null
             */
            quota?: string | null;
            /**
             * Limit
             * @default null
             */
            limit?: number | null;
            /**
             * Deleted At
             * @default null
             */
            deleted_at?: string | null;
            /**
             * Erased At
             * @default null
             */
            erased_at?: string | null;
            /** @default null */
            checks?: components["schemas"]["Checks"] | null;
            /**
             * Seq
             * @default null
             */
            seq?: number | null;
            /**
             * Failed
             * @default null
             */
            failed?: {
                [key: string]: unknown;
            }[] | null;
        };
        /**
         * Delta
         * @description A live piece of a model's text (``event: model.delta``): speculative, never
         *     numbered, never replayed; the committed ``model.completed`` holds what counts.
         */
        Delta: {
            /**
             * Turn Id
             * @default null
             */
            turn_id?: string | null;
            /**
             * Step
             * @default null
             */
            step?: number | null;
            /**
             * Text
             * @default
             */
            text?: string;
        };
        /**
         * StreamResume
         * @description ``event: stream.resume``, a stream's final frame when its reader fell too far
         *     behind the live channel: reconnect with ``Last-Event-ID: <after>``, the last seq it
         *     delivered.
         */
        StreamResume: {
            /**
             * Reason
             * @constant
             */
            reason: "lagging";
            /** After */
            after: number;
        };
        /**
         * StreamResyncRequired
         * @description ``event: stream.resync_required``, a stream's final frame when the retention cut
         *     passed its position while it caught up: rebuild from the turns, then follow on from
         *     ``earliest - 1`` (as for a 410 ``resync_required``).
         */
        StreamResyncRequired: {
            /** Requested */
            requested: number;
            /** Earliest */
            earliest: number;
            /** Latest */
            latest: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    healthz_healthz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Alive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    readyz_readyz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Ready"];
                };
            };
            /** @description Not ready: `checks` says why */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    metrics_metrics_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_turns_v1_sessions__sid__turns_get: {
        parameters: {
            query?: {
                /** @description `next` of the previous page */
                after?: string | null;
                limit?: number;
            };
            header?: never;
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the session's turns, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TurnPage"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    admit_turn_v1_sessions__sid__turns_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description The turn id; a new one is generated when absent. Reused with the same request: the stored turn (200); with another: 409 */
                "Idempotency-Key"?: string;
            };
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TurnRequest"];
            };
        };
        responses: {
            /** @description A replay: the turn this Idempotency-Key admitted */
            200: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description Admitted */
            202: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy`, `project_mismatch` (the session is in another project) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `quota_exceeded`: a quota is reached (`quota`, `limit`); retry after `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_turn_v1_sessions__sid__turns__tid__get: {
        parameters: {
            query?: {
                /** @description Long poll: answer once the turn has ended or waits for someone, or after this many seconds (> 0, at most TURNKEEP_MAX_WAIT; else 422) */
                wait?: number | null;
            };
            header?: never;
            path: {
                sid: string;
                tid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The turn */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_timeline_v1_sessions__sid__turns__tid__timeline_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                tid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The turn's attempts, steps and waits, without content */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Timeline"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    cancel_turn_v1_sessions__sid__turns__tid__cancel_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                tid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Cancelled, or to be */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    answer_input_v1_sessions__sid__turns__tid__inputs__rid__post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                tid: string;
                rid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    [key: string]: unknown;
                };
            };
        };
        responses: {
            /** @description Answered */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    answer_inputs_v1_sessions__sid__turns__tid__inputs_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                tid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AnswersRequest"];
            };
        };
        responses: {
            /** @description Answered */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rerun_turn_v1_sessions__sid__turns__tid__rerun_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description The turn id; a new one is generated when absent. Reused with the same request: the stored turn (200); with another: 409 */
                "Idempotency-Key"?: string;
            };
            path: {
                sid: string;
                tid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RerunRequest"];
            };
        };
        responses: {
            /** @description A replay: the rerun this key admitted */
            200: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description Admitted: the rerun, queued */
            202: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Turn"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy`, `session_exists` (with fork: the session id is taken by no fork) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `quota_exceeded`: a quota is reached (`quota`, `limit`); retry after `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_sessions_v1_sessions_get: {
        parameters: {
            query?: {
                agent?: string | null;
                project?: string | null;
                /** @description key=value; several are ANDed */
                metadata?: string[];
                /** @description inclusive, RFC 3339 with an offset */
                created_since?: string | null;
                /** @description exclusive, RFC 3339 with an offset */
                created_until?: string | null;
                /** @description inclusive, RFC 3339 with an offset */
                updated_since?: string | null;
                /** @description exclusive, RFC 3339 with an offset */
                updated_until?: string | null;
                /** @description `next` of the previous page */
                after?: string | null;
                limit?: number;
                /** @description ORed */
                state?: ("idle" | ("queued" | "running" | "waiting" | "needs_reconciliation" | "completed" | "failed" | "cancelled"))[];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the tenant's sessions, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionPage"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_session_v1_sessions__sid__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The session */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Session"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    delete_session_v1_sessions__sid__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted and erased (a DELETE again) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tombstone"];
                };
            };
            /** @description Deleted: its erasure is under way */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tombstone"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_messages_v1_sessions__sid__messages_get: {
        parameters: {
            query?: {
                /** @description the seq to read after (`next`) */
                after?: number | null;
                limit?: number;
            };
            header?: never;
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the transcript */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessagePage"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    open_inputs_v1_inbox_get: {
        parameters: {
            query?: {
                /** @description only open requests */
                state?: "open";
                limit?: number;
                after?: string | null;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The open requests the caller may answer */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboxPage"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_events_v1_sessions__sid__events_get: {
        parameters: {
            query?: {
                /** @description the seq to read after (a non-negative integer) */
                after?: string | null;
                limit?: number;
                /** @description A stream token of this session, in place of the Authorization header (an EventSource cannot send one); read only when there is none */
                stream_token?: string;
            };
            header?: {
                "Last-Event-ID"?: string | null;
            };
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the journal (JSON), or its event stream (SSE) */
            200: {
                headers: {
                    /** @description the earliest retained seq, when an event stream opens */
                    "Turnkeep-Earliest-Seq"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventPage"];
                    "text/event-stream": unknown;
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `quota_exceeded`: a quota is reached (`quota`, `limit`); retry after `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    issue_stream_token_v1_sessions__sid__stream_tokens_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The token */
            200: {
                headers: {
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StreamToken"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    admit_node_turn_v1_workflows__run_id__nodes__node_id__turns_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                run_id: string;
                node_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NodeRequest"];
            };
        };
        responses: {
            /** @description A replay: the node's turn, as started */
            200: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Node"];
                };
            };
            /** @description Admitted */
            202: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Node"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy`, `project_mismatch` (the session is in another project) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `quota_exceeded`: a quota is reached (`quota`, `limit`); retry after `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_node_v1_workflows__run_id__nodes__node_id__get: {
        parameters: {
            query?: {
                wait?: number | null;
            };
            header?: never;
            path: {
                run_id: string;
                node_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The node */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Node"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    fork_session_v1_sessions__sid__fork_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description The new session's id when the body names none; a new one is generated when both are absent. The same fork again: 200; another: 409 */
                "Idempotency-Key"?: string;
            };
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ForkRequest"];
            };
        };
        responses: {
            /** @description A replay: the fork of that id, as it stands */
            200: {
                headers: {
                    /** @description where the new session is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Fork"];
                };
            };
            /** @description Forked */
            201: {
                headers: {
                    /** @description where the new session is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Fork"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `fork_point_ahead` (`at_seq` beyond the head), `idempotency_conflict` (the id is another fork), `session_exists` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `fork_point_pruned`: `at_seq` is before the retention cut */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    upload_attachment_v1_sessions__sid__attachments_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description The attachment id; a new one is generated when absent. Reused with the same file: the stored attachment (200); with another: 409 */
                "Idempotency-Key"?: string;
            };
            path: {
                sid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AttachmentUpload"];
            };
        };
        responses: {
            /** @description A replay: the attachment this Idempotency-Key uploaded */
            200: {
                headers: {
                    /** @description where the attachment is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Attachment"];
                };
            };
            /** @description Uploaded: ready */
            201: {
                headers: {
                    /** @description where the attachment is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Attachment"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `idempotency_conflict`: the Idempotency-Key's attachment has other content, or is being deleted */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above 266240 bytes (or `TURNKEEP_MAX_BODY_BYTES`); `attachment_too_large`: the content is above 196608 bytes decoded */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `unsupported_attachment_type`: text/plain, text/markdown, text/csv, application/json, application/pdf, image/png, image/jpeg, image/gif, image/webp */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_attachment_v1_sessions__sid__attachments__aid__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                aid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The attachment's metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Attachment"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    delete_attachment_v1_sessions__sid__attachments__aid__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                aid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_attachment_content_v1_sessions__sid__attachments__aid__content_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                aid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The attachment's bytes, as its content_type */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                    "text/markdown": string;
                    "text/csv": string;
                    "application/json": string;
                    "application/pdf": string;
                    "image/png": string;
                    "image/jpeg": string;
                    "image/gif": string;
                    "image/webp": string;
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such attachment for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `attachment_not_ready`: its upload has not completed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_projects_v1_projects_get: {
        parameters: {
            query?: {
                /** @description `next` of the previous page */
                after?: string | null;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the caller's projects, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProjectPage"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_project_v1_projects_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description The project's id when the body names none; a new one is generated when both are absent. The same request again: 200; another: 409 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ProjectCreate"];
            };
        };
        responses: {
            /** @description A replay: the project of that id, as it stands */
            200: {
                headers: {
                    /** @description where the project is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"];
                };
            };
            /** @description Created */
            201: {
                headers: {
                    /** @description where the project is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `idempotency_conflict`: the id is taken (by this request with other overrides, or by another project) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_project_v1_projects__pid__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                pid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The project */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    update_project_v1_projects__pid__patch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                pid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ProjectUpdate"];
            };
        };
        responses: {
            /** @description Updated */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_schedules_v1_schedules_get: {
        parameters: {
            query?: {
                limit?: number;
                after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant's schedules */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SchedulePage"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_schedule_v1_schedules_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description The schedule's id when the body names none; a new one is generated when both are absent. The same request again: 200; another: 409 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ScheduleRequest"];
            };
        };
        responses: {
            /** @description A replay: the schedule of that id */
            200: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Schedule"];
                };
            };
            /** @description Created */
            201: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Schedule"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_schedule_v1_schedules__schedule_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                schedule_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The schedule */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Schedule"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    delete_schedule_v1_schedules__schedule_id__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                schedule_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted: no tick fires again */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    pause_schedule_v1_schedules__schedule_id__pause_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                schedule_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Paused: no tick fires */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Schedule"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    resume_schedule_v1_schedules__schedule_id__resume_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                schedule_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Resumed from its next tick after now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Schedule"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_agents_v1_agents_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The declared agents */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentList"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    agent_versions_v1_agents__name__versions_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The agent's definitions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentVersions"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    upgrade_version_v1_agents__name__versions__definition_hash__upgrade_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
                definition_hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Flagged */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VersionUpgrade"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    upgrade_turn_v1_sessions__sid__turns__tid__upgrade_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                tid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Flagged */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TurnUpgrade"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    give_feedback_v1_sessions__sid__turns__tid__feedback_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sid: string;
                tid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FeedbackRequest"];
            };
        };
        responses: {
            /** @description Its author's earlier feedback on that step, replaced */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Feedback"];
                };
            };
            /** @description Recorded */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Feedback"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    feedback_summary_v1_agents__name__feedback_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Per version of the agent */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FeedbackSummary"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_bindings_v1_bridges_bindings_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant's bindings */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BindingList"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_binding_v1_bridges_bindings_post: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BindingRequest"];
            };
        };
        responses: {
            /** @description Bound */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Binding"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    revoke_binding_v1_bridges_bindings__binding_id__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                binding_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Binding"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_version_v1_datasets__name__versions_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DatasetCreate"];
                "application/x-ndjson": components["schemas"]["CaseSpec"][];
            };
        };
        responses: {
            /** @description The version holding these cases */
            200: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetVersion"];
                };
            };
            /** @description Created */
            201: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetVersion"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    add_turns_v1_datasets__name__cases_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FromTurns"];
            };
        };
        responses: {
            /** @description The version holding these cases */
            200: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetVersion"];
                };
            };
            /** @description Created */
            201: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetVersion"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, `erased_at`), `resync_required` (a cursor before the retention cut), `input_expired` */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_datasets_v1_datasets_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant's datasets */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetList"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    dataset_versions_v1_datasets__name__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Its versions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetVersions"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    dataset_version_v1_datasets__name__versions__version__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
                version: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The version and its cases */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DatasetVersion"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    list_experiments_v1_experiments_get: {
        parameters: {
            query?: {
                dataset?: string | null;
                agent?: string | null;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant's experiments */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExperimentList"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    create_experiment_v1_experiments_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description The experiment's id (a new one when absent). The same request again: 200; another: 409 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ExperimentRequest"];
            };
        };
        responses: {
            /** @description A replay: the experiment of that id */
            200: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Experiment"];
                };
            };
            /** @description Created and started */
            201: {
                headers: {
                    /** @description where the turn (or workflow node) is read */
                    Location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Experiment"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_experiment_v1_experiments__eid__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                eid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The experiment and its cases */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Experiment"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    cancel_experiment_v1_experiments__eid__cancel_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                eid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Cancelled (or ended already) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Experiment"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    compare_experiments_v1_experiments__a__compare__b__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                a: string;
                b: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Side by side */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Comparison"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not_found`: no such resource for this tenant; another tenant's resource answers exactly the same */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    promote_v1_agents__name__versions__version__promote_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
                version: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Promoted: the journal's entry */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Promotion"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict: `idempotency_conflict`, `session_agent_conflict`, `session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, `cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), `promotion_conflict`, `dataset_busy` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    agent_promotions_v1_agents__name__promotions_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The default and the journal */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentPromotions"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    search_turns_v1_turns_get: {
        parameters: {
            query?: {
                agent?: string | null;
                project?: string | null;
                /** @description key=value; several are ANDed */
                metadata?: string[];
                /** @description inclusive, RFC 3339 with an offset */
                created_since?: string | null;
                /** @description exclusive, RFC 3339 with an offset */
                created_until?: string | null;
                /** @description inclusive, RFC 3339 with an offset */
                updated_since?: string | null;
                /** @description exclusive, RFC 3339 with an offset */
                updated_until?: string | null;
                /** @description `next` of the previous page */
                after?: string | null;
                limit?: number;
                /** @description ORed */
                state?: ("queued" | "running" | "waiting" | "needs_reconciliation" | "completed" | "failed" | "cancelled")[];
                agent_version?: string | null;
                error?: string | null;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the matching turns, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TurnPage"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    get_limits_v1_limits_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant's limits */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantMaxRunning"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    put_limits_v1_limits_put: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LimitsRequest"];
            };
        };
        responses: {
            /** @description Declared */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantMaxRunning"];
                };
            };
            /** @description Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, `webhook_not_configured` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No valid credentials: `unauthorized` */
            401: {
                headers: {
                    /** @description `Bearer` when a bearer token was missing or wrong */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The principal may not do this: `forbidden_role` (a reader writing), `input_forbidden` (not one who may answer) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid request: `validation_error` (`errors` says where), `unknown_agent`, `agent_not_gated`, `callback_not_allowed` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, `stream_tokens_not_configured` */
            503: {
                headers: {
                    /** @description seconds to wait, when the store or Redis is unavailable */
                    "Retry-After"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
}
