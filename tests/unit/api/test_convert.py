"""A context becomes the same ``Struct`` that protobuf's own ``Struct.update`` builds."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import OrderedDict
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import jsonpatch
import pytest
from google.protobuf import json_format, struct_pb2, timestamp_pb2
from hypothesis import example, given
from hypothesis import strategies as st

from statewrightd.api.convert import context_patch_pb, dict_to_struct, struct_to_dict, timestamp

KEYS = st.text(st.characters(blacklist_categories=["Cs"]), max_size=8)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    # What a context can hold: no NUL (refused at the door), no lone surrogates (not UTF-8).
    | st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)
contexts = st.dictionaries(KEYS, values, max_size=6)


def reference(context: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(context)
    return message


@given(contexts)
def test_every_json_context_converts_as_struct_update_does(context: dict[str, Any]) -> None:
    assert dict_to_struct(context) == reference(context)


def test_non_finite_numbers_become_null_at_any_depth() -> None:
    built = dict_to_struct({"a": math.nan, "b": [math.inf, 1.5], "c": {"d": -math.inf}})
    assert built == reference({"a": None, "b": [None, 1.5], "c": {"d": None}})


def test_other_mappings_sequences_and_subclasses_convert_too() -> None:
    class Name(str):
        pass

    class Count(int):
        pass

    context = {"m": OrderedDict(x=1), "t": (1, "two"), "s": Name("n"), "n": Count(3), "b": True}
    assert dict_to_struct(context) == reference(
        {"m": {"x": 1}, "t": [1, "two"], "s": "n", "n": 3, "b": True}
    )
    assert struct_to_dict(dict_to_struct(context), "input")["t"] == [1, "two"]


def test_a_value_with_no_json_form_is_refused() -> None:
    with pytest.raises(ValueError, match="no Struct form"):
        dict_to_struct({"when": object()})


@given(contexts, contexts)
@example({"": [False], "0": None}, {"": [None]})  # a list element once paired into a move
@example({"a": [1, 2, 3], "b": 2}, {"a": [2, 3], "c": 1})
def test_a_context_patch_turns_the_context_before_into_the_one_after(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    # As a client reads it: each operation in JSON, as RFC 6902 writes it.
    patch = [json_format.MessageToDict(op) for op in context_patch_pb(before, after)]
    assert jsonpatch.apply_patch(before, patch) == after
    assert (patch == []) == (before == after)


def test_a_patch_names_moves_and_nulls_as_the_rfc_does() -> None:
    ops = context_patch_pb(
        {"a": {"x": 1, "y": [1, 2, 3]}}, {"b": {"x": 1, "y": [1, 2, 3]}, "n": None}
    )
    as_json = [json_format.MessageToDict(op) for op in ops]
    assert {"op": "move", "from": "/a", "path": "/b"} in as_json
    assert {"op": "add", "path": "/n", "value": None} in as_json


PATCH_IN_A_FRESH_PROCESS = """
import json, sys
from google.protobuf import json_format
from statewrightd.api.convert import context_patch_pb
before, after = json.loads(sys.argv[1])
print(json.dumps([json_format.MessageToDict(op) for op in context_patch_pb(before, after)]))
"""


def test_a_patch_is_the_same_whatever_the_key_order_and_the_process() -> None:
    # PostgreSQL's jsonb gives keys back in its own order, a live step in the order the
    # step wrote them, and each replica hashes strings with its own seed: a reader of
    # history and a live watcher, on any replica, must see one patch.
    keys = [f"k{n}" for n in range(12)]
    before = {key: 0 for key in keys[:8]}
    after = {key: 1 for key in reversed(keys[4:])}
    patches = set()
    for seed, (source, target) in enumerate(
        [(before, after), (dict(reversed(before.items())), dict(reversed(after.items())))]
    ):
        answer = subprocess.run(
            [sys.executable, "-c", PATCH_IN_A_FRESH_PROCESS, json.dumps([source, target])],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        )
        patches.add(answer.stdout)
    assert len(patches) == 1
    patch = json.loads(patches.pop())
    assert jsonpatch.apply_patch(before, patch) == after
    assert [op["path"] for op in patch][:4] == ["/k0", "/k1", "/k2", "/k3"]  # removed, in order


_ZONES = [None, UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]


@given(
    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31)),
    st.sampled_from(_ZONES),
)
@example(datetime(1970, 1, 1), UTC)
@example(datetime(1969, 12, 31, 23, 59, 59, 999_999), UTC)
@example(datetime(1960, 6, 1, 12, 0, 0, 1), timezone(-timedelta(hours=8)))
def test_a_timestamp_is_what_protobufs_own_conversion_makes(
    naive: datetime, zone: timezone | None
) -> None:
    value = naive.replace(tzinfo=zone)
    expected = timestamp_pb2.Timestamp()
    expected.FromDatetime(value)
    assert timestamp(value) == expected


def test_a_requests_records_share_their_key_strings_as_a_load_from_json_does() -> None:
    records = [{"id": n, "name": f"item-{n}"} for n in range(3)]
    message = json_format.ParseDict(
        {"items": records, "nested": {"id": {"name": 1}}}, struct_pb2.Struct()
    )
    read = struct_pb2.Struct.FromString(message.SerializeToString())
    values = struct_to_dict(read, "input")
    assert values == {"items": records, "nested": {"id": {"name": 1}}}
    shared = {key: key for key in values["items"][0]}
    keys = [key for item in values["items"] for key in item] + list(values["nested"])
    assert all(key is shared[key] for key in keys), "one string object for each key"
