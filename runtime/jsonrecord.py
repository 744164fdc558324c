"""Frozen records of the JSON the runtime stores (a turn's input, each event's payload),
one declaration that writers and readers share: msgspec Structs.

Stored JSON is compatibility data: a record read from a row and written out again is
that row's JSON, the same keys in the same order (tests/unit/test_payloads.py compares
the text; an input's hash is over its values, runtime/admission.py). ``JsonRecord``
adds that to a Struct once for every such record. Each field is a key (``key``): a
record holds the keys it was given, by a row (``from_json``, in the row's order) or by
a writer's constructor call (in declaration order), and ``to_json`` writes exactly
those; a key it was not given reads as the field's default (older rows), and a row's
keys no field declares (a newer version's) are kept in ``extra`` and written back
after the others. A writer that writes a key only when it has one lists it in
``OMIT_EMPTY`` (given as None or empty, it is left out).

msgspec's own ``omit_defaults`` is not enough: a row holding a key at its default
(``"usage": {}``) must be written back with it, and readers tell absent from default
(``has``); its ``UNSET`` would make every reader handle a third value.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Self

import msgspec
from msgspec.structs import force_setattr


class _Absent:
    """A field's constructor default: the writer did not give it. Replaced by the
    reader default in ``__post_init__``."""

    __slots__ = ("default", "fresh", "nested")

    def __init__(self, default: Any, nested: type[JsonRecord] | None) -> None:
        self.default = default
        #: a mutable default is handed out as a fresh copy per record
        self.fresh = type(default) in (dict, list, set)
        self.nested = nested

    def value(self) -> Any:
        return self.default.copy() if self.fresh else self.default

    def __repr__(self) -> str:
        return "ABSENT"


def key(default: Any = None, *, nested: type[JsonRecord] | None = None) -> Any:
    """A stored key; absent, readers see ``default`` (a fresh copy of a dict, list or
    set). ``nested``: its value is itself a stored record (a mapping read with its
    ``from_json``), or a list of them."""
    return _Absent(default, nested)


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


class _Spec:
    """A class's stored keys, worked out once (records are built on every step)."""

    __slots__ = ("fields", "names", "nested", "omit")

    def __init__(self, cls: type[JsonRecord]) -> None:
        found = [
            (f.name, f.default)
            for f in msgspec.structs.fields(cls)
            if isinstance(f.default, _Absent)
        ]
        #: (name, its absent marker), declared order
        self.fields: tuple[tuple[str, _Absent], ...] = tuple(found)
        self.names = frozenset(name for name, _ in found)
        self.nested = tuple((n, a.nested) for n, a in found if a.nested is not None)
        self.omit = cls.OMIT_EMPTY


_SPECS: dict[type, _Spec] = {}


def _spec(cls: type[JsonRecord]) -> _Spec:
    found = _SPECS.get(cls)
    if found is None:
        found = _SPECS[cls] = _Spec(cls)
    return found


def _in(nested: type[JsonRecord], value: Any) -> Any:
    if isinstance(value, Mapping):
        return nested.from_json(value)
    if type(value) is list:
        return [nested.from_json(v) if isinstance(v, Mapping) else v for v in value]
    return value


def _out(value: Any) -> Any:
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, tuple) or (
        type(value) is list and value and isinstance(value[0], JsonRecord)
    ):
        return [v.to_json() if isinstance(v, JsonRecord) else v for v in value]
    return value


class JsonRecord(msgspec.Struct, frozen=True, kw_only=True, repr_omit_defaults=True):
    """A stored JSON object, typed (see the module's docstring)."""

    #: keys a writer leaves out when it gives them as None or empty
    OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset()

    #: a row's keys that no field declares, kept as they were
    extra: Mapping[str, Any] = _NO_EXTRA
    #: the keys this record holds, in order: the row's, or those its writer gave
    _keys: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        spec = _spec(type(self))
        if self._keys is not None:
            # a row's record: its keys are known, only the absent ones need defaults
            for name, absent in spec.fields:
                if getattr(self, name) is absent:
                    force_setattr(self, name, absent.value())
            return
        omit = spec.omit
        given = []
        for name, absent in spec.fields:
            value = getattr(self, name)
            if value is absent:
                force_setattr(self, name, absent.value())
            elif not (name in omit and (value is None or value in ((), [], {}))):
                given.append(name)
        force_setattr(self, "_keys", (*given, *self.extra))

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Self:
        """The record of a stored object (None reads as an empty one)."""
        if type(data) is not dict:
            data = dict(data) if isinstance(data, Mapping) else {}
        spec = _spec(cls)
        if spec.names.issuperset(data):
            values: dict[str, Any] = data
            extra = _NO_EXTRA
        else:
            names = spec.names
            values = {k: v for k, v in data.items() if k in names}
            extra = {k: v for k, v in data.items() if k not in names}
        if spec.nested:
            values = dict(values)
            for name, nested in spec.nested:
                if name in values:
                    values[name] = _in(nested, values[name])
        return cls(**values, extra=extra, _keys=tuple(data))

    def to_json(self) -> dict[str, Any]:
        """The stored object: exactly the keys this record holds, in their order."""
        assert self._keys is not None  # set by __post_init__
        extra = self.extra
        out: dict[str, Any] = {}
        for name in self._keys:
            out[name] = extra[name] if name in extra else _out(getattr(self, name))
        return out

    def evolve(self, **changes: Any) -> Self:
        """This record with ``changes``, each then held (``msgspec.structs.replace``
        would keep the old held keys)."""
        assert self._keys is not None
        given = {k: getattr(self, k) for k in self._keys if k not in self.extra}
        return type(self)(**{**given, **changes}, extra=self.extra)

    def has(self, name: str) -> bool:
        """Whether the record holds ``name`` (a reader telling absent from null)."""
        return self._keys is not None and name in self._keys
