"""A step's processor time: the current thread's, less what the cyclic garbage collector
took on it.

A step's evaluations have a budget of processor time (``limits.cpu_seconds``). A
collection of the whole heap runs on whichever thread allocates when it is due, and on a
busy server with a large heap it takes tens of milliseconds: counted against the step it
interrupts, it failed instances whose own expressions took microseconds (seen under the
fault suite's heaviest load, EVALUATION_BUDGET_EXCEEDED on `string(event.payload.message)`).
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

_local = threading.local()


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _local.began = time.thread_time()
        return
    began = getattr(_local, "began", None)
    if began is not None:
        _local.spent = getattr(_local, "spent", 0.0) + time.thread_time() - began
        _local.began = None


gc.callbacks.append(_on_collection)


def collected() -> float:
    """Processor time the collector has taken on this thread so far."""
    spent: float = getattr(_local, "spent", 0.0)
    return spent


def step_time() -> float:
    """This thread's processor time, collections left out."""
    return time.thread_time() - collected()
