"""The HTTP API's JSON text: canonical JSON, whole numbers as integers."""

from __future__ import annotations

import json

from google.protobuf import struct_pb2

from statewrightd.console.json_text import to_json


def test_whole_doubles_are_written_as_integers_and_others_as_they_are() -> None:
    struct = struct_pb2.Struct()
    struct.update(
        {
            "count": 2,
            "price": 2.5,
            "nested": {"list": [1.0, 0.1, -3.0]},
            "big": 2.0**60,
            "flag": True,
            "none": None,
        }
    )
    text = to_json(struct)
    assert '"count": 2,' in text or '"count": 2}' in text
    data = json.loads(text)
    assert type(data["count"]) is int
    assert data["price"] == 2.5
    assert data["nested"]["list"] == [1, 0.1, -3] and type(data["nested"]["list"][0]) is int
    # Past 2**53 a double no longer counts every integer: it stays a double.
    assert type(data["big"]) is float
    assert data["flag"] is True and data["none"] is None


def test_fields_at_their_default_are_written() -> None:
    assert json.loads(to_json(struct_pb2.ListValue())) == []
    value = struct_pb2.Value(number_value=0)
    assert to_json(value) == "0"
