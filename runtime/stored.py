"""Frozen records of the JSON the runtime stores (a turn's input, each event's payload),
one declaration that writers and readers share.

Stored JSON is compatibility data: a record read from a row and written out again is
that row's JSON, the same keys in the same order. ``Stored`` does that once for every
such record. Each field is a key (``key``): a record holds the keys it was given, by
a row (``from_json``, in the row's order) or by a writer's constructor call (in
declaration order), and ``to_json`` writes exactly those; a key it was not given
reads as the field's default (older rows), and a row's keys no field declares are
kept in ``extra`` and written back after the others. A writer that writes a key only
when it has one lists it in ``OMIT_EMPTY`` (given as None or empty, it is left out).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, ClassVar, Self


class _Unset:
    """A field no one gave: replaced by its reader default after construction."""

    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Any = _Unset()


def key(default: Any = None, *, nested: type[Stored] | None = None) -> Any:
    """A stored key; absent, readers see ``default`` (a fresh copy of a dict or list).
    ``nested``: its value is itself a stored record (a mapping read with its
    ``from_json``)."""
    return field(default=_UNSET, metadata={"default": default, "nested": nested})


_DECLARED: dict[type, tuple[Field[Any], ...]] = {}


def _declared(cls: type) -> tuple[Field[Any], ...]:
    found = _DECLARED.get(cls)
    if found is None:
        found = tuple(f for f in fields(cls) if f.name not in ("extra", "_keys"))
        _DECLARED[cls] = found
    return found


def _out(value: Any) -> Any:
    if isinstance(value, Stored):
        return value.to_json()
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass(frozen=True)
class Stored:
    """A stored JSON object, typed (see the module's docstring)."""

    #: keys a writer leaves out when it gives them as None or empty
    OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset()

    #: a row's keys that no field declares, kept as they were
    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    #: the keys this record holds, in order: the row's, or those its writer gave
    _keys: tuple[str, ...] | None = field(default=None, kw_only=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        given = []
        for f in _declared(type(self)):
            value = getattr(self, f.name)
            if value is _UNSET:
                object.__setattr__(self, f.name, copy.copy(f.metadata.get("default")))
            elif not (f.name in self.OMIT_EMPTY and (value is None or value in ((), [], {}))):
                given.append(f.name)
        if self._keys is None:
            object.__setattr__(self, "_keys", (*given, *self.extra))

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Self:
        """The record of a stored object (None reads as an empty one)."""
        data = data if isinstance(data, Mapping) else {}
        declared = _declared(cls)
        names = {f.name for f in declared}
        values: dict[str, Any] = {}
        for f in declared:
            if f.name in data:
                value = data[f.name]
                nested = f.metadata.get("nested")
                if nested is not None and isinstance(value, Mapping):
                    value = nested.from_json(value)
                values[f.name] = value
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**values, extra=extra, _keys=tuple(data))

    def to_json(self) -> dict[str, Any]:
        """The stored object: exactly the keys this record holds, in their order."""
        assert self._keys is not None  # set by __post_init__
        out: dict[str, Any] = {}
        for name in self._keys:
            out[name] = self.extra[name] if name in self.extra else _out(getattr(self, name))
        return out

    def evolve(self, **changes: Any) -> Self:
        """This record with ``changes``, each then held (``dataclasses.replace`` would
        hold every field, the ones never given included)."""
        assert self._keys is not None
        given = {k: getattr(self, k) for k in self._keys if k not in self.extra}
        return type(self)(**{**given, **changes}, extra=self.extra)

    def has(self, name: str) -> bool:
        """Whether the record holds ``name`` (a reader telling absent from null)."""
        return self._keys is not None and name in self._keys
