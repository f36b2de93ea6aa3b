"""The session cache: bounded by its count and by its contexts' bytes of JSON."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

from statewrightd.definitions.registry import Loaded
from statewrightd.domain import Status
from statewrightd.engine.model import Snapshot
from statewrightd.engine.sessions import LOOK_PAST, Session, SessionCache, context_bytes
from statewrightd.store.records import InstanceRecord


def session(wid: str, context: dict[str, Any], measured: int | None = None) -> Session:
    snapshot = Snapshot(wid, "d", 1, "s", Status.RUNNING, context, 1)
    record = cast(InstanceRecord, SimpleNamespace(workflow_id=wid))
    return Session(cast(Loaded, None), snapshot, record, context_bytes=measured)


def nothing_live(workflow_id: str) -> bool:
    return False


def test_a_context_weighs_its_json_as_the_store_writes_it() -> None:
    context = {"name": "Zoë", "n": [1, 2.5, None], "nested": {"ok": True}}
    written = json.dumps(context, ensure_ascii=False, separators=(",", ":")).encode()
    assert context_bytes(context) == len(written)


def test_the_least_recently_used_go_when_the_contexts_pass_the_budget() -> None:
    cache = SessionCache(100, nothing_live, budget=1000)
    for n in range(5):
        cache.remember(session(f"w{n}", {}, measured=300))
    assert len(cache) == 3 and cache.context_bytes == 900
    assert cache.peek("w0") is None and cache.peek("w1") is None
    cache.get("w2")  # now the most recently used: w3 goes next
    cache.remember(session("w5", {}, measured=300))
    assert cache.peek("w3") is None and cache.peek("w2") is not None
    assert cache.context_bytes == 900


def test_a_session_remembered_again_is_counted_at_its_new_size() -> None:
    cache = SessionCache(100, nothing_live, budget=10_000)
    grown = session("w", {}, measured=100)
    cache.remember(grown)
    grown.context_bytes = 4000  # a step grew its context, in place
    cache.remember(grown)
    assert cache.context_bytes == 4000
    cache.remember(session("v", {}, measured=50))
    assert cache.context_bytes == 4050
    cache.drop("w")
    cache.forget(["v", "unknown"])
    assert (len(cache), cache.context_bytes) == (0, 0)


def test_a_session_not_yet_measured_is_measured_when_remembered() -> None:
    cache = SessionCache(100, nothing_live, budget=10_000)
    unmeasured = session("w", {"text": "x" * 100})
    cache.remember(unmeasured)
    assert unmeasured.context_bytes == len('{"text":""}') + 100
    assert cache.context_bytes == unmeasured.context_bytes


def test_the_count_still_bounds_small_contexts() -> None:
    cache = SessionCache(2, nothing_live, budget=10_000)
    for n in range(4):
        cache.remember(session(f"w{n}", {}, measured=1))
    assert len(cache) == 2 and cache.context_bytes == 2


def test_a_live_segments_session_is_never_let_go() -> None:
    live = {"w0", "w1"}
    cache = SessionCache(100, live.__contains__, budget=500)
    cache.remember(session("w0", {}, measured=400))
    cache.remember(session("w1", {}, measured=400))
    assert cache.peek("w0") is not None and cache.peek("w1") is not None
    assert cache.context_bytes == 800, "over the budget while both are being stepped"
    live.clear()
    cache.remember(session("w2", {}, measured=50))
    assert cache.peek("w0") is None, "once their steps are done the oldest goes first"
    assert cache.peek("w1") is not None and cache.context_bytes == 450


def test_one_remember_looks_past_a_bounded_number_of_live_sessions() -> None:
    cache = SessionCache(100, lambda wid: wid.startswith("live"), budget=0)
    for n in range(LOOK_PAST + 10):
        cache.remember(session(f"live{n}", {}, measured=1))
    cache.remember(session("idle", {}, measured=1))
    assert cache.peek("idle") is not None, "the live ones in front of it used up the look"
    cache.remember(session("live-last", {}, measured=1))
    assert cache.peek("idle") is None, "the next remember goes on where the last stopped"
