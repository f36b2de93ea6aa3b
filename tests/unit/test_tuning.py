"""The process's asyncio loop: uvloop's where it is installed, the standard one without."""

from __future__ import annotations

import asyncio
import importlib
import sys

import pytest

from statewrightd.tuning import loop_factory


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
