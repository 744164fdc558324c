"""The erasure's loop and sweep against a scripted store (docs/erasure.md; the real
statements: tests/integration/test_erasure.py, tests/chaos/test_erasure_points.py):
the parts in order, children before parents, each in batches until a short one, the
attachments in small ones; the session row last, asked again while it may not go
yet; an expired session tombstoned first, a revived one left alone; the sweep only
reads and enqueues."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from turnkeep.recovery.erasure import sweep_once
from turnkeep.runtime.settings import Settings
from turnkeep.store.erasure import Reason
from turnkeep.store.erasure_registry import Part
from turnkeep.store.errors import NotFound
from turnkeep.store.records import Tombstoned, TombstoneRecord
from turnkeep.worker import erasure
from turnkeep.worker.erasure import ATTACHMENT_BATCH, erase_session

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def _tombstone(**kw: Any) -> TombstoneRecord:
    base = TombstoneRecord(
        tenant_id="t",
        session_id="s",
        project_id=None,
        reason="deleted",
        deleted_by="alice",
        deleted_at=NOW,
        erased_rows=0,
        updated_at=NOW,
        erased_at=None,
    )
    return replace(base, **kw)


@dataclass
class Scripted:
    """Rows left per part; the session row goes after ``blocked`` refusals."""

    rows: dict[Part, int]
    found: TombstoneRecord | None = field(default_factory=_tombstone)
    blocked: int = 0
    expired: bool = True
    calls: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def reads(self) -> Scripted:  # the eraser's two parts (worker/erasure.py Erasing)
        return self

    @property
    def erasure(self) -> Scripted:
        return self

    def get_tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        return self.found

    def tombstone(self, tenant_id: str, session_id: str, **kw: Any) -> Tombstoned:
        raise AssertionError("tombstoned already: never again")

    def erase_rows(self, tenant_id: str, session_id: str, part: Part, *, batch: int) -> int:
        n = min(batch, self.rows.get(part, 0))
        self.rows[part] = self.rows.get(part, 0) - n
        self.calls.append((part.value, batch))
        return n

    def finish_erasure(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        self.calls.append(("finish", None))
        if self.blocked or any(self.rows.values()):
            self.blocked = max(0, self.blocked - 1)
            return self.found
        assert self.found is not None
        self.found = replace(self.found, erased_at=NOW)
        return self.found


class Expiring:
    """No tombstone yet: the sweep sent a session past its TTL (or one a turn revived)."""

    def __init__(self, *, expired: bool = True) -> None:
        self.expired = expired
        self.found: TombstoneRecord | None = None
        self.calls: list[str] = []
        self.reads = self.erasure = self  # the eraser's two parts

    def tombstone(self, tenant_id: str, session_id: str, **kw: Any) -> Tombstoned:
        assert kw == {"reason": Reason.EXPIRED, "deleted_by": None, "expired_only": True}
        self.calls.append("tombstone")
        if not self.expired:
            raise NotFound("session not found")
        self.found = _tombstone(reason="expired", deleted_by=None)
        return Tombstoned(self.found, created=True)

    def get_tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        return self.found

    def erase_rows(self, tenant_id: str, session_id: str, part: Part, *, batch: int) -> int:
        self.calls.append(part.value)
        return 0

    def finish_erasure(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        assert self.found is not None
        self.calls.append("finish")
        return replace(self.found, erased_at=NOW)


class Announcer:
    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def deleted(self, tenant_id: str, session_id: str) -> None:
        self.told.append((tenant_id, session_id))


def test_the_parts_go_in_order_in_batches_and_the_session_row_last() -> None:
    store = Scripted({Part.EVENTS: 25, Part.ATTACHMENTS: ATTACHMENT_BATCH + 1, Part.TURNS: 3})
    told = Announcer()
    report = erase_session(store, told, "t", "s", batch=10)
    assert report.erased and report.rows == 25 + ATTACHMENT_BATCH + 1 + 3
    assert not report.expired and told.told == []  # the DELETE told its followers
    order = [name for name, _ in store.calls]
    assert order == [
        "scrub_eval_results",
        "erase_eval_cases",
        "erase_followups",
        "erase_feedback",
        "erase_webhooks",
        "erase_tool_steps",
        "erase_attachments",
        "erase_attachments",
        "erase_memories",
        "erase_provider_state",
        "erase_turn_metadata",
        "erase_session_metadata",
        "erase_events",
        "erase_events",
        "erase_events",
        "erase_turns",
        "finish",
    ]
    sizes = {name: batch for name, batch in store.calls if name != "finish"}
    assert sizes["erase_attachments"] == ATTACHMENT_BATCH and sizes["erase_events"] == 10
    assert report.batches == len(order) - 1


def test_the_session_row_is_asked_again_while_it_may_not_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(erasure, "ROUND_PAUSE", 0.0)
    store = Scripted({Part.EVENTS: 2}, blocked=2)
    assert erase_session(store, Announcer(), "t", "s", batch=10).erased
    assert [n for n, _ in store.calls].count("finish") == 3
    stuck = Scripted({}, blocked=10**6)
    report = erase_session(stuck, Announcer(), "t", "s", batch=10)
    assert not report.erased  # left to the sweep
    assert [n for n, _ in stuck.calls].count("finish") == erasure.ROUNDS


def test_an_erased_session_is_left_alone() -> None:
    store = Scripted({Part.EVENTS: 5}, found=_tombstone(erased_at=NOW))
    assert erase_session(store, Announcer(), "t", "s", batch=10).erased
    assert store.calls == []


def test_an_expired_session_is_tombstoned_first_and_a_revived_one_left_alone() -> None:
    told = Announcer()
    store = Expiring()
    report = erase_session(store, told, "t", "s", batch=10)
    assert report.erased and report.expired and told.told == [("t", "s")]
    revived = Expiring(expired=False)
    assert erase_session(revived, told, "t", "s", batch=10) == erasure.ErasureReport(erased=False)
    assert revived.calls == ["tombstone"] and told.told == [("t", "s")]
    assert store.calls[0] == "tombstone" and store.calls[-1] == "finish"


def test_the_sweep_only_reads_and_enqueues() -> None:
    class Lists:
        def expired_sessions(self, *, limit: int = 500) -> list[tuple[str, str]]:
            return [("t1", "a")]

        def stalled_erasures(self, *, grace: float, limit: int = 500) -> list[tuple[str, str]]:
            assert grace == 60.0
            return [("t2", "b"), ("t1", "c")]

    sent: list[tuple[str, str]] = []
    report = sweep_once(Lists(), lambda t, s: sent.append((t, s)), grace=60.0)
    assert (report.expired, report.stalled) == (1, 2)
    assert sent == [("t1", "a"), ("t2", "b"), ("t1", "c")]


def test_a_tenants_ttl_is_its_own_else_the_default() -> None:
    settings = Settings(
        erasure={"session_ttl": 3600.0, "session_ttls": {"short": 60.0, "never": 0.0}}
    )
    assert settings.erasure.session_ttl_for("short") == 60.0
    assert settings.erasure.session_ttl_for("other") == 3600.0
    assert settings.erasure.session_ttl_for("never") is None
    assert Settings().erasure.session_ttl_for("x") is None


def test_the_registry_runs_every_erase_statement_once() -> None:
    """The eraser reads its statements from the registry alone: each Part there once,
    and every holder kept says why."""
    from turnkeep.store.erasure_registry import HOLDERS, How, batches

    parts = [part for part, _ in batches(10)]
    assert sorted(parts) == sorted(Part) and len(set(parts)) == len(parts)
    assert all(h.why for h in HOLDERS if h.how is How.KEPT)
