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
# The collector's thresholds (the default is 700, 10, 10). A step allocates hundreds of
# containers, so the default ran a young collection, and the step clock's callback around
# it, every few steps; fewer, larger collections cost less CPU in all (task steps with two
# replicas, A/B in two rounds of three: 1.14 -> 1.06 ms a task step). Full collections
# stay rare: what start-up made is frozen out of them.
GC_THRESHOLDS = (20_000, 20, 20)


def tune_interpreter() -> None:
    sys.setswitchinterval(SWITCH_INTERVAL)
    # Everything alive after start-up (modules, generated protos, compiled definitions)
    # lives as long as the process: take it out of the collector's full scans, whose
    # pauses stall every thread. Objects created later are collected as usual.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


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
