"""A step's processor time leaves out the garbage collector's."""

from __future__ import annotations

import gc
import time

from statewrightd.engine.step_clock import collected, step_time


def test_a_collection_on_this_thread_is_not_counted_as_the_step_s() -> None:
    # A heap of reference cycles, which only the cyclic collector frees.
    gc.disable()  # nothing collected before the collection measured
    try:
        heap: list[list[object]] = [[] for _ in range(200_000)]
        for a in heap:
            a.append(a)
        del heap, a
    finally:
        gc.enable()
    before_thread, before_gc, before_step = time.thread_time(), collected(), step_time()
    freed = gc.collect()
    taken = collected() - before_gc
    assert freed >= 200_000
    assert taken > 0, "the collection's processor time was recorded"
    thread = time.thread_time() - before_thread
    step = step_time() - before_step
    # The thread was charged with the collection; the step only with what surrounds it
    # (reading the clocks, the collector's callbacks).
    assert thread >= taken
    assert step < taken / 2
