"""Row-level security, the second layer under the store's tenant clauses: the
application's role sees, and may write, only the rows of the tenant its session is
set to, whatever a statement says; the cross-tenant scans alone see every tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from turnkeep.runtime.settings import APP_ROLE
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.bridges import Sender
from turnkeep.store.db import TENANT_SETTING, Database
from turnkeep.store.erasure import Reason
from turnkeep.store.facade import Store
from turnkeep.store.new_turn import NewTurn
from turnkeep.store.records import WebhookSpec
from turnkeep.store.schema import TENANT_TABLES
from turnkeep.store.sql import q, source
from turnkeep.store.statements import CROSS_TENANT
from turnkeep.store.step_commit import StepCommit

#: the SHA-256 of no bytes (an attachment row of the fixture)
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _admit(store: Store, tenant: str, sid: str, *, webhook: bool = False) -> str:
    tid = uuid.uuid4().hex
    store.turns.admit(
        NewTurn(
            tenant_id=tenant,
            session_id=sid,
            turn_id=tid,
            agent_name="demo",
            agent_hash="h",
            input_hash="i" + tid,
            input={"messages": []},
            output_schema=None,
            budget=None,
            metadata={"case": tid},
            session_metadata={"team": "rls"},
            webhook=WebhookSpec(
                run_id="r", node_id=tid, url="http://127.0.0.1:9/", secret_id="s", delivery_id=tid
            )
            if webhook
            else None,
        )
    )
    return tid


@pytest.fixture
def two_tenants(store: Store) -> tuple[str, str]:
    """Tenants A and B, each with a session, two turns (one with a webhook) and their
    events and metadata, a model call's provider state, a tool step, an attachment, a
    project, a remembered fact, a chat bridge's binding, a deleted session's tombstone,
    the evaluation plane's rows and a declared max_running: rows in every tenant-keyed
    table."""
    a, b = (f"rls-{x}-{uuid.uuid4().hex[:8]}" for x in "ab")
    for tenant in (a, b):
        tid = _admit(store, tenant, "s1")
        _admit(store, tenant, "s1", webhook=True)
        assert store.turns.claim(tenant, "s1", 1)
        store.turns.append(
            tenant,
            "s1",
            1,
            StepCommit(
                turn_id=tid,
                revision=0,
                state=TurnState.RUNNING,
                type=EventType.MODEL_COMPLETED,
                data={"message": {"role": "assistant", "content": "x"}, "provider_state": "p"},
                step=1,
                provider_state={"v": 1, "provider": "p", "blocks": []},
            ),
        )
        _admit(store, tenant, "gone")
        store.erasure.tombstone(tenant, "gone", reason=Reason.DELETED, deleted_by="alice")
        store.tool_steps.record_tool_step(tenant, "s1", tid, 2, "charge", {"id": "ch_1"})
        store.attachments.insert_attachment(
            tenant, "s1", "a1", filename="a", content_type="text/plain", size=0, sha256=EMPTY_SHA256
        )
        store.projects.create_project(tenant, "p1", owner="alice", overrides={}, request_hash="h")
        store.memory.remember_fact(
            tenant, "subject:alice", f"{tenant}/s1/{tid}/2", "a fact", session_id="s1", turn_id=tid
        )
        store.schedules.create_schedule(
            tenant_id=tenant,
            schedule_id="h1",
            agent_name="demo",
            cron=None,
            every_seconds=3600.0,
            timezone="UTC",
            input={"messages": [{"role": "user", "content": "hi"}]},
            session_id=None,
            missed="run_once",
            next_at=datetime.now(UTC) + timedelta(hours=1),
            spec_hash="h",
            created_by="alice",
            created_at=datetime.now(UTC),
        )
        store.feedback.give_feedback(
            tenant_id=tenant,
            session_id="s1",
            turn_id=tid,
            step=0,
            subject="alice",
            kind="thumbs",
            score=1.0,
            scale_min=0.0,
            scale_max=1.0,
            note_hash=None,
            note=None,
            trace_id="0" * 32,
            agent_name="demo",
            agent_version="1",
        )
        store.bridges.create_binding(
            tenant,
            Sender("slack", "T1", "C1", f"U-{tenant}"),
            subject="alice",
            role="member",
            agent="demo",
            created_by="alice",
        )
        _evaluation(store, tenant)
        store.max_running.set_limits(tenant, max_running=3, updated_by="alice")
    return a, b


def _evaluation(store: Store, tenant: str) -> None:
    """A dataset version with a case, an experiment with its result, and a promotion:
    rows in each table of the evaluation plane (store/schema_eval.py)."""
    case = {"case_id": "c1", "ordinal": 1, "input": {}, "assertions": [], "source": None}
    store.datasets.create_dataset_version(
        tenant, "d1", cases=[case], cases_hash="h", created_by="alice"
    )
    store.experiments.create_experiment(
        case_prefix="eval.x1.",
        tenant_id=tenant,
        experiment_id="x1",
        dataset="d1",
        dataset_version=1,
        agent_name="demo",
        agent_version="1",
        agent_hash="h",
        spec_hash="s",
        approvals={},
        judge=None,
        concurrency=1,
        recovery=False,
        created_by="alice",
    )
    store.promotions.record_promotion(
        tenant,
        "demo",
        version="1",
        definition_hash="h",
        accepted=True,
        default_before="1",
        promoted_before=None,
        subject="alice",
        policy={},
        checks=[],
        experiments=["x1"],
    )


@pytest.fixture
def app_conn(app_database_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(_pg(app_database_url), autocommit=True) as conn:
        yield conn


def _owner_count(database_url: str, table: str, tenant: str) -> int:
    with psycopg.connect(_pg(database_url)) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table} WHERE tenant_id = %s", (tenant,))
        return int(row.fetchone()[0])  # type: ignore[index]


def test_the_application_role_is_neither_superuser_nor_owner_nor_exempt(app_conn):
    me = app_conn.execute(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    assert me == (APP_ROLE, False, False)
    owners = app_conn.execute(
        "SELECT relname, pg_get_userbyid(relowner), relrowsecurity, relforcerowsecurity "
        "FROM pg_class WHERE relname = ANY(%s) AND relkind = 'r'",
        (list(TENANT_TABLES),),
    ).fetchall()
    assert len(owners) == len(TENANT_TABLES)
    assert all(owner != APP_ROLE and rls and forced for _, owner, rls, forced in owners)


def test_a_query_without_a_tenant_clause_sees_only_the_sessions_tenant(
    app_conn, two_tenants, database_url
):
    a, b = two_tenants
    app_conn.execute("SELECT set_config(%s, %s, false)", (TENANT_SETTING, a))
    for table in TENANT_TABLES:
        tenants = app_conn.execute(f"SELECT tenant_id, count(*) FROM {table} GROUP BY 1").fetchall()
        assert tenants == [(a, _owner_count(database_url, table, a))], table
        assert _owner_count(database_url, table, b) > 0  # B's rows are there all the same
    # s1's two turns and the deleted session's, cancelled by its tombstone
    assert app_conn.execute("SELECT count(*) FROM turns").fetchone() == (3,)


def test_with_no_tenant_set_nothing_is_visible(app_conn, two_tenants):
    for table in TENANT_TABLES:
        assert app_conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
    app_conn.execute("SELECT set_config(%s, '', false)", (TENANT_SETTING,))
    for table in TENANT_TABLES:
        assert app_conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table


def test_another_tenants_rows_can_be_neither_written_nor_changed(app_conn, two_tenants):
    a, b = two_tenants
    app_conn.execute("SELECT set_config(%s, %s, false)", (TENANT_SETTING, a))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app_conn.execute(
            "INSERT INTO sessions (tenant_id, session_id, agent_name) VALUES (%s, 's2', 'demo')",
            (b,),
        )
    moved = app_conn.execute("UPDATE turns SET updated_at = now() WHERE tenant_id = %s", (b,))
    assert moved.rowcount == 0
    gone = app_conn.execute("DELETE FROM events WHERE tenant_id = %s", (b,))
    assert gone.rowcount == 0
    # nor moved out of the tenant
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app_conn.execute("UPDATE sessions SET tenant_id = %s WHERE tenant_id = %s", (b, a))


def test_a_store_statement_naming_another_tenant_finds_nothing(store, two_tenants):
    a, b = two_tenants
    # as if the store had passed B's id to a statement run as A: the layer below answers
    rows = store.db.rows(q("list_turns"), {"tenant_id": b, "session_id": "s1"}, tenant=a)
    assert rows == []
    assert len(store.reads.list_turns(b, "s1")) == 2


def test_the_store_refuses_the_all_tenants_setting_as_a_tenant_id(store):
    with pytest.raises(ValueError):
        store.reads.list_turns("*", "s1")


def test_only_the_cross_tenant_scans_lack_a_tenant_id():
    # every other statement runs as its :tenant_id (Store._rows); these run as '*'
    assert {n for n, sql in source().items() if ":tenant_id" not in sql} == CROSS_TENANT


def test_the_cross_tenant_scans_see_every_tenant(store, two_tenants):
    a, b = two_tenants
    seen: set[tuple[str, str]] = set()
    page, cursor = store.retention.retention_candidates(retain=0, limit=500)
    seen.update(page)
    while cursor is not None:
        page, cursor = store.retention.retention_candidates(retain=0, limit=500, after=cursor)
        seen.update(page)
    assert {(a, "s1"), (b, "s1")} <= seen


def test_a_pooled_connection_follows_each_statements_tenant(app_database_url, two_tenants):
    a, b = two_tenants
    db = Database(app_database_url, size=1)  # one connection: every switch is on it
    try:

        def setting(tenant: str) -> str:
            row = db.rows(
                "SELECT current_setting(%(s)s, true) AS t", {"s": TENANT_SETTING}, tenant=tenant
            )
            return str(row[0]["t"])

        def turns(tenant: str) -> set[str]:
            return {
                r["tenant_id"] for r in db.rows("SELECT tenant_id FROM turns", {}, tenant=tenant)
            }

        assert turns(a) == {a} and turns(b) == {b} and turns(a) == {a}
        assert setting(a) == a
        # a statement that fails rolls back the switch that came with it ...
        with pytest.raises(psycopg.errors.DivisionByZero):
            db.rows("SELECT 1 / 0", {}, tenant=b)
        with db._checkout() as pooled:  # (a look under the pool: nothing is set)
            assert pooled.tenant is None
            got = pooled.conn.execute("SELECT current_setting(%s, true) AS t", (TENANT_SETTING,))
            assert got.fetchone() == {"t": a}
        # ... and the pool does not take it for done
        assert turns(b) == {b}
        assert turns("") == set()
        with db.transaction(a) as conn:
            assert {r["tenant_id"] for r in conn.execute("SELECT tenant_id FROM sessions")} == {a}
    finally:
        db.close()
