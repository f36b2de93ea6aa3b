"""Saves whose outcome is unknown: the instance waits, re-checked until the store says.

A save that lost its connection around COMMIT may or may not have committed. Its instance
stays ``RECOVERY_REQUIRED`` (its admission segment held, nothing cached) while this
re-reads the rows in the background, with backoff: the post-state means committed, the
pre-state (or another step's revision) means not; either way the instance is released.
EventLoop thread only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from statewrightd import errors
from statewrightd.engine.admission import AdmissionRegistry, AdmissionState, Recovery
from statewrightd.engine.event_loop import EventLoop
from statewrightd.engine.offload import Offload
from statewrightd.engine.sessions import Session
from statewrightd.store.records import InstanceRecord, Operation
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

RECHECK_FIRST_DELAY = 0.2
RECHECK_MAX_DELAY = 30.0

# A verdict, wrapped so that one (returned) is never confused with the re-check itself
# failing (raised), e.g. while the database is still unreachable.
_Verdict = tuple[InstanceRecord | errors.StoreError]


class Recoveries:
    def __init__(
        self, loop: EventLoop, admission: AdmissionRegistry, repo: Repository, offload: Offload
    ) -> None:
        self._loop = loop
        self._admission = admission
        self._repo = repo
        self._offload = offload
        self.resolved = 0

    def begin(
        self,
        workflow_id: str,
        token: int,
        op: Operation,
        error: errors.OutcomeUnknown,
        session: Session | None,
    ) -> None:
        """Hold the instance (its segment, ``token``) until the outcome of ``op`` is known.
        ``session`` is the last state known for certain: signals refused meanwhile show it."""
        segment = self._admission.get(workflow_id)
        assert segment is not None
        segment.state = AdmissionState.RECOVERY_REQUIRED
        segment.recovery = Recovery(op, since=time.time(), last_error=error)
        segment.recovery.session = session
        if "backend_pid" in error.metadata:
            segment.recovery.last_error_pid = (int(error.metadata["backend_pid"]),)
        _log.warning(
            "workflow %s: save outcome unknown; recovery required",
            workflow_id,
            extra={"workflow_id": workflow_id},
        )
        self._schedule(workflow_id, token, RECHECK_FIRST_DELAY)

    def _current(self, workflow_id: str, token: int) -> Recovery | None:
        segment = self._admission.get(workflow_id)
        if segment is None or segment.token != token:
            return None
        return segment.recovery

    def _schedule(self, workflow_id: str, token: int, delay: float) -> None:
        recovery = self._current(workflow_id, token)
        if recovery is None:
            return
        recovery.next_attempt = time.time() + delay
        self._loop.call_later(
            delay,
            lambda: self._guarded(
                workflow_id, token, delay, lambda: self._recheck(workflow_id, token, delay)
            ),
        )

    def _guarded(
        self, workflow_id: str, token: int, delay: float, stage: Callable[[], None]
    ) -> None:
        # A re-check that raised must not end the recovery: the instance would stay
        # RECOVERY_REQUIRED for good. It is tried again later, as if the database had failed.
        try:
            stage()
        except Exception:
            _log.exception("workflow %s: recovery re-check failed", workflow_id)
            self._schedule(workflow_id, token, min(delay * 2, RECHECK_MAX_DELAY))

    def _recheck(self, workflow_id: str, token: int, delay: float) -> None:
        recovery = self._current(workflow_id, token)
        if recovery is None:
            return
        recovery.attempts += 1
        repo, pid, op = self._repo, recovery.last_error_pid, recovery.operation

        def verdict() -> _Verdict:
            return (repo.resolve_outcome([op], backend_pids=pid)[0],)

        self._offload(
            verdict,
            lambda result: self._guarded(
                workflow_id,
                token,
                delay,
                lambda: self._on_rechecked(workflow_id, token, delay, result),
            ),
        )

    def _on_rechecked(
        self,
        workflow_id: str,
        token: int,
        delay: float,
        result: _Verdict | errors.StatewrightError,
    ) -> None:
        recovery = self._current(workflow_id, token)
        if recovery is None:
            return
        verdict = result[0] if isinstance(result, tuple) else None
        if verdict is not None and not isinstance(verdict, errors.OutcomeUnknown):
            # Committed (a record), or known not to have committed (StorageUnavailable for
            # "pre-state", Conflict for "another step owns that revision"): resolved.
            self.resolved += 1
            _log.info(
                "workflow %s: recovery resolved (%s) after %d re-checks",
                workflow_id,
                "committed" if isinstance(verdict, InstanceRecord) else "not committed",
                recovery.attempts,
                extra={"workflow_id": workflow_id},
            )
            self._admission.release(workflow_id, token)
            return
        failure = verdict if verdict is not None else result
        if isinstance(failure, Exception):
            recovery.last_error = failure
        self._schedule(workflow_id, token, min(delay * 2, RECHECK_MAX_DELAY))
