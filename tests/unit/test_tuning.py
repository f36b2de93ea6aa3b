"""The process's asyncio loop: uvloop's where it is installed, the standard one without;
the interpreter's settings for a long-running server."""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys

import pytest

from statewrightd.tuning import GC_THRESHOLDS, SWITCH_INTERVAL, loop_factory, tune_interpreter


def test_the_loop_is_uvloop_s_where_it_is_installed() -> None:
    uvloop = importlib.import_module("uvloop")
    loop = loop_factory()()
    try:
        assert isinstance(loop, uvloop.Loop)
        assert loop.run_until_complete(asyncio.sleep(0, "ran")) == "ran"
    finally:
        loop.close()


def test_without_uvloop_the_standard_loop_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import fails as when not installed
    assert loop_factory() is asyncio.new_event_loop


def test_a_server_collects_young_objects_less_often_and_freezes_what_start_up_made() -> None:
    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    try:
        tune_interpreter()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] > 700, "less often than the interpreter's default"
        assert sys.getswitchinterval() == SWITCH_INTERVAL
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
