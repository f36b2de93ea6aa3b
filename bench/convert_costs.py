"""CPU per call of the context conversions (dict to ``Struct`` and back), each way it can be done.

Not a test. The servicer turns every request's ``input`` into a dict and every response's
context into a ``Struct``; protobuf's well-known-type helpers for ``Struct`` are Python
code over the C (upb) message. This times the ways of doing the same conversion on the
contexts of the example workflows, in one process, CPU time, best of several slices:

    .venv/bin/python bench/convert_costs.py [seconds-per-item]   # default 1

Every candidate is checked to give the same message (or dict) as the reference first.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from google import protobuf
from google.protobuf import json_format, struct_pb2
from google.protobuf.internal import api_implementation

from statewrightd.api import convert

REPEATS = 5

# The contexts a response carries in the benchmark's workloads, and a larger one.
CONTEXTS: dict[str, dict[str, Any]] = {
    "order-fulfilment": {
        "items": ["a"],
        "price": 3.0,
        "quantity": 2,
        "total": 6.0,
        "reserved": True,
        "charged": True,
        "shipped": True,
    },
    "mail-approval": {"topic": "benchmark", "approver": "bench", "decision": "approve"},
    "nested, 40 values": {
        "customer": {"id": "c-1", "name": "Ada", "tags": ["vip", "eu", "beta"]},
        "lines": [{"sku": f"s{i}", "qty": i, "price": 1.5 * i} for i in range(8)],
        "flags": {"gift": False, "express": True},
        "note": "leave at the door",
    },
}


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        count = 0
        began = time.process_time()
        deadline = began + seconds / REPEATS
        while time.process_time() < deadline:
            for _ in range(50):
                fn()
            count += 50
        best = min(best, (time.process_time() - began) / count)
    return best * 1e6


def finite(value: Any) -> Any:
    """The values with NaN and infinities replaced by None (a copy)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def via_update(values: dict[str, Any]) -> struct_pb2.Struct:
    """Before: ``Struct.update`` of the values with non-finite numbers replaced."""
    message = struct_pb2.Struct()
    message.update(finite(values))
    return message


def via_parse_dict(values: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    json_format.ParseDict(finite(values), message)
    return message


def via_json_parse(values: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    json_format.Parse(json.dumps(values, allow_nan=False), message)
    return message


def dict_via_message_to_dict(message: struct_pb2.Struct) -> dict[str, Any]:
    out: dict[str, Any] = json_format.MessageToDict(message)
    return out


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    to_struct: dict[str, Callable[[dict[str, Any]], struct_pb2.Struct]] = {
        "Struct.update (before)": via_update,
        "json_format.ParseDict": via_parse_dict,
        "json_format.Parse of json.dumps": via_json_parse,
        "convert.dict_to_struct (exact-type walk)": convert.dict_to_struct,
    }
    print(f"protobuf {protobuf.__version__}, {api_implementation.Type()} backend")
    print("dict -> Struct (a response's context), µs per call")
    for name, values in CONTEXTS.items():
        reference = via_update(values)
        print(f"  {name}:")
        for label, build in to_struct.items():
            assert build(values) == reference, (label, name)
            cost = per_call_us(functools.partial(build, values), seconds)
            print(f"    {label:<42} {cost:8.1f}")
    print("Struct -> dict (a request's input), µs per call")
    for name, values in CONTEXTS.items():
        message = via_update(values)
        print(f"  {name}:")
        readers: dict[str, Callable[[], object]] = {
            "convert.struct_to_dict (now)": functools.partial(
                convert.struct_to_dict, message, "input"
            ),
            "json_format.MessageToDict": functools.partial(dict_via_message_to_dict, message),
        }
        for label, read in readers.items():
            print(f"    {label:<42} {per_call_us(read, seconds):8.1f}")


if __name__ == "__main__":
    main()
