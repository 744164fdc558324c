"""Search's pure parts (docs/search.md): metadata's bounds and filter form
(runtime/metadata.py), what a search hands its statements (store/search.py
``Filters``), the client's query (turnkeep/client/search.py) and the CLI's times; and
the pin that lets a search by error code walk the failed and cancelled turns only."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import typer
from pydantic import ValidationError

from turnkeep.api.service.search import SessionQuery, TurnQuery
from turnkeep.cli.search_commands import parse_meta, parse_when
from turnkeep.client import search as client_search
from turnkeep.runtime import metadata as labels
from turnkeep.store.search import ERRORED, Filters
from turnkeep.store.sql import UNPREPARED, names, source


def test_metadata_bounds() -> None:
    ok = {f"k{i}": "v" * labels.MAX_VALUE for i in range(labels.MAX_LABELS)}
    assert labels.check(ok) == ok
    assert labels.check({"app.kubernetes.io/name": "x", "a:b-c_d": ""}) == {
        "app.kubernetes.io/name": "x",
        "a:b-c_d": "",
    }
    for bad, why in [
        ({**ok, "one": "more"}, "at most 16"),
        ({"k=v": "x"}, "is not"),
        ({"": "x"}, "is not"),
        ({"k" * 65: "x"}, "is not"),
        ({"k": "v" * 257}, "over 256"),
        ({"k": "a\x00"}, "NUL"),
        ({"k": 3}, "not a string"),
    ]:
        with pytest.raises(ValueError, match=why):
            labels.check(bad)  # type: ignore[arg-type]


def test_a_filter_is_key_equals_value_and_names_a_key_once() -> None:
    assert labels.parse_filters(["customer=acme", "note=a=b", "empty="]) == {
        "customer": "acme",
        "note": "a=b",
        "empty": "",
    }
    for bad, why in [(["nokey"], "not key=value"), (["a=1", "a=2"], "named twice")]:
        with pytest.raises(ValueError, match=why):
            labels.parse_filters(bad)


def test_the_identity_layer_is_none_without_metadata() -> None:
    assert labels.identity_layer("d" * 64, None, None) == "d" * 64
    assert labels.identity_layer("d" * 64, {}, {}) == "d" * 64
    assert labels.identity_layer("d" * 64, {"a": "b"}, None) != labels.identity_layer(
        "d" * 64, None, {"a": "b"}
    )


def test_what_a_search_hands_its_statements() -> None:
    p = Filters().params()
    assert all(p[k] is None for k in p if k != "idle") and p["idle"] == "idle"
    # one state is an equality (its index walks it in order), several an array
    assert (
        Filters(states=("failed",)).params()["state"],
        Filters(states=("failed",)).params()["states"],
    ) == ("failed", None)
    many = Filters(states=("failed", "queued")).params()
    assert (many["state"], many["states"]) == (None, ["failed", "queued"])
    # an error code alone walks the states that can carry one
    alone = Filters(error="model_failed").params()
    assert alone["states"] == list(ERRORED) and alone["error"] == "model_failed"
    assert Filters(error="x", states=("failed",)).params()["state"] == "failed"
    # the first pair leads; containment holds the others (none to hold for one pair)
    one = Filters(metadata={"customer": "acme"}).params()
    assert (one["key"], one["value"], one["metadata"]) == ("customer", "acme", None)
    two = Filters(metadata={"customer": "acme", "channel": "chat"}).params()
    assert (two["key"], two["value"]) == ("customer", "acme")
    assert two["metadata"] == '{"customer": "acme", "channel": "chat"}'


def test_only_a_failure_and_a_forks_cut_write_a_turns_error() -> None:
    """store/search.py ERRORED: a search by error code alone walks the failed and
    cancelled turns. That holds while only these statements write ``turns.error``:
    fenced_append (the worker's fail, worker/turn.py, commits FAILED with it) and
    fork_turns (the cut copies, cancelled). A new writer must extend ERRORED."""
    writes = re.compile(r"\berror\s*=|INSERT INTO turns\s*\([^)]*\berror\b", re.S)
    writers = {name for name, sql in source().items() if writes.search(sql)}
    assert writers == {"fenced_append", "fork_turns"}
    assert set(ERRORED) == {"failed", "cancelled"}


def test_the_searches_are_planned_for_their_values() -> None:
    assert {n for n in names() if n.startswith("search_")} == UNPREPARED


def test_the_query_models_refuse_what_they_do_not_know() -> None:
    with pytest.raises(ValidationError, match="Extra inputs"):
        TurnQuery.model_validate({"staet": "failed"})
    with pytest.raises(ValidationError, match="before"):
        TurnQuery.model_validate(
            {"created_since": "2026-02-01T00:00:00Z", "created_until": "2026-01-01T00:00:00Z"}
        )
    with pytest.raises(ValidationError, match="timezone"):
        SessionQuery.model_validate({"updated_since": "2026-01-01T00:00:00"})
    assert SessionQuery.model_validate({"state": ["idle", "waiting"]}).state == ["idle", "waiting"]


def test_the_clients_query_repeats_states_and_pairs_and_wants_aware_times() -> None:
    since = datetime(2026, 12, 1, 9, tzinfo=UTC)
    q = client_search.query(
        limit=5,
        after="abc",
        state=["failed", "cancelled"],
        metadata={"customer": "acme", "note": "a=b"},
        agent="support",
        created_since=since,
        error=None,
    )
    assert q.multi_items() == [
        ("limit", "5"),
        ("after", "abc"),
        ("state", "failed"),
        ("state", "cancelled"),
        ("metadata", "customer=acme"),
        ("metadata", "note=a=b"),
        ("agent", "support"),
        ("created_since", "2026-12-01T09:00:00+00:00"),
    ]
    assert client_search.query(limit=1, after=None, state="queued").get_list("state") == ["queued"]
    with pytest.raises(ValueError, match="aware"):
        client_search.query(limit=1, after=None, created_until=datetime(2026, 1, 1))


def test_the_clis_times_and_labels() -> None:
    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    assert parse_when("7d", now=now) == now - timedelta(days=7)
    assert parse_when("90m", now=now) == now - timedelta(minutes=90)
    assert parse_when("2w", now=now) == now - timedelta(weeks=2)
    assert parse_when("2026-12-01") == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_when("2026-12-01T09:00:00+01:00").utcoffset() == timedelta(hours=1)
    with pytest.raises(typer.BadParameter):
        parse_when("last monday")
    assert parse_meta(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(typer.BadParameter):
        parse_meta(["nope"])
