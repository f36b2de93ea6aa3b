"""DeleteWorkflow on the EventLoop thread: removing a finished instance while holding it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from statewrightd import errors
from statewrightd.engine.admission import AdmissionRegistry, AdmissionState
from statewrightd.engine.event_loop import EventLoop, Phase
from statewrightd.engine.jobs import Job
from statewrightd.engine.offload import Offload
from statewrightd.engine.sessions import SessionCache
from statewrightd.engine.stepping import busy, shutting_down
from statewrightd.store.records import Purged
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Removal:
    """The removal holds the instance's admission segment, as a step would: no step of
    this replica runs on it meanwhile, and events that arrive wait, then find it gone.
    The store removes only a finished instance at the revision asked for, whatever other
    replicas do. EventLoop thread only."""

    loop: EventLoop
    admission: AdmissionRegistry
    cache: SessionCache
    repo: Repository
    offload: Offload
    resubmit: Callable[[Job], None]

    def remove(
        self, workflow_id: str, revision: int, reply: Callable[[Purged | Exception], None]
    ) -> None:
        """Remove finished instance ``workflow_id`` at ``revision``; ``reply`` gets what
        was removed, or why nothing was."""
        if self.loop.phase is not Phase.RUNNING:
            reply(shutting_down())
            return
        if self.admission.get(workflow_id) is not None:
            reply(busy(workflow_id))
            return
        segment = self.admission.admit(workflow_id)
        segment.state = AdmissionState.PERSISTING
        token, repo = segment.token, self.repo

        def removed(result: Purged | errors.StatewrightError) -> None:
            released = self.admission.release(workflow_id, token)
            self.cache.drop(workflow_id)
            try:
                reply(result)
            except Exception:
                _log.exception("workflow %s: answering a removal failed", workflow_id)
            if released is not None:
                for pending in released.pending:
                    self.resubmit(pending)

        self.offload(lambda: repo.delete_workflow(workflow_id, revision), removed)
