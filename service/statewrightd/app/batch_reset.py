"""Where a batch's reset puts each instance back: a revision found in its own history.

A batch resets many instances that each took their own path, so it cannot name one
revision for all of them: it names a state (the latest revision where the instance entered
it), or nothing (the last revision before the instance failed). Each is found in the
instance's history, read backwards from its current revision a page at a time, within
its current run (a restart begins a new one, whose history does not go back into the last).
"""

from __future__ import annotations

from collections.abc import Sequence

from statewrightd import errors
from statewrightd.app.reads import Reads
from statewrightd.domain import Status
from statewrightd.reasons import Reason
from statewrightd.store.records import HistoryRecord

HISTORY_PAGE = 200
# How far back a reset looks: an instance whose state was entered longer ago is refused
# (its item fails) rather than read whole.
MAX_HISTORY_READ = 10_000


def target_revision(
    rows: Sequence[HistoryRecord], entered_state: str, *, complete: bool
) -> int | None:
    """The revision to reset to among ``rows`` (consecutive revisions of one run, oldest
    first, the last the instance's current one); None when they hold none. ``complete``:
    ``rows`` begin at the run's first revision (else an earlier row may decide).

    ``entered_state``: the latest revision whose step entered that state (the revision
    before it was in another state, or it is the run's first). Empty: the latest revision
    before the instance failed, the latest that is not FAILED. A delayed start's revision
    entered no state: it is never a target."""
    usable = [row for row in rows if (row.error or {}).get("reason") != Reason.START_DELAYED]
    if not entered_state:
        for row in reversed(usable):
            if row.status != Status.FAILED:
                return row.revision
        return None
    for i in range(len(usable) - 1, -1, -1):
        row = usable[i]
        if row.state != entered_state:
            continue
        if i > 0 and usable[i - 1].state != entered_state:
            return row.revision
        if i == 0 and complete:
            return row.revision
    return None


async def reset_revision(reads: Reads, workflow_id: str, entered_state: str) -> int:
    """The revision a batch's reset puts ``workflow_id`` back to (the call's view
    applies); FAILED_PRECONDITION when there is none: NOT_FAILED for an instance that is
    not FAILED when no state is named, REVISION_NOT_FOUND when history holds none."""
    record = (await reads.get(workflow_id)).record
    if not entered_state and record.status != Status.FAILED:
        raise errors.FailedPrecondition(
            f"workflow {workflow_id} is {record.status}, not FAILED: a reset that names no "
            "state puts back only failed instances",
            reason=Reason.NOT_FAILED,
            metadata={"workflow_id": workflow_id, "status": record.status},
        )
    rows: list[HistoryRecord] = []
    high = record.revision
    while high > 0 and len(rows) < MAX_HISTORY_READ:
        low = max(0, high - HISTORY_PAGE)
        page = await reads.history_after(workflow_id, low, high - low)
        page = [row for row in page if row.revision <= high]
        # A row of an earlier run ends the search: this run's rows are those after it.
        earlier = max((i for i, row in enumerate(page) if row.run != record.run), default=-1)
        complete = low == 0 or earlier >= 0
        rows = page[earlier + 1 :] + rows
        found = target_revision(rows, entered_state, complete=complete)
        if found is not None:
            return found
        if complete:
            break
        high = low
    where = f"entered state {entered_state}" if entered_state else "was not FAILED"
    raise errors.FailedPrecondition(
        f"history of workflow {workflow_id} holds no revision where it {where} (in its "
        f"current run, within its last {MAX_HISTORY_READ} revisions)",
        reason=Reason.REVISION_NOT_FOUND,
        metadata={"workflow_id": workflow_id, "entered_state": entered_state},
    )
