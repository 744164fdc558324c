"""The contract's one fixture: each case runs once per store backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.backends import Backend
from turnkeep.store.testing import in_memory_store


@pytest.fixture(params=["memory", "postgres"])
def backend(request: pytest.FixtureRequest, tenant: str, sid: str) -> Iterator[Backend]:
    if request.param == "memory":
        yield Backend("memory", in_memory_store(), tenant, sid)
    else:
        yield Backend("postgres", request.getfixturevalue("store"), tenant, sid)
