"""The contract's one fixture: each case runs once per store backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.backends import Backend
from tests.unit.fakes import FakeStore


@pytest.fixture(params=["fake", "postgres"])
def backend(request: pytest.FixtureRequest, tenant: str, sid: str) -> Iterator[Backend]:
    if request.param == "fake":
        yield Backend("fake", FakeStore(), tenant, sid)
    else:
        yield Backend("postgres", request.getfixturevalue("store"), tenant, sid)
