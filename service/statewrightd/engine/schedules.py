"""The schedule firer: claims due schedules from the store and starts what they fire.

The timers' loop (``BackgroundLoop``) with schedules for timers: every replica runs one
on its EventLoop thread; a round claims due schedules (a lease, as for timers), and for
each works out in the claim's own blocking call what is due (``schedule_spec.plan``):
misses older than the catch-up window are recorded, and the oldest fire due is looked
at against the schedule's previous instance (still open?) and its own instance (started
already?). The fire's start is a step like any other, submitted to the runtime; its
answer is recorded in the schedule (outcome, counts, cursor) by a compare-and-swap on
the schedule's version, which also releases the claim.

Exactly once per fire comes from the instance id, ``<schedule id>-<nominal time>``: a
replica whose claim lapsed, a retry after a crash between the start and its record, or
two replicas in a race all find the one instance (the start returns the existing one,
or the claim sees it exists) and record it as started; the version compare keeps the
record itself single. Never early: a fire is due at its nominal time plus its jitter,
by this server's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from statewrightd import errors
from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.domain import SCHEDULE_ACTOR, TERMINAL, Status, TraceContext
from statewrightd.engine import schedule_spec as spec
from statewrightd.engine.answers import Result
from statewrightd.engine.background import Background, BackgroundLoop
from statewrightd.engine.commands import SCHEDULE, CancelCommand, Command, Links, StartCommand
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.reasons import Reason
from statewrightd.store.records import ScheduleRecord
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

BATCH = 64
LEASE = timedelta(seconds=5)
LOOK_EVERY = 1.0

Submit = Callable[[Command, Callable[[Result], None]], None]

# A start refused for this attempt alone (the replica draining, storage down, its queues
# full) or whose outcome it cannot know: the fire is tried again, never recorded FAILED.
RETRY_LATER: tuple[type[errors.StatewrightError], ...] = (
    errors.Unavailable,
    errors.ResourceExhausted,
    errors.Unknown,
    errors.DeadlineExceeded,
    errors.Aborted,
)


def tried_again(result: Result | None) -> bool:
    """Whether a fire's start answered ``result`` is left for another try: its claim lapses
    unrecorded, and the replica that claims it next finds its instance (then records it
    started) or starts it, as after a crash between a start and its record."""
    return isinstance(result, RETRY_LATER)


@dataclass(frozen=True, slots=True)
class Job:
    """One claimed schedule: what is due on it, and what to do."""

    record: ScheduleRecord
    document: dict[str, Any]  # after the misses the claim walked past
    candidate: spec.Candidate | None
    decision: str  # spec.STARTED, SKIPPED, BUFFERED, "cancel", or "" (nothing due)
    start: StartCommand | None  # None: no start (decided otherwise, or refused)
    cancel: CancelCommand | None
    refused: str = ""  # why the start could not be built (FAILED)


class Instances:
    """Blocking: the status of the instances a claim's fires would start or overlap, read
    for the whole claim at once (one read, not one per schedule: with thousands of
    schedules due at the same second, those reads one after another held every fire)."""

    def __init__(self, repo: Repository) -> None:
        self._repo = repo
        self._known: dict[str, Status | None] = {}

    def read(self, workflow_ids: Iterable[str]) -> None:
        wanted = [w for w in dict.fromkeys(workflow_ids) if w not in self._known]
        if wanted:
            found = self._repo.instance_statuses(wanted)
            self._known.update({w: found.get(w) for w in wanted})

    def status(self, workflow_id: str) -> Status | None:
        if workflow_id not in self._known:
            self.read([workflow_id])
        return self._known[workflow_id]

    def exists(self, workflow_id: str) -> bool:
        return self.status(workflow_id) is not None

    def open(self, workflow_id: str) -> bool:
        status = self.status(workflow_id)
        return status is not None and status not in TERMINAL


def prepare_all(
    repo: Repository, registry: DefinitionRegistry, records: list[ScheduleRecord], now: datetime
) -> list[Job | errors.StatewrightError]:
    """Blocking: ``prepare`` for each of a claim's schedules, the instances they look at
    read together: first the ids known from the documents, then the new candidates'."""
    instances = Instances(repo)
    instances.read(w for r in records for w in _looked_at(r.schedule_id, r.document, now))
    jobs: list[Job | errors.StatewrightError] = []
    for record in records:
        try:
            jobs.append(prepare(instances, registry, record, now))
        except errors.StatewrightError as exc:
            jobs.append(exc)
    return jobs


def _looked_at(schedule_id: str, doc: dict[str, Any], now: datetime) -> list[str]:
    ids = [w for w in (doc.get("last_workflow_id"),) if isinstance(w, str)]
    due = _due_regular(schedule_id, doc, now)
    if due is not None:
        ids.append(due.workflow_id)
    return ids


def prepare(
    instances: Instances, registry: DefinitionRegistry, record: ScheduleRecord, now: datetime
) -> Job:
    """Blocking: what is due on ``record`` at ``now``, with what it needs looked up."""
    doc = unrecorded(instances, record.schedule_id, record.document, now)
    last = doc.get("last_workflow_id")
    last_open = isinstance(last, str) and instances.open(last)
    planned = spec.plan(record.schedule_id, doc, now, last_open=last_open)
    candidate = planned.candidate
    if candidate is None:
        return Job(record, planned.document, None, "", None, None)
    exists = instances.exists(candidate.workflow_id)
    decision = spec.decide(planned.document, candidate, exists=exists, last_open=last_open)
    start = cancel = None
    refused = ""
    if decision in (spec.STARTED, "cancel") and not exists:
        try:
            start = start_command(registry, record.schedule_id, planned.document, candidate)
        except errors.StatewrightError as exc:
            refused = exc.reason or type(exc).__name__
    if decision == "cancel" and isinstance(last, str):
        cancel = CancelCommand(
            workflow_id=last, reason=f"schedule {record.schedule_id}: overlap policy CANCEL_OTHER",
            actor=SCHEDULE_ACTOR,
        )  # fmt: skip
    return Job(record, planned.document, candidate, decision, start, cancel, refused)


def unrecorded(
    instances: Instances, schedule_id: str, doc: dict[str, Any], now: datetime
) -> dict[str, Any]:
    """``doc`` with its next regular fire recorded as started when its instance exists:
    a replica that died between a start and its record left it so (one at most: a
    schedule fires once per round), and it must not be counted missed."""
    candidate = _due_regular(schedule_id, doc, now)
    if candidate is None or not instances.exists(candidate.workflow_id):
        return doc
    return spec.record(schedule_id, doc, candidate, spec.STARTED, now)


def _due_regular(schedule_id: str, doc: dict[str, Any], now: datetime) -> spec.Candidate | None:
    """The next regular fire of ``doc`` when it is due by ``now`` (and not paused)."""
    if doc.get("state", {}).get("paused"):
        return None
    times = spec.Spec.of(doc["spec"])
    first = times.next_after(spec.parse_iso(doc["cursor"]))
    if first is None or times.due(schedule_id, first) > now:
        return None
    return spec.Candidate("regular", first, spec.workflow_id_for(schedule_id, first))


def start_command(
    registry: DefinitionRegistry, schedule_id: str, doc: dict[str, Any], candidate: spec.Candidate
) -> StartCommand:
    """The start of a fire (blocking: the definition may be read from the store)."""
    action = doc["action"]
    version = int(action.get("version") or 0) or None
    loaded = registry.get(str(action["definition"]), version)
    values = dict(action.get("input") or {})
    if action.get("input_expressions"):
        values.update(spec.evaluate_inputs(schedule_id, doc, candidate))
    return StartCommand(
        workflow_id=candidate.workflow_id,
        loaded=loaded,
        input=values,
        return_existing=True,
        actor=SCHEDULE_ACTOR,
        follows=_follows(doc),
    )


# The document's key for the W3C trace context of the call that created or last changed
# the schedule ({"traceparent", "tracestate"}): the start of each fire is linked to it.
TRACE = "trace"


def with_trace(doc: dict[str, Any], caller: TraceContext | None) -> dict[str, Any]:
    """``doc`` keeping ``caller``'s trace context (none: a call not traced keeps none)."""
    out = {k: v for k, v in doc.items() if k != TRACE}
    if caller is not None:
        out[TRACE] = {"traceparent": caller.traceparent, "tracestate": caller.tracestate}
    return out


def _follows(doc: dict[str, Any]) -> Links:
    kept = doc.get(TRACE)
    if not isinstance(kept, dict) or not isinstance(kept.get("traceparent"), str):
        return ()
    return ((SCHEDULE, TraceContext(kept["traceparent"], str(kept.get("tracestate") or ""))),)


# What a fire writes of a schedule's document; an API change (a pause, an update) writes
# the rest.
FIRING = ("cursor", "buffered", "backfills", "counts", "recent", "last_workflow_id")


def record_fire(
    repo: Repository,
    record: ScheduleRecord,
    doc: dict[str, Any],
    look: datetime | None,
    now: datetime,
) -> ScheduleRecord | None:
    """Write what a fire did (blocking). When an API change wrote the schedule since it
    was read, the fire's part goes onto that change, unless fires were recorded meanwhile
    (another replica's, after this claim lapsed): then they stand, and this one's instance,
    which exists, is found by its id at the next fire of that time."""
    written = repo.put_schedule(record.schedule_id, record.version, doc, look, now)
    if written is not None:
        return written
    fresh = repo.get_schedule(record.schedule_id)
    if fresh is None or any(fresh.document.get(k) != record.document.get(k) for k in FIRING):
        return None
    merged = {**fresh.document, **{k: doc.get(k) for k in FIRING}}
    look = spec.next_look(record.schedule_id, merged, now)
    return repo.put_schedule(record.schedule_id, fresh.version, merged, look, now)


_Claim = tuple[list[Job], datetime | None]


class ScheduleFirer(BackgroundLoop[_Claim, int]):
    """EventLoop thread only, except ``schedules`` (a whole-value read)."""

    label = "schedule claim"
    idle_every = LOOK_EVERY

    def __init__(
        self,
        on: Background,
        *,
        submit: Submit,
        registry: DefinitionRegistry,
        observer: StepObserver | None = None,
    ) -> None:
        super().__init__(on)
        self._submit = submit
        self._registry = registry
        self._observer: StepObserver = observer or Unobserved()
        self._in_flight = 0
        self._more_due = False  # a round found a full batch, or was held back by one
        self._count_value = 0

    def poke(self) -> None:
        """A schedule changed through the API here: look now rather than at the next round."""
        if not self._claiming:
            self._schedule(0.0)

    @property
    def schedules(self) -> int:
        return self._count_value

    # -- rounds ----------------------------------------------------------------------

    def _may_claim(self) -> bool:
        if self._in_flight >= BATCH:
            self._more_due = True  # the fires' records look again as they get through
            return False
        return True

    def _claim(self) -> Callable[[], _Claim]:
        repo, registry, now = self._repo, self._registry, self._clock.now()
        limit = BATCH - self._in_flight

        def claim() -> _Claim:
            claimed = repo.claim_schedules(now, now + LEASE, limit)
            jobs = []
            for record, job in zip(claimed, prepare_all(repo, registry, claimed, now), strict=True):
                if isinstance(job, errors.StatewrightError):
                    # Left claimed: looked at again when the claim lapses.
                    _log.warning("schedule %s not fired: %s", record.schedule_id, job)
                else:
                    jobs.append(job)
            upcoming = None if len(claimed) == limit else repo.next_schedule_due(now)
            return jobs, upcoming

        return claim

    def _fire(self, claimed: _Claim) -> float | None:
        jobs, upcoming = claimed
        for job in jobs:
            self._in_flight += 1
            self._act(job)
        if upcoming is None and jobs:
            return 0.0
        delay = LOOK_EVERY
        if upcoming is not None:
            delay = min(delay, max(0.0, (upcoming - self._clock.now()).total_seconds()))
        return delay

    def _act(self, job: Job) -> None:
        if job.cancel is not None:
            cancel = job.cancel
            self._submit(cancel, lambda _result: self._start(job))
            return
        self._start(job)

    def _start(self, job: Job) -> None:
        if job.start is None:
            self._finish(job, None)
            return
        self._submit(job.start, lambda result: self._finish(job, result))

    def _finish(self, job: Job, result: Result | None) -> None:
        """Record what the fire came to; the record's write releases the claim."""
        if tried_again(result):
            self._in_flight -= 1
            _log.info("schedule %s: fire left for another try: %s", job.record.schedule_id, result)
            return
        now = self._clock.now()
        doc = job.document
        candidate = job.candidate
        if candidate is not None:
            outcome, reason = job.decision, ""
            if outcome == "cancel":
                outcome = spec.STARTED
            if job.refused:
                outcome, reason = spec.FAILED, job.refused
            elif isinstance(result, errors.StatewrightError):
                outcome, reason = spec.FAILED, result.reason or type(result).__name__
            elif outcome == spec.SKIPPED:
                reason = Reason.SCHEDULE_OVERLAP
            doc = spec.record(job.record.schedule_id, doc, candidate, outcome, now, reason=reason)
            self._counted_fire(outcome, candidate, now, job)
        before = job.record.document.get("counts", {})
        missed = int(doc["counts"]["misses"]) - int(before.get("misses", 0))
        if missed > 0:
            self._observer.schedule_fired(spec.MISSED, missed, None)
        record, repo = job.record, self._repo
        look = spec.next_look(record.schedule_id, doc, now)

        def put() -> ScheduleRecord | None:
            return record_fire(repo, record, doc, look, now)

        def done(answer: ScheduleRecord | errors.StatewrightError | None) -> None:
            self._in_flight -= 1
            if isinstance(answer, errors.StatewrightError):
                _log.info("schedule %s: fire not recorded: %s", record.schedule_id, answer)
            through = self._in_flight <= BATCH // 2
            if self._more_due and through and not self._claiming:
                # More were due than a batch: half is through, claim more now. A look
                # already planned (at some schedule's next fire) gives way: the round
                # plans the next look itself.
                self._more_due = False
                self._schedule(0.0)
            elif look is not None:
                delay = max(0.0, (look - self._clock.now()).total_seconds())
                if self._wake_at is None or look < self._wake_at:
                    self._schedule(delay)

        self._offload(put, done)

    def _counted_fire(
        self, outcome: str, candidate: spec.Candidate, now: datetime, job: Job
    ) -> None:
        lag = None
        if outcome == spec.STARTED and candidate.kind == "regular":
            due = spec.Spec.of(job.document["spec"]).due(job.record.schedule_id, candidate.nominal)
            lag = max(0.0, (now - due).total_seconds())
        self._observer.schedule_fired(outcome, 1, lag)

    # -- counting --------------------------------------------------------------------

    def _counter(self, now: datetime) -> Callable[[], int]:
        repo = self._repo
        return repo.schedule_count

    def _counted(self, counts: int, now: datetime) -> None:
        self._count_value = counts
