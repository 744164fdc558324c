"""The worker's port onto the store (worker/ports.py ``StepStore``) stays small: a few
of the store's parts, each narrowed to the calls a turn's run makes. mypy holds the
real ``Store`` to it where the worker is wired (worker/app.py); this holds its size,
and that each member names a part of the store that has what the member lists."""

from __future__ import annotations

import typing

from turnkeep.store.testing import in_memory_store
from turnkeep.worker.ports import StepStore

MAX_MEMBERS = 12


def _members(protocol: type) -> set[str]:
    """A Protocol's own members and its bases' (but ``Protocol``'s and ``object``'s)."""
    found: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (typing.Protocol, typing.Generic, object):
            continue
        found |= {n for n in vars(cls) if not n.startswith("_") and n not in ("copy_with", "mro")}
    return found


def test_the_step_store_has_at_most_twelve_members() -> None:
    members = _members(StepStore)
    assert members, "StepStore lists nothing"
    assert len(members) <= MAX_MEMBERS, sorted(members)


def test_each_member_is_a_part_of_the_store_with_what_it_lists() -> None:
    store = in_memory_store()
    for name in _members(StepStore):
        part = getattr(store, name)
        narrowed = typing.get_type_hints(getattr(StepStore, name).fget)["return"]
        for method in _members(narrowed):
            assert callable(getattr(part, method, None)), f"store.{name} has no {method}"
