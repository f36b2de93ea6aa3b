"""The errors both backends raise, built in one place so that they say the same thing.

Messages, reasons and metadata reach clients unchanged, so a backend never spells one of
these itself.
"""

from __future__ import annotations

from typing import TypeVar

from statewrightd.errors import (
    Conflict,
    RecordExists,
    RecordLive,
    RecordNotFound,
    StorageUnavailable,
    StoreError,
    TaskFenced,
    TimerGone,
)
from statewrightd.reasons import Reason
from statewrightd.store.records import Create, DefinitionRecord, Operation, target_of

_E = TypeVar("_E", bound=StoreError)


def _of_workflow(error: type[_E], workflow_id: str, what: str, **metadata: object) -> _E:
    """An error about one instance, which its metadata names."""
    return error(
        f"workflow {workflow_id!r} {what}", metadata={"workflow_id": workflow_id, **metadata}
    )


def workflow_not_found(workflow_id: str) -> RecordNotFound:
    return _of_workflow(RecordNotFound, workflow_id, "not found")


def workflow_live(workflow_id: str, status: str) -> RecordLive:
    what = f"is {status}: only a finished instance can be removed"
    return _of_workflow(RecordLive, workflow_id, what, status=status)


def revision_moved(workflow_id: str, expected: int | None, actual: int) -> Conflict:
    return Conflict(
        f"workflow {workflow_id!r} is at revision {actual}, not {expected}",
        actual_revision=actual,
        metadata={"workflow_id": workflow_id, "expected_revision": expected},
    )


def workflow_exists(workflow_id: str) -> RecordExists:
    return _of_workflow(RecordExists, workflow_id, "already exists")


def batch_exists(batch_id: str) -> RecordExists:
    """A batch id that is taken; the app tells a repeated start from a different one."""
    return RecordExists(f"batch {batch_id!r} already exists", metadata={"batch_id": batch_id})


def request_used(request_id: str, workflow_id: str) -> RecordExists:
    return RecordExists(
        f"request id {request_id!r} was already used",
        reason=Reason.REQUEST_EXISTS,
        metadata={"request_id": request_id, "workflow_id": workflow_id},
    )


def refused(
    op: Operation,
    *,
    request_free: bool,
    actual_revision: int | None,
    task: tuple[str, str | None] | None = None,
) -> StoreError:
    """Why an operation whose compare-and-swap wrote nothing was refused.

    ``request_free``: its request id (if any) was not taken; ``actual_revision``: the
    instance's committed revision as read after the failed save (None: no such instance);
    ``task``: the (status, lease token) of the task the step finishes, as read then.
    """
    wid = target_of(op).workflow_id
    if not request_free:
        return request_used(op.request.request_id if op.request else "", wid)
    if isinstance(op, Create):
        return workflow_exists(wid)
    if actual_revision is None:
        return workflow_not_found(wid)
    finish = op.tasks.finish
    if finish is not None and actual_revision == op.expected_revision:
        # The revision matched, so what refused the save was the task's fence.
        return task_fence_broken(wid, finish.task_id, task)
    fired = op.timers.fired
    if fired is not None and actual_revision == op.expected_revision:
        # The revision matched, so what refused the save was its timer's being gone.
        return TimerGone(
            f"workflow {wid!r}: timer {fired} is no longer armed",
            metadata={"workflow_id": wid, "timer_id": fired},
        )
    return revision_moved(wid, op.expected_revision, actual_revision)


def task_fence_broken(
    workflow_id: str, task_id: str, found: tuple[str, str | None] | None
) -> StoreError:
    """A step that finishes a task found the task no longer as it saw it: cancelled (its
    state was left), or leased again (this lease was superseded), or finished already."""
    meta = {"workflow_id": workflow_id, "task_id": task_id}
    if found is not None and found[0] == "CANCELLED":
        return TaskFenced(
            f"task {task_id} of {workflow_id!r} was cancelled",
            reason=Reason.TASK_CANCELLED,
            metadata=meta,
        )
    return TaskFenced(
        f"task {task_id} of {workflow_id!r}: this lease is no longer current",
        reason=Reason.LEASE_SUPERSEDED,
        metadata=meta,
    )


def task_not_found(workflow_id: str, task_id: str) -> RecordNotFound:
    return RecordNotFound(
        f"task {task_id} of workflow {workflow_id!r} not found",
        reason=Reason.TASK_NOT_FOUND,
        metadata={"workflow_id": workflow_id, "task_id": task_id},
    )


def definition_not_found(name: str, version: int | None) -> RecordNotFound:
    what = f"definition {name!r}" + ("" if version is None else f" version {version}")
    return RecordNotFound(
        f"{what} not found",
        reason=Reason.DEFINITION_NOT_FOUND,
        metadata={"name": name, "version": "latest" if version is None else version},
    )


def same_definition_or_raise(stored: DefinitionRecord, rec: DefinitionRecord) -> DefinitionRecord:
    """The stored version when ``rec`` has its content; a (name, version) is immutable."""
    if stored.digest == rec.digest:
        return stored
    raise RecordExists(
        f"definition {rec.name} version {rec.version} already exists with different content "
        f"(stored from {stored.source_name!r}, offered from {rec.source_name!r}); "
        "definitions are immutable: bump the version",
        reason=Reason.DEFINITION_VERSION_EXISTS,
        metadata={
            "name": rec.name,
            "version": rec.version,
            "existing_source": stored.source_name,
            "new_source": rec.source_name,
        },
    )


def schema_behind(version: int, needed: int) -> StorageUnavailable:
    return StorageUnavailable(
        f"database schema is at version {version}, this server needs "
        f"{needed}; run `statewrightd migrate`",
        reason=Reason.SCHEMA_NOT_MIGRATED,
    )
