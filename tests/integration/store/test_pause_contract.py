"""A paused instance on every backend: its pause is kept by the step that saves it and
cleared by the next one; while it is set, no claim takes the instance's timers (nor says
one is due), no poll offers its tasks (with or without flow control on the queue), and
no expiry claim takes its leases. After the unpause they are claimed as before."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from statewrightd.store import Repository
from statewrightd.store.filters import parse_filter
from statewrightd.store.flow import QueueConfig
from statewrightd.store.records import InstanceRecord, Save

from .test_tasks_contract import NOW, lease, scheduled
from .test_tasks_contract import history as task_history
from .test_tasks_contract import instance as task_instance
from .test_timers_contract import T0, armed_create
from .test_timers_contract import history as timer_history

PAUSE = {"reason": "incident 7", "actor": "key:ops", "time": "2026-03-04T05:06:07+00:00"}


def _stepped(
    repo: Repository, base: InstanceRecord, pause: dict[str, str] | None
) -> InstanceRecord:
    """The next revision of ``base``, paused (``pause``) or not; nothing else changes."""
    new = dataclasses.replace(
        base,
        revision=base.revision + 1,
        update_time=base.update_time + timedelta(milliseconds=1),
        pause=pause,
    )
    history = timer_history(new) if base.definition == "timed" else task_history(new)
    repo.save(Save(new, base.revision, history))
    return new


def test_a_paused_instance_s_timers_wait_for_its_unpause(repo: Repository) -> None:
    rec = armed_create(repo, "p-timer", T0)
    paused = _stepped(repo, rec, PAUSE)
    assert repo.load("p-timer").pause == PAUSE
    after = T0 + timedelta(seconds=1)
    assert repo.claim_timers(after, after + timedelta(seconds=5), 10) == []
    assert repo.next_timer_due(after) is None, "a paused timer is no reason to wake"
    assert [t.timer_id for t in repo.armed_timers(["p-timer"])["p-timer"]] == ["1.1"]
    # A batch's save clears it as a single one does.
    assert repo.apply_batch([_unpaused(paused)])[0] is not None
    assert repo.load("p-timer").pause is None
    assert repo.next_timer_due(after) == T0
    (claimed,) = repo.claim_timers(after, after + timedelta(seconds=5), 10)
    assert claimed.timer_id == "1.1"


def _unpaused(rec: InstanceRecord) -> Save:
    new = dataclasses.replace(
        rec,
        revision=rec.revision + 1,
        update_time=rec.update_time + timedelta(milliseconds=1),
        pause=None,
    )
    return Save(new, rec.revision, timer_history(new))


def test_a_paused_instance_s_task_is_not_offered_until_its_unpause(repo: Repository) -> None:
    scheduled(repo, "p-task")
    paused = _stepped(repo, task_instance("p-task"), PAUSE)
    assert lease(repo) == []
    # With flow control on the queue the claim ranks its tasks: it passes over it too.
    repo.set_queue_config(QueueConfig("limited", max_leased=5), NOW)
    scheduled(repo, "p-limited", queue="limited")
    _stepped(repo, task_instance("p-limited"), PAUSE)
    assert lease(repo, "limited") == []
    _stepped(repo, paused, None)
    (leased,) = lease(repo)
    assert leased.workflow_id == "p-task"


def test_a_paused_instance_s_expired_lease_waits_for_its_unpause(repo: Repository) -> None:
    scheduled(repo, "p-lease")
    (leased,) = lease(repo)
    paused = _stepped(repo, task_instance("p-lease"), PAUSE)
    late = NOW + timedelta(hours=2)  # past the lease and the deadline
    assert repo.claim_expired_tasks(late, late + timedelta(seconds=5), 10) == []
    _stepped(repo, paused, None)
    (expired,) = repo.claim_expired_tasks(late, late + timedelta(seconds=5), 10)
    assert expired.task_id == leased.task_id


def test_the_paused_filter_finds_paused_instances_and_only_them(repo: Repository) -> None:
    scheduled(repo, "f-paused")
    scheduled(repo, "f-running")
    _stepped(repo, task_instance("f-paused"), PAUSE)

    def listed(text: str) -> list[str]:
        return [r.workflow_id for r in repo.list(which=parse_filter(text, {})).items]

    assert listed("paused = true") == ["f-paused"]
    assert listed("paused = false") == ["f-running"]
    assert listed("paused != true") == ["f-running"]
    assert listed("NOT paused = true AND status = RUNNING") == ["f-running"]
