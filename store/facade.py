"""``Store``: everything the store does in Postgres, one object per process.

A thin facade of named parts: each concern is its own module, with its statements
beside it in ``sql/<concern>.sql``, and ``Store`` holds one instance of each, all on
one connector (one pool). A call names its part: ``store.turns.append(...)``,
``store.reads.get_turn(...)``. The parts:

=====================  ====================  ==================================================
part                   module                what it runs
=====================  ====================  ==================================================
``turns``              store/turns.py        the transitions: ``admit``, ``claim``, ``start``,
                                             ``append``, ``request_cancel``, ``resolve_input``
``waits``              store/waits.py        a group's answers: ``resolve_inputs``
``reruns``             store/reruns.py       ``admit_rerun``
``reads``              store/reads.py        sessions, turns and journal pages: ``get_session``,
                                             ``get_turn``, ``list_sessions``, ``turn_page``,
                                             ``event_page``, ``lane_head``, ``gone``, …
``scans``              store/scans.py        across tenants: ``stalled_sessions``,
                                             ``expired_inputs``, ``settled_delegations``,
                                             ``active_turn_counts``
``retention``          store/retention.py    ``retention_candidates``, ``prune``
``outbox``             store/outbox.py       workflow nodes' webhooks: ``claim_webhook``,
                                             ``webhook_retry``, …
``tool_steps``         store/tool_steps.py   ``get_tool_step``, ``record_tool_step``
``forks``              store/forks.py        ``fork``, ``forked_from``
``attachments``        store/attachments.py  ``insert_attachment`` … ``sweep_attachments``
``projects``           store/projects.py     ``create_project``, ``get_project``,
                                             ``session_access``, …
``memory``             store/memory.py       ``remember_fact``, ``recall_facts``
``upgrades``           store/upgrades.py     ``request_upgrade``, ``request_upgrades``,
                                             ``turns_by_definition``
``schedules``          store/schedules.py    ``create_schedule`` … ``due_schedules``,
                                             ``schedule_fired``
``feedback``           store/feedback.py     ``give_feedback``, ``feedback_summary``
``bridges``            store/bridges.py      chat bridges' bindings: ``create_binding``,
                                             ``find_binding``, …
``datasets``           store/datasets.py     ``create_dataset_version``,
                                             ``get_dataset_version``, ``dataset_cases``, …
``experiments``        store/experiments.py  ``create_experiment``, ``claim_cases``,
                                             ``score_case``, …
``promotions``         store/promotions.py   ``record_promotion``, ``list_promotions``,
                                             ``promoted_versions``, ``promoted_versions_of``
``erasure``            store/erasure.py      ``tombstone``, ``erase_rows``,
                                             ``finish_erasure``, the sweep's lists
``provider_state``     store/provider_state.py  ``provider_state``: what a provider gets back,
                                             kept off the journal
``search``             store/search.py       ``search_turns``, ``search_sessions``
                                             (docs/search.md)
``max_running``        store/max_running.py  ``get_limits``, ``set_limits``,
                                             ``declared_limits``, ``start_limited``
``context``            store/context_cache.py  the context windows of this process's
                                             last starts, shared by ``turns``,
                                             ``max_running`` and ``erasure``
(``Store`` itself)     store/statements.py   how a statement runs (by name, as its tenant),
                                             ``ping``, ``close``, ``from_url``
(below)                store/connector.py    what it runs on: ``PostgresConnector`` (the SQL,
                                             on the pool), or store/testing/'s
                                             ``InMemoryConnector`` (the same names in Python)
=====================  ====================  ==================================================

Each part is a ``Statements`` of its own (``Reads(db)`` works alone). A part that
needs another's method is handed that sibling when ``Store`` builds it: ``turns``,
``waits`` and ``reruns`` read through ``reads``, and ``turns`` answers a group through
``waits``.
"""

from __future__ import annotations

from turnkeep.store.attachments import Attachments
from turnkeep.store.bridges import Bridges
from turnkeep.store.connector import Connector
from turnkeep.store.context_cache import ContextCache
from turnkeep.store.datasets import Datasets
from turnkeep.store.db import Database
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
from turnkeep.store.statements import CONTEXT_WINDOW_BYTES, CONTEXT_WINDOW_ROWS, Statements
from turnkeep.store.tool_steps import ToolSteps
from turnkeep.store.turns import Turns
from turnkeep.store.upgrades import Upgrades
from turnkeep.store.waits import Waits

__all__ = ["Store"]


class Store(Statements):
    """Postgres access for one process: its named parts over one connector.
    Thread-safe: every call takes a pooled connection for one statement (or one short
    transaction)."""

    def __init__(
        self,
        db: Database | Connector,
        *,
        window_rows: int = CONTEXT_WINDOW_ROWS,
        window_bytes: int = CONTEXT_WINDOW_BYTES,
    ) -> None:
        super().__init__(db, window_rows=window_rows, window_bytes=window_bytes)
        on = self.connector
        window = {"window_rows": window_rows, "window_bytes": window_bytes}
        self.reads = Reads(on, **window)
        self.waits = Waits(on, reads=self.reads, **window)
        #: this process's sessions' context windows, kept between starts
        self.context = ContextCache()
        self.turns = Turns(on, reads=self.reads, waits=self.waits, context=self.context, **window)
        self.reruns = Reruns(on, reads=self.reads, **window)
        self.scans = Scans(on, **window)
        self.retention = Retention(on, **window)
        self.outbox = Outbox(on, **window)
        self.tool_steps = ToolSteps(on, **window)
        self.forks = Forks(on, **window)
        self.attachments = Attachments(on, **window)
        self.projects = Projects(on, **window)
        self.memory = Memory(on, **window)
        self.upgrades = Upgrades(on, **window)
        self.schedules = Schedules(on, **window)
        self.feedback = FeedbackStatements(on, **window)
        self.bridges = Bridges(on, **window)
        self.datasets = Datasets(on, **window)
        self.experiments = Experiments(on, **window)
        self.promotions = Promotions(on, **window)
        self.erasure = Erasure(on, context=self.context, **window)
        self.provider_state = ProviderState(on, **window)
        self.search = Search(on, **window)
        self.max_running = MaxRunning(on, context=self.context, **window)
