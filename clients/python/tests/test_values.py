"""dict <-> Struct conversion: integral doubles come back as int, everything else unchanged."""

from __future__ import annotations

import math

import pytest
from google.protobuf import struct_pb2
from statewright.values import from_struct, from_value, to_struct, to_value


def test_round_trip_restores_ints_and_keeps_fractions_bools_and_nesting() -> None:
    original = {
        "topic": "x",
        "attempts": 3,
        "price": 12.5,
        "approved": False,
        "score": None,
        "items": ["book", 2, [1.5]],
        "meta": {"approver": "ann", "n": {"deep": 7}},
    }
    struct = to_struct(original)
    assert struct.fields["attempts"].number_value == 3.0
    back = from_struct(struct)
    assert back == original
    assert type(back["attempts"]) is int
    assert type(back["price"]) is float
    assert type(back["approved"]) is bool


def test_bools_are_not_numbers() -> None:
    assert to_value(True).WhichOneof("kind") == "bool_value"
    assert from_value(to_value(True)) is True


def test_whole_floats_read_back_as_int_and_huge_ones_stay_float() -> None:
    assert from_value(to_value(3.0)) == 3
    assert type(from_value(to_value(3.0))) is int
    huge = float(2**60)
    assert type(from_value(to_value(huge))) is float


def test_unset_value_is_none() -> None:
    assert from_value(struct_pb2.Value()) is None


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_numbers_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        to_value(bad)


def test_unsupported_types_and_keys_are_refused() -> None:
    with pytest.raises(TypeError):
        to_value(object())
    with pytest.raises(TypeError):
        to_value(b"bytes")
    with pytest.raises(TypeError, match="keys must be strings"):
        to_struct({1: "x"})  # type: ignore[dict-item]
