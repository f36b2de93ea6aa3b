"""Steps' saves on their way to the group-commit writer, and their verdicts on the way back.

The saves a batch of the EventLoop decides are handed to the writer together, when the
batch ends (one hand-off for many steps); the writer's verdicts come back to the EventLoop
thread, a batch's in one posted callable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from statewrightd import errors
from statewrightd.engine.event_loop import EventLoop
from statewrightd.store.records import InstanceRecord, Operation
from statewrightd.store.writer import GroupCommitWriter

_log = logging.getLogger(__name__)

S = TypeVar("S")  # what the runtime keeps of a save in flight
Verdict = InstanceRecord | errors.StoreError


class SaveQueue(Generic[S]):
    """EventLoop thread only."""

    def __init__(
        self,
        loop: EventLoop,
        writer: GroupCommitWriter,
        *,
        saved: Callable[[S, Verdict], None],
        refused: Callable[[S, errors.StatewrightError, bool], None],
    ) -> None:
        """``saved`` gets each save's verdict on this thread; ``refused`` a save the writer
        did not take (True: whether it took it is unknown, so the store decides what is
        cached)."""
        self._loop = loop
        self._writer = writer
        self._saved = saved
        self._refused = refused
        self._batch: list[tuple[S, Operation]] = []
        loop.at_batch_end(self._submit)

    def add(self, save: S, op: Operation) -> None:
        self._batch.append((save, op))

    def _submit(self) -> None:
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        refusals: list[errors.StatewrightError | None]
        unknown = False
        try:
            refusals = list(self._writer.submit_many([(op, self._deliver(s)) for s, op in batch]))
        except Exception as exc:
            _log.exception("handing %d saves to the writer failed", len(batch))
            refusals, unknown = [errors.Internal.wrapping(exc) for _ in batch], True
        for (save, _), refusal in zip(batch, refusals, strict=True):
            if refusal is not None:
                self._refused(save, refusal, unknown)

    def _deliver(self, save: S) -> Callable[[Verdict], None]:
        loop, saved = self._loop, self._saved

        def deliver(verdict: Verdict) -> None:
            if loop.in_loop():  # the writer posts a batch's verdicts here in one hand-off
                saved(save, verdict)
                return
            try:
                loop.post(lambda: saved(save, verdict))
            except errors.Unavailable:
                _log.warning("event loop stopped before a save outcome was delivered")

        return deliver
