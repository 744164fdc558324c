"""``Store``: everything the store does in Postgres, one object per process.

A thin facade: each concern is its own module, with its statements beside it in
``sql/<concern>.sql``, and ``Store`` is all of them over one pool. Where a method
lives:

====================  =================================================================
store/turns.py        the transitions: ``admit``, ``claim``, ``start``, ``append``,
                      ``request_cancel``, ``resolve_input``
store/reads.py        sessions, turns and journal pages: ``get_session``, ``get_turn``,
                      ``list_sessions``, ``turn_page``, ``event_page``, ``lane_head``, …
store/scans.py        across tenants: ``stalled_sessions``, ``expired_inputs``,
                      ``settled_delegations``, ``active_turn_counts``
store/retention.py    ``retention_candidates``, ``prune``
store/outbox.py       workflow nodes' webhooks: ``claim_webhook``, ``webhook_retry``, …
store/tool_steps.py   ``get_tool_step``, ``record_tool_step``
store/forks.py        ``fork``, ``forked_from``
store/attachments.py  ``insert_attachment`` … ``sweep_attachments``
store/projects.py     ``create_project``, ``get_project``, ``session_access``, …
store/memory.py       ``remember_fact``, ``recall_facts``
store/bridges.py      chat bridges' bindings: ``create_binding``, ``find_binding``, …
store/upgrades.py      ``request_upgrade``, ``request_upgrades``, ``turns_by_definition``
store/reruns.py       ``admit_rerun``
store/schedules.py    ``create_schedule`` … ``due_schedules``, ``schedule_fired``
store/feedback.py     ``give_feedback``, ``feedback_summary``
store/datasets.py     ``create_dataset_version``, ``get_dataset_version``, ``dataset_cases``, …
store/experiments.py  ``create_experiment``, ``claim_cases``, ``score_case``, …
store/promotions.py   ``record_promotion``, ``list_promotions``, ``promoted_versions``,
                      ``promoted_versions_of``
store/erasure.py      ``tombstone``, ``erase_rows``, ``finish_erasure``, the sweep's lists
store/provider_state.py  ``provider_state``: what a provider gets back, kept off the journal
store/search.py       ``search_turns``, ``search_sessions`` (docs/search.md)
store/max_running.py  ``get_limits``, ``set_limits``, ``declared_limits``,
                      ``start_limited``
store/statements.py   how a statement runs (by name, as its tenant), ``ping``, ``close``
store/connector.py    what it runs on: ``PostgresConnector`` (the SQL, on the pool), or
                      store/testing/'s ``InMemoryConnector`` (the same names in Python)
====================  =================================================================

Each concern is a ``Statements`` of its own (``Reads(db)`` works alone); ``Store``
composes them by inheritance, so a method keeps one definition and one signature.
"""

from __future__ import annotations

from turnkeep.store.attachments import Attachments
from turnkeep.store.bridges import Bridges
from turnkeep.store.datasets import Datasets
from turnkeep.store.erasure import Erasure
from turnkeep.store.experiments import Experiments
from turnkeep.store.feedback import FeedbackStatements
from turnkeep.store.forks import Forks
from turnkeep.store.max_running import MaxRunning
from turnkeep.store.memory import Memory
from turnkeep.store.outbox import Outbox
from turnkeep.store.projects import Projects
from turnkeep.store.promotions import Promotions
from turnkeep.store.provider_state import ProviderState
from turnkeep.store.reads import Reads
from turnkeep.store.reruns import Reruns
from turnkeep.store.retention import Retention
from turnkeep.store.scans import Scans
from turnkeep.store.schedules import Schedules
from turnkeep.store.search import Search
from turnkeep.store.tool_steps import ToolSteps
from turnkeep.store.turns import Turns
from turnkeep.store.upgrades import Upgrades

__all__ = ["Store"]


class Store(
    Turns,
    Reruns,
    Reads,
    Scans,
    Retention,
    Outbox,
    ToolSteps,
    Forks,
    Attachments,
    Projects,
    Memory,
    Upgrades,
    Schedules,
    FeedbackStatements,
    Bridges,
    Datasets,
    Experiments,
    Promotions,
    Erasure,
    ProviderState,
    Search,
    MaxRunning,
):
    """Postgres access for one process. Thread-safe: every call takes a pooled
    connection for one statement (or one short transaction)."""
