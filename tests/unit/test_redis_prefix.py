"""TURNKEEP_REDIS_PREFIX: every key, channel and broker key of turnkeep under it; the
default keeps the names deployments have (tests/unit/test_persisted_names.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from turnkeep.runtime.settings import get_settings
from turnkeep.store import keys
from turnkeep.store.producer import celery_config


@pytest.fixture
def prefixed(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("TURNKEEP_REDIS_PREFIX", "run-7f3a")
    get_settings.cache_clear()
    yield "run-7f3a"
    monkeypatch.undo()
    get_settings.cache_clear()


def test_every_key_and_channel_is_under_the_prefix(prefixed: str) -> None:
    assert keys.fence_key() == "run-7f3a:fence"
    assert keys.lease_key("t1", "s1") == "run-7f3a:lease:t1:s1"
    assert keys.rerun_key("t1", "s1") == "run-7f3a:rerun:t1:s1"
    assert keys.secret_key("t1", "s1", "u1", "r1") == "run-7f3a:secret:t1:s1:u1:r1"
    assert keys.events_channel("t1", "s1") == "run-7f3a:events:t1:s1"


def test_celery_keys_are_under_the_prefix_unless_it_is_the_default(prefixed: str) -> None:
    options = celery_config(get_settings())["broker_transport_options"]
    assert options == {"global_keyprefix": "run-7f3a:celery:"}
    assert keys.broker_keyprefix("turnkeep") == ""


def test_a_prefix_cannot_hold_a_key_separator() -> None:
    from pydantic import ValidationError

    from turnkeep.runtime.settings import Settings

    with pytest.raises(ValidationError):
        Settings(redis={"prefix": "a:b"})
    with pytest.raises(ValidationError):
        Settings(redis={"prefix": ""})
