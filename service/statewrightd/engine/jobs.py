"""Commands being executed, and how each is answered: once, with the retries of its
request id that arrived while it ran."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from statewrightd.engine.answers import Outcome, Replay, Reply, Result
from statewrightd.engine.commands import Command
from statewrightd.engine.observer import Observation, StepObserver

_log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class Job:
    """A command being executed, and what the runtime keeps beside it."""

    command: Command
    reply: Reply
    observed: Observation | None = None  # what the observer noted where the command was built
    attempts: int = 0  # conflict retries so far
    fresh: bool = False  # the session was loaded from the store by this job
    token: int = 0  # the admission segment this job holds, once admitted

    @property
    def workflow_id(self) -> str:
        return self.command.workflow_id


class Replies:
    """EventLoop thread only."""

    def __init__(self, observer: StepObserver) -> None:
        self._observer = observer
        # (workflow id, request id) -> its retries meanwhile: a request id is unique per
        # instance, so two instances' requests may share one.
        self._running: dict[tuple[str, str], list[Job]] = {}

    def parked(self, job: Job) -> bool:
        """Whether ``job`` is a retry of a request being executed: then it waits for that
        one's answer."""
        key = job.command.request
        if key is None:
            return False
        retries = self._running.get((job.workflow_id, key.request_id))
        if retries is None:
            return False
        retries.append(job)
        return True

    def running(self, job: Job) -> None:
        """``job`` is admitted: retries of its request id wait for its answer."""
        key = job.command.request
        if key is not None:
            self._running[(job.workflow_id, key.request_id)] = []

    def finished(self, job: Job, result: Result) -> None:
        """Answer ``job``, and the retries that arrived while it ran: with what it got when
        it failed, with a replay of it when it succeeded."""
        self.answer(job, result)
        key = job.command.request
        if key is not None and isinstance(result, Outcome):
            self.retries(job, Replay(key.request_id))
        else:
            self.retries(job, result)

    def retries(self, job: Job, result: Result) -> None:
        """Answer the retries of ``job``'s request id that arrived while it ran."""
        key = job.command.request
        if key is not None:
            for retry in self._running.pop((job.workflow_id, key.request_id), []):
                self.answer(retry, result)

    def answer(self, job: Job, result: Result) -> None:
        try:
            job.reply(result)
        except Exception:
            _log.exception("workflow %s: answering a step failed", job.workflow_id)
        try:
            self._observer.finished(job.command, job.attempts, job.observed, result)
        except Exception:
            _log.exception("workflow %s: observing a step failed", job.workflow_id)
