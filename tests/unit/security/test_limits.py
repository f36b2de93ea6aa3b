"""Input limits: the flags that set them, and the checks at the door and in the engine."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import struct_pb2

from statewrightd.api.convert import ValueLimits, struct_to_dict
from statewrightd.config import (
    ConfigError,
    ServerConfig,
    add_security_arguments,
    add_server_arguments,
    config_from,
)
from statewrightd.definitions import load_definition
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.errors import InvalidArgument


def _config(*argv: str, env: dict[str, str] | None = None) -> ServerConfig:
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    add_security_arguments(parser)
    return config_from(parser.parse_args(argv), env or {})


def test_limits_come_from_flags_then_the_environment() -> None:
    config = _config("--max-context-size", "1000", env={"STATEWRIGHT_RATE_LIMIT": "50"})
    assert config.limits.context_bytes == 1000
    assert (config.limits.rate, config.limits.burst) == (50.0, 50)
    assert not config.reflection and config.auth_config is None
    with pytest.raises(ConfigError, match="between 1 and 20"):
        _config("--max-nesting", "30")
    with pytest.raises(ConfigError, match="go together"):
        _config("--tls-cert", "x.pem")


def test_tls_files_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        _config("--tls-cert", str(tmp_path / "no.pem"), "--tls-key", str(tmp_path / "no.key"))


def _struct(values: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(values)
    return message


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"s": "x" * 101}, "VALUE_TOO_LARGE"),
        ({"l": list(range(11))}, "VALUE_TOO_LARGE"),
        ({f"k{i}": i for i in range(11)}, "VALUE_TOO_LARGE"),
        ({"m": {f"k{i}": i for i in range(11)}}, "VALUE_TOO_LARGE"),
        ({"d": {"a": {"b": {"c": 1}}}}, "VALUE_TOO_DEEP"),
        ({"n": math.nan}, "UNSERIALIZABLE_VALUE"),
        ({"n": math.inf}, "UNSERIALIZABLE_VALUE"),
        ({"a": "y" * 90, "b": "y" * 90, "c": "y" * 90}, "VALUE_TOO_LARGE"),
    ],
)
def test_a_value_over_a_limit_is_refused_at_the_door(
    values: dict[str, object], reason: str
) -> None:
    limits = ValueLimits(nesting=2, string_bytes=100, list_items=10, map_keys=10, total_bytes=200)
    with pytest.raises(InvalidArgument) as refused:
        struct_to_dict(_struct(values), "input", limits)
    assert refused.value.reason == reason
    assert refused.value.metadata["field"].startswith("input")


def test_a_step_that_would_outgrow_the_context_fails_the_instance_where_it_was() -> None:
    defn = load_definition(
        """
name: grow
version: 1
context:
  blob: {type: string, default: ""}
states:
  idle: {}
  grown: {}
transitions:
  - {from: idle, on: grow, to: grown, set: {blob: "'x' + event.payload.more"}}
"""
    )
    before = fsm.start(defn, "g", {}).snapshot
    result = fsm.context_too_large(defn, before, 5000, 1000)
    after = result.snapshot
    assert (after.status, after.state, after.context) == (Status.FAILED, "idle", before.context)
    assert after.error is not None and after.error.reason == "CONTEXT_TOO_LARGE"
    assert after.revision == before.revision + 1
