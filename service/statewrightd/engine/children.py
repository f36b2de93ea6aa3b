"""The child runner: starts child workflows, delivers their ends to their parents, and
cancels the children of parents that no longer wait for them.

A ``workflow:`` state's entry writes a task on the reserved queue CHILD_QUEUE, in the
entering step's transaction (see definitions/read_children.py): that row is the durable
record of the start to make. Every replica runs a runner on its EventLoop thread; a round:

1. leases the ready child tasks (a short first lease), records each child's parent link
   (refusing an id that another instance already holds), and starts each child with the
   id its task names, answering an existing one (so a start made again, after a replica
   died between its lease and its heartbeat, starts nothing twice); a started child's
   task is then held for as long as the child runs (its heartbeat);
2. for every leased child task whose child has ended, completes the task with the
   child's final Workflow (COMPLETED) or gives it up with the child's error (FAILED,
   CANCELLED): a step of the parent, fenced by the task's lease token, so it is applied
   once whichever replica, and however many, deliver it;
3. cancels every live child whose parent's task is no longer open (the parent left the
   state or ended), with the actor ``statewright:parent``; a child's own children follow
   in the next round (the cascade is recursive);
4. releases to retention the finished children whose parents no longer wait for them
   (retention keeps a child until then, so that its parent always gets its end).

Nothing here is remembered between rounds: what to do is read from the store each time,
so a restart, or another replica, carries on where this one stopped. A replica looks
again soon after it scheduled a child task or finished an instance, and at least every
``LOOK_EVERY`` seconds for what the other replicas did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from statewrightd import errors
from statewrightd.definitions.model import CHILD_QUEUE
from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.domain import CHILD_ACTOR, PARENT_ACTOR, TERMINAL, Status, TaskStatus
from statewrightd.engine.answers import Outcome, Result
from statewrightd.engine.background import Background, BackgroundLoop
from statewrightd.engine.commands import (
    PARENT,
    CancelCommand,
    Command,
    CompleteTaskCommand,
    StartCommand,
    TaskGiveUpCommand,
)
from statewrightd.store.records import ChildLink, InstanceRecord, TaskRecord
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

LOOK_EVERY = 1.0
BATCH = 256  # child tasks leased (children started) a round
SCAN = 5000  # leased child tasks, and live children, looked at a round
# A child task's first lease: long enough for the start; the heartbeat that follows the
# start holds it for as long as the child runs.
FIRST_LEASE = 10.0
# A failure type of a child's task that is no failure of the child: its start was refused.
NOT_STARTED = "CHILD_NOT_STARTED"
REMOVED = "CHILD_REMOVED"  # deleted (DeleteWorkflow) before its end was delivered

Submit = Callable[[Command, Callable[[Result], None]], None]


@dataclass(frozen=True, slots=True)
class _Start:
    task: TaskRecord
    command: StartCommand | None  # None: refused, for ``refusal``
    refusal: str = ""


class EndsWatched:
    """The instances whose end the runner acts on soon, as the last round read them: the
    children a parent waits for (their end is delivered) and the parents with live
    children (the children are cancelled).

    Every other instance's end needs no round. An instance that became one of these after
    the read (a child another replica started since) is acted on by the next regular
    round, as anything another replica does; what this replica starts itself is added as
    it starts. Without this, every instance that ended here, child or not, cost a round
    of four reads: most of a step's cost at low rates.
    """

    __slots__ = ("_children", "_parents")

    def __init__(self, children: set[str] | None = None, parents: set[str] | None = None) -> None:
        self._children = children if children is not None else set()
        self._parents = parents if parents is not None else set()

    @classmethod
    def read(cls, leased: list[TaskRecord], live: dict[str, ChildLink]) -> EndsWatched:
        """From the leased child tasks (each a parent waiting for its child) and the live
        children (each with a parent that may end)."""
        children = {child_id(task) for task in leased}
        parents = {task.workflow_id for task in leased}
        parents.update(link.parent_id for link in live.values())
        return cls(children, parents)

    def started(self, task: TaskRecord) -> None:
        self._children.add(child_id(task))
        self._parents.add(task.workflow_id)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self._children or workflow_id in self._parents


@dataclass(slots=True)
class _Round:
    starts: list[_Start] = field(default_factory=list)
    ended: list[tuple[TaskRecord, InstanceRecord]] = field(default_factory=list)
    orphans: list[ChildLink] = field(default_factory=list)
    removed: list[TaskRecord] = field(default_factory=list)  # children gone before delivery
    taken: int = 0  # finished children retention may now remove
    watched: EndsWatched = field(default_factory=EndsWatched)


@dataclass(frozen=True, slots=True)
class ChildStats:
    started: int  # by this replica
    delivered: int
    cancelled: int
    in_flight: int


def child_id(task: TaskRecord) -> str:
    return str(task.input.get("workflow_id", ""))


def child_result(child: InstanceRecord) -> dict[str, Any]:
    """What a parent's ``apply`` reads as ``result``: the child's final Workflow."""
    return {
        "name": f"workflows/{child.workflow_id}",
        "id": child.workflow_id,
        "definition": child.definition,
        "version": child.version,
        "status": str(child.status),
        "state": child.state,
        "revision": child.revision,
        "context": child.context,
    }


def child_failure(
    task: TaskRecord, child: InstanceRecord | None, message: str = "", status: str = NOT_STARTED
) -> dict[str, Any]:
    """The ``child_failed`` payload: the child, how it ended (``status`` when there is no
    child to say) and its error."""
    error = (child.error or {}) if child is not None else {}
    status = str(child.status) if child is not None else status
    return {
        "type": status,
        "message": message or str(error.get("message", "")),
        "child": f"workflows/{child_id(task)}",
        "status": status,
        "error": dict(error),
        "attempts": task.attempt,
        "details": {},
    }


class ChildRunner(BackgroundLoop[_Round, int]):
    """EventLoop thread only, except ``stats`` (a snapshot read from any thread)."""

    label = "child workflows"
    idle_every = LOOK_EVERY

    def __init__(self, on: Background, *, submit: Submit, registry: DefinitionRegistry) -> None:
        super().__init__(on)
        self._submit = submit
        self._registry = registry
        self._in_flight = 0
        self._started = self._delivered = self._cancelled = 0
        self._open = 0
        # Deliveries and cancels submitted and not answered yet, by task (parent id/task
        # id) and by child id: a round does not read or submit them again meanwhile.
        self._busy: set[str] = set()
        self._poked = False
        self._watched = EndsWatched()

    def poke(self) -> None:
        """Something for the runner may be waiting (a child task scheduled, an instance
        ended): a round soon rather than at the next look."""
        if self._claiming:
            self._poked = True  # the round under way read too early: another one after it
        elif self._wake_at is None or (self._wake_at - self._clock.now()).total_seconds() > 0.05:
            self._schedule(0.05)

    def ended(self, workflow_id: str) -> None:
        """A step of this replica ended ``workflow_id``: a round soon if a parent waits for
        it or it leaves children to cancel."""
        if workflow_id in self._watched:
            self.poke()

    def stats(self) -> ChildStats:
        return ChildStats(self._started, self._delivered, self._cancelled, self._in_flight)

    # -- a round: read what to do --------------------------------------------------------

    def _may_claim(self) -> bool:
        return self._in_flight < BATCH

    def _claim(self) -> Callable[[], _Round]:
        repo, registry, now = self._repo, self._registry, self._clock.now()
        busy = frozenset(self._busy)

        def claim() -> _Round:
            work = _Round()
            for task in repo.lease_tasks(CHILD_QUEUE, now, BATCH, FIRST_LEASE):
                work.starts.append(_prepare(repo, registry, task, now))
            leased = _leased_child_tasks(repo)
            live = _live_children(repo)
            started = {t.task.workflow_id + "/" + t.task.task_id for t in work.starts}
            for task in leased:
                wid, key = child_id(task), f"{task.workflow_id}/{task.task_id}"
                if wid in live or key in started or key in busy:
                    continue
                try:
                    child = repo.load(wid)
                except errors.RecordNotFound:
                    # Not started yet (its start is in flight, or comes again); or
                    # deleted (DeleteWorkflow) before its end was delivered.
                    if repo.lookup_tombstone(wid) is not None:
                        work.removed.append(task)
                    continue
                if child.status in TERMINAL:
                    work.ended.append((task, child))
            holding = {(t.workflow_id, t.task_id) for t in leased}
            for link in live.values():
                if (link.parent_id, link.parent_task) in holding or link.workflow_id in busy:
                    continue
                try:
                    parent_task = repo.get_task(link.parent_id, link.parent_task)
                except errors.NotFound:
                    parent_task = None
                if parent_task is None or parent_task.status not in _OPEN:
                    work.orphans.append(link)
            work.taken = take_ends(repo, busy)
            work.watched = EndsWatched.read(leased, live)
            return work

        return claim

    # -- a round: act on it --------------------------------------------------------------

    def _fire(self, claimed: _Round) -> float | None:
        self._watched = claimed.watched
        for start in claimed.starts:
            self._start(start)
        for task, child in claimed.ended:
            self._deliver(task, child)
        for link in claimed.orphans:
            self._cancel(link)
        for task in claimed.removed:
            gone = "the child was removed (its retention) before its end was delivered"
            self._give_up(task, child_failure(task, None, gone, REMOVED))
        poked, self._poked = self._poked, False
        return 0.0 if len(claimed.starts) == BATCH else 0.05 if poked else LOOK_EVERY

    def _start(self, start: _Start) -> None:
        task = start.task
        if start.command is None:
            self._give_up(task, child_failure(task, None, start.refusal))
            return
        self._in_flight += 1
        self._watched.started(task)

        def answered(result: Result) -> None:
            self._in_flight -= 1
            if isinstance(result, errors.StatewrightError):
                if _tried_again(result):
                    return  # its lease lapses, and the start is made again
                self._give_up(task, child_failure(task, None, f"the start failed: {result}"))
                return
            self._started += 1
            self._hold(task)

        self._submit(start.command, answered)

    def _hold(self, task: TaskRecord) -> None:
        """Hold the started child's task for as long as the child runs."""
        repo, now = self._repo, self._clock.now()
        token = task.lease_token or ""

        def beat() -> TaskRecord | None:
            return repo.heartbeat_task(task.workflow_id, task.task_id, token, now, None)

        self._offload(beat, lambda _held: self.poke())

    def _deliver(self, task: TaskRecord, child: InstanceRecord) -> None:
        token = task.lease_token or ""
        if child.status is Status.COMPLETED:
            command: Command = CompleteTaskCommand.of(
                task, token, child_result(child), actor=CHILD_ACTOR, request=None
            )
        else:
            command = TaskGiveUpCommand.of(
                task, child_failure(task, child), actor=CHILD_ACTOR, lease_token=token, leased=True
            )
        key = f"{task.workflow_id}/{task.task_id}"
        self._in_flight += 1
        self._busy.add(key)

        def answered(result: Result) -> None:
            self._in_flight -= 1
            self._busy.discard(key)
            if isinstance(result, Outcome) and result.saved:
                self._delivered += 1

        self._submit(command, answered)

    def _give_up(self, task: TaskRecord, failure: dict[str, Any]) -> None:
        command = TaskGiveUpCommand.of(
            task, failure, actor=CHILD_ACTOR, lease_token=task.lease_token, leased=True
        )
        self._submit(command, lambda _result: None)

    def _cancel(self, link: ChildLink) -> None:
        reason = (
            f"its parent workflows/{link.parent_id} no longer waits for it "
            f"(it left {link.parent_state!r}, or ended)"
        )
        command = CancelCommand(workflow_id=link.workflow_id, actor=PARENT_ACTOR, reason=reason)
        self._in_flight += 1
        self._busy.add(link.workflow_id)

        def answered(result: Result) -> None:
            self._in_flight -= 1
            self._busy.discard(link.workflow_id)
            if isinstance(result, Outcome) and result.saved:
                self._cancelled += 1

        self._submit(command, answered)

    # -- counting ------------------------------------------------------------------------

    def _counter(self, now: datetime) -> Callable[[], int]:
        repo = self._repo
        return lambda: len(_leased_child_tasks(repo))

    def _counted(self, counts: int, now: datetime) -> None:
        self._open = counts


_OPEN = frozenset({TaskStatus.SCHEDULED, TaskStatus.LEASED, TaskStatus.BACKOFF})


def _tried_again(result: errors.StatewrightError) -> bool:
    """Whether a start that failed so is made again (its lease lapses): the server was
    busy, shutting down, or the store did not answer; or it may have been made (its
    outcome is unknown), and made again it answers the child that exists. Told "not
    started", the parent of a child that was in fact started had its end for a child
    that went on to complete."""
    return isinstance(
        result, errors.Unavailable | errors.StorageUnavailable | errors.Aborted | errors.Unknown
    )


def _prepare(
    repo: Repository, registry: DefinitionRegistry, task: TaskRecord, now: datetime
) -> _Start:
    """The start of a leased child task, or why it is refused (blocking: it reads and
    writes the parent link, and may read the child's definition from the store)."""
    wid = child_id(task)
    mine = ChildLink(wid, task.workflow_id, task.task_id, task.state, now)
    linked = repo.child_links([wid]).get(wid)
    if linked is None:
        try:
            repo.load(wid)
        except errors.RecordNotFound:
            linked = repo.link_child(mine)
        else:
            return _Start(task, None, f"the id {wid!r} is held by an instance that is no child")
    if (linked.parent_id, linked.parent_task) != (mine.parent_id, mine.parent_task):
        return _Start(
            task, None, f"the id {wid!r} is held by a child of workflows/{linked.parent_id}"
        )
    version = task.input.get("version")
    try:
        loaded = registry.get(str(task.input.get("definition")), int(version) if version else None)
    except errors.NotFound as exc:
        return _Start(task, None, f"the child's definition cannot be loaded: {exc}")
    command = StartCommand(
        workflow_id=wid,
        loaded=loaded,
        input=dict(task.input.get("input") or {}),
        return_existing=True,
        actor=PARENT_ACTOR,
        # The child task keeps the trace context of the parent's step that entered the
        # state: the child's first step is linked to it (its own trace, as a timer's).
        follows=() if task.trace is None else ((PARENT, task.trace),),
    )
    return _Start(task, command)


def take_ends(repo: Repository, busy: frozenset[str]) -> int:
    """Release to retention the finished children whose parents no longer wait for them:
    the parent's task for the child is closed (the end delivered, the parent left the
    state, or the parent is gone). Until then retention keeps a child, however short its
    own retention, so that its parent always gets its result."""
    done: list[str] = []
    for link in repo.untaken_children(BATCH):
        if link.workflow_id in busy or f"{link.parent_id}/{link.parent_task}" in busy:
            continue  # its delivery, or its cancel, is in flight
        try:
            parent_task: TaskRecord | None = repo.get_task(link.parent_id, link.parent_task)
        except errors.NotFound:
            parent_task = None
        if parent_task is None or parent_task.status not in _OPEN:
            done.append(link.workflow_id)
    return repo.take_children(done) if done else 0


def _leased_child_tasks(repo: Repository) -> list[TaskRecord]:
    found: list[TaskRecord] = []
    token = ""
    while len(found) < SCAN:
        page = repo.list_tasks(queue=CHILD_QUEUE, status="LEASED", page_size=1000, page_token=token)
        found.extend(page.items)
        token = page.next_page_token
        if not token:
            break
    return found


def _live_children(repo: Repository) -> dict[str, ChildLink]:
    found: dict[str, ChildLink] = {}
    after = ""
    while len(found) < SCAN:
        links = repo.live_children(after, 1000)
        found.update((link.workflow_id, link) for link in links)
        if len(links) < 1000:
            break
        after = links[-1].workflow_id
    return found
