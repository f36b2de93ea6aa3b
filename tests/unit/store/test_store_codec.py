"""Pure checks of value validation, page tokens, timestamps and migration parsing."""

from __future__ import annotations

import base64
import hashlib
import json
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from statewrightd.domain import Status, TaskStatus
from statewrightd.errors import InvalidArgument, SerializationError
from statewrightd.store.codec import (
    check_json,
    clamp_page_size,
    decode_page_token,
    dumps,
    encode_op,
    encode_page_token,
    from_micros,
    to_micros,
)
from statewrightd.store.records import (
    Create,
    InstanceRecord,
    TaskChange,
    TaskFinish,
    TaskRelease,
    TimerChange,
)
from statewrightd.store.schema import available, backend_of, sqlite_path, sqlite_statements
from tests.support.store_records import history


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -(2**63), 2**63 - 1, 1.5, "", "ü✓", [], {}, {"a": [1, {"b": None}]}],
)
def test_json_values_that_round_trip_are_accepted(value: object) -> None:
    check_json(value, "v")


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, 2**63, b"x", {1}, (1,), object(), {2: "k"}, "a\x00", "\udc80"],
)
def test_unsupported_values_are_rejected(value: object) -> None:
    with pytest.raises(SerializationError):
        dumps({"field": value}, "context")


def test_error_names_the_offending_path() -> None:
    with pytest.raises(SerializationError, match=r"context\.a\[1\]"):
        dumps({"a": [1, math.nan]}, "context")


def test_depth_is_bounded() -> None:
    deep: object = 1
    for _ in range(100):
        deep = [deep]
    with pytest.raises(SerializationError, match="deeper"):
        check_json(deep, "v")


def test_page_token_round_trip_and_binding() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    token = encode_page_token(when, "w-1", "mail", "RUNNING")
    assert decode_page_token(token, "mail", "RUNNING") == (when, "w-1")
    assert decode_page_token("", None, None) is None
    with pytest.raises(InvalidArgument):
        decode_page_token(token, "mail", None)
    with pytest.raises(InvalidArgument):
        decode_page_token(token[:-2], "mail", "RUNNING")


def test_page_token_is_bound_to_order_and_prefix_and_old_tokens_still_decode() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    token = encode_page_token(when, "w-1", None, None, order="create_time desc", id_prefix="w-")
    assert decode_page_token(token, None, None, order="create_time desc", id_prefix="w-") == (
        when,
        "w-1",
    )
    for order, prefix in [("", "w-"), ("create_time desc", None), ("update_time desc", "w-")]:
        with pytest.raises(InvalidArgument):
            decode_page_token(token, None, None, order=order, id_prefix=prefix)
    # A token of the default listing, as servers issued them before orders existed.
    key = hashlib.sha256(b"mail\x1fRUNNING").hexdigest()[:12]
    raw = json.dumps(["i1", 1_767_323_045_000_006, "w-1", key]).encode()
    old = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert decode_page_token(old, "mail", "RUNNING") == (when, "w-1")


def test_page_size_defaults_and_limits() -> None:
    assert clamp_page_size(0) == 50
    assert clamp_page_size(10**6) == 1000
    with pytest.raises(InvalidArgument):
        clamp_page_size(-1)


def test_microsecond_timestamps_are_exact() -> None:
    moment = datetime(2026, 2, 3, 4, 5, 6, 789012, tzinfo=timezone(timedelta(hours=2)))
    assert from_micros(to_micros(moment)) == moment
    assert from_micros(to_micros(moment)).tzinfo == UTC


def test_database_url_schemes() -> None:
    assert backend_of("postgresql://u@h/db") == "postgres"
    assert backend_of("sqlite:///rel.db") == "sqlite"
    assert sqlite_path("sqlite:////abs/x.db") == "/abs/x.db"
    with pytest.raises(InvalidArgument):
        backend_of("mysql://x")


def test_migrations_are_numbered_from_one_on_both_backends() -> None:
    # Numbers are handed out to parallel work ahead of time, so a gap is allowed; an order
    # that goes back or repeats is not.
    for backend in ("postgres", "sqlite"):
        versions = [m.version for m in available(backend)]
        assert versions[0] == 1
        assert versions == sorted(set(versions))
    assert [m.name for m in available("postgres")] == [m.name for m in available("sqlite")]


def test_sqlite_script_splitting_skips_comments() -> None:
    script = "-- note\nCREATE TABLE a (x TEXT);\n\nCREATE INDEX i ON a (x);\n"
    assert sqlite_statements(script) == ["CREATE TABLE a (x TEXT);", "CREATE INDEX i ON a (x);"]


def test_transitions_are_stored_as_one_compact_string_and_read_back_as_maps() -> None:
    from statewrightd.store.codec import decode_transitions, encode_transitions

    moves = [
        {"from": "draft", "to": "review", "event": None},
        {"from": "review", "to": "__finish__", "event": "task_completed"},
    ]
    compact = encode_transitions(moves)
    assert compact == "draft>review review>__finish__@task_completed"
    assert decode_transitions(compact) == moves
    assert decode_transitions(encode_transitions([])) == []
    # What the compact form cannot say is kept as it is, and read back the same.
    for odd in (
        [{"from": "a>b", "to": "c", "event": None}],
        [{"from": "a", "to": "b", "event": "e", "extra": 1}],
        [{"from": "a", "to": "", "event": None}],
        ["not a map"],
    ):
        assert encode_transitions(odd) == odd
        assert decode_transitions(odd) == odd


_NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timers", "tasks"),
    [
        (TimerChange(disarm=True), TaskChange()),
        (TimerChange(fired="t-1"), TaskChange()),
        (TimerChange(), TaskChange(cancel=True)),
        (TimerChange(), TaskChange(finish=TaskFinish("1", TaskStatus.COMPLETED, "t", 1, True))),
        (TimerChange(), TaskChange(release=TaskRelease("1-2", "q", _NOW, _NOW))),
    ],
)
def test_a_new_instance_touches_no_timer_or_task_it_could_not_have(
    timers: TimerChange, tasks: TaskChange
) -> None:
    # The statements that create instances do none of this work (PostgreSQL's and Citus's
    # leave it out): an operation that asked for it would be silently half applied.
    new = InstanceRecord("w", "d", 1, "s", Status.RUNNING, {}, 1, None, _NOW, _NOW)
    with pytest.raises(SerializationError, match="a new instance has no"):
        encode_op(Create(new, history(new), timers=timers, tasks=tasks))
