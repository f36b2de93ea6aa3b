"""Interpreter settings for a long-running server process, applied once at start."""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys
from collections.abc import Callable

# The GIL is handed between the asyncio thread, the EventLoop and the writer many times per
# request; the default 5 ms switch interval lets one of them hold it while the others have
# replies ready, which shows as queueing latency.
SWITCH_INTERVAL = 0.001


def tune_interpreter() -> None:
    sys.setswitchinterval(SWITCH_INTERVAL)
    # Everything alive after start-up (modules, generated protos, compiled definitions)
    # lives as long as the process: take it out of the collector's full scans, whose
    # pauses stall every thread. Objects created later are collected as usual.
    gc.collect()
    gc.freeze()


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the process's asyncio loop (grpc.aio's calls, the console, the
    supervisor): uvloop's where it is installed, which costs less CPU per call than the
    standard loop; the standard loop elsewhere (Windows, which uvloop does not support)."""
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return asyncio.new_event_loop
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
