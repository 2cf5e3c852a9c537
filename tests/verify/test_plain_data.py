"""The strict encoding of answers: plain values round-trip exactly, nothing else gets through."""

from __future__ import annotations

import math
from unittest.mock import MagicMock

import pytest

from resonance_os.verify import plain_data
from resonance_os.verify.plain_data import MAX_DEPTH, Malformed, NotPlainData, decode, encode

VALUES = [
    None, True, False, 0, -1, 2**200, -(2**70), 0.5, -0.0, float("inf"), float("-inf"), 1e-310,
    complex(1.5, -2), "", "héllo \udc80", b"\x00\xff", [], (), {}, set(), frozenset(),
    [1, (2, "3"), {"k": [None, b"v"]}, {4, 5}, frozenset({(6, 7)})], {(1, 2): {"nested": [[[]]]}},
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_plain_values_round_trip_with_their_types(value):
    back = decode(encode(value))
    assert back == value and type(back) is type(value)
    assert repr(back) == repr(value)  # -0.0, nested tuple-vs-list and bool-vs-int kept apart


def test_nan_round_trips():
    assert math.isnan(decode(encode(float("nan"))))


class Int(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class AlwaysEqual:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize(
    "value", [Int(3), AlwaysEqual(), MagicMock(), [1, AlwaysEqual()], {"k": Int(1)}, iter([1]), object, print]
)
def test_anything_else_cannot_be_encoded(value):
    with pytest.raises(NotPlainData):
        encode(value)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"TT",  # a byte after the value
        b"?",  # unknown tag
        b"s\x05\x00\x00\x00abc",  # a length past the end
        b"l\xff\xff\xff\x7fN",  # a count past the end
        b"f\x03\x00\x00\x00xyz",  # not a float
        b"s\x01\x00\x00\x00\xff",  # not UTF-8
        b"S\x01\x00\x00\x00l\x00\x00\x00\x00",  # an unhashable set member
    ],
)
def test_malformed_bytes_are_refused(data):
    with pytest.raises(Malformed):
        decode(data)


def test_nesting_is_bounded_both_ways():
    deep = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(NotPlainData):
        encode(deep)
    with pytest.raises(Malformed):
        decode(b"l\x01\x00\x00\x00" * (MAX_DEPTH + 5) + b"N")
    assert plain_data.decode(plain_data.encode([[[]]])) == [[[]]]
