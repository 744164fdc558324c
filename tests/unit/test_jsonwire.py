"""The hot path's JSON codec (runtime/jsonwire.py) against the standard library it
replaced: every stored payload and every shape the test journals write decode to the
value ``json`` gives and encode to JSON whose value is the one ``json`` wrote; the
hashed text (runtime/hashing.py) keeps its bytes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tests.unit.test_payloads import SAMPLES
from turnkeep.runtime import jsonwire
from turnkeep.runtime.hashing import canonical_json, sha256_hex
from turnkeep.store.channel import decode, encode_batch, encode_delta

#: the payload shapes tests/journals.py writes in SQL, and the edges of JSON's values
EDGES: list[Any] = [
    {"input": {"messages": [{"role": "user", "content": "question 7"}]}},
    {"message": {"role": "assistant", "content": "answer 7"}},
    {"result": {"text": "answer 7"}},
    {"n": 7},
    {"text": 'é ü 日本 \u2028 \x00 \x1f " \\ / 😀', "empty": "", "nothing": None},
    {"ints": [0, -1, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**80, -(2**70)]},
    {"floats": [0.1, -0.0, 1e16, 1e-7, 2.5e300, 1.7976931348623157e308, 5e-324, 1.0]},
    {"b": 1, "a": 2, "c": {"z": [], "y": {}}},  # key order kept
    {"nested": [[[[{"deep": [True, False, None]}]]]]},
    [],
    "a string",
    3,
]
CORPUS = [d for ds in SAMPLES.values() for d in ds] + EDGES


@pytest.mark.parametrize("value", CORPUS, ids=str)
def test_decode_of_encode_is_the_value_and_the_json_values_agree(value: Any) -> None:
    text = jsonwire.dumps(value)
    assert jsonwire.loads(text) == value
    assert jsonwire.loads(text.encode()) == value
    assert jsonwire.loads(memoryview(text.encode())) == value
    # the same value the standard library's text has, keys in the same order
    stdlib = json.dumps(value, separators=(",", ":"))
    assert json.loads(text) == json.loads(stdlib)
    assert list(_keys(json.loads(text))) == list(_keys(json.loads(stdlib)))
    assert jsonwire.loads(stdlib) == json.loads(stdlib)


def _keys(value: Any) -> Any:
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def test_keys_msgspec_refuses_are_spelled_as_json_spells_them() -> None:
    value = {True: 1, None: 2, 3: 4, "s": 5}
    assert jsonwire.dumps(value) == json.dumps(value, separators=(",", ":"))


def test_what_only_json_reads_is_read_as_json_reads_it() -> None:
    # Postgres's numeric holds numbers no double does; json reads them as infinity
    assert jsonwire.loads(b'{"n":1e400}') == {"n": float("inf")}
    assert jsonwire.loads(memoryview(b"[-1e400]")) == [float("-inf")]
    with pytest.raises(ValueError):
        jsonwire.loads(b'{"not json"')


def test_the_hashed_text_keeps_its_bytes() -> None:
    # hashing stays on the standard library: its text is pinned by every stored hash
    for value in CORPUS:
        expected = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        assert canonical_json(value) == expected
        assert sha256_hex(value) == hashlib.sha256(expected.encode()).hexdigest()
    assert sha256_hex({"b": [1.5, "é"], "a": 1e16}) == (
        hashlib.sha256('{"a":1e+16,"b":[1.5,"é"]}'.encode()).hexdigest()
    )


def test_a_channel_message_in_the_old_spelling_still_decodes() -> None:
    # a publisher still on the standard library (a rolling deploy) and one on msgspec
    old = json.dumps({"kind": "delta", "turn_id": "u", "step": 1, "text": "é"})
    new = encode_delta("u", 1, "é")
    assert decode(encode_batch([old, new])) == [json.loads(old), json.loads(old)]
