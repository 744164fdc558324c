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
from dataclasses import dataclass, field, fields
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


#: how a field's reader default is handed out: shared (an immutable value), a fresh
#: ``.copy()`` (a plain dict, list or set) or ``copy.copy`` (anything else)
_SHARE, _METHOD, _COPY = 0, 1, 2
_IMMUTABLE = (type(None), bool, int, float, str, bytes, tuple, frozenset)


class _Spec:
    """A class's stored keys, worked out once (the records are built on every step:
    reading the dataclass's field metadata per record cost more than the record)."""

    __slots__ = ("direct", "fields", "names", "omit")

    def __init__(self, cls: type) -> None:
        fields_ = []
        for f in fields(cls):
            if f.name in ("extra", "_keys"):
                continue
            default = f.metadata.get("default")
            kind = type(default)
            how = _SHARE if kind in _IMMUTABLE else _METHOD if kind in (dict, list, set) else _COPY
            fields_.append((f.name, default, how, f.metadata.get("nested")))
        #: (name, reader default, how it is copied, nested record type), declared order
        self.fields: tuple[tuple[str, Any, int, type[Stored] | None], ...] = tuple(fields_)
        self.names = frozenset(name for name, *_ in fields_)
        omit: frozenset[str] = getattr(cls, "OMIT_EMPTY", frozenset())
        self.omit = omit
        #: every instance has a ``__dict__`` to fill (no ``__slots__`` anywhere): a
        #: row's record is built without the frozen constructor's per-field setattr
        self.direct = not any("__slots__" in vars(c) for c in cls.__mro__ if c is not object)


_SPECS: dict[type, _Spec] = {}


def _spec(cls: type) -> _Spec:
    found = _SPECS.get(cls)
    if found is None:
        found = _SPECS[cls] = _Spec(cls)
    return found


def _default(default: Any, how: int) -> Any:
    if how == _SHARE:
        return default
    if how == _METHOD:
        return default.copy()
    return copy.copy(default)


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
        spec = _spec(type(self))
        values = self.__dict__ if spec.direct else None
        omit = spec.omit
        given = []
        for name, default, how, _ in spec.fields:
            value = values[name] if values is not None else getattr(self, name)
            if value is _UNSET:
                object.__setattr__(self, name, _default(default, how))
            elif not (name in omit and (value is None or value in ((), [], {}))):
                given.append(name)
        if self._keys is None:
            object.__setattr__(self, "_keys", (*given, *self.extra))

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Self:
        """The record of a stored object (None reads as an empty one)."""
        if type(data) is not dict:
            data = data if isinstance(data, Mapping) else {}
        spec = _spec(cls)
        values: dict[str, Any] = {}
        for name, default, how, nested in spec.fields:
            if name in data:
                value = data[name]
                if nested is not None and isinstance(value, Mapping):
                    value = nested.from_json(value)
                values[name] = value
            elif spec.direct:
                values[name] = default if how == _SHARE else _default(default, how)
        names = spec.names
        extra = {k: v for k, v in data.items() if k not in names}
        if not spec.direct:
            return cls(**values, extra=extra, _keys=tuple(data))
        # what the constructor and __post_init__ would leave: every field given or
        # defaulted, the row's unknown keys, the row's order
        record = object.__new__(cls)
        record.__dict__.update(values, extra=extra, _keys=tuple(data))
        return record

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
