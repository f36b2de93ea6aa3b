"""What a poll reads of its leases' instances: each as a load would read it, or nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from statewrightd.definitions.registry import read_file
from statewrightd.engine.loading import InstanceLoader
from statewrightd.scenarios.sandbox import Sandbox
from statewrightd.store.records import InstanceRecord, TaskRecord
from statewrightd.store.repository import Repository

DEFINITION = """
name: leasing
version: 1
context:
  n: {type: number, default: 0}
states:
  working:
    task: {queue: leasing.work}
  done: {}
transitions:
  - {from: working, to: done}
"""
# A task state with a timeout: a load reads its armed timer, which a lease does not.
TIMED = """
name: leasing-timed
version: 1
states:
  working:
    task: {queue: leasing.timed}
  done: {}
  late: {}
transitions:
  - {from: working, to: done}
  - {from: working, after: 1h, to: late}
"""


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    sandbox = Sandbox()
    for name, text in (("leasing", DEFINITION), ("leasing-timed", TIMED)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        sandbox.place(read_file(path))
    return sandbox


def test_a_leased_tasks_instance_is_read_as_a_load_reads_it(box: Sandbox) -> None:
    box.start("leasing", workflow_id="w", input={"n": 3})
    task = box.take("leasing.work")
    loader = InstanceLoader(box.repo, box.registry)
    found = loader.leased([task])["w"]
    loaded = loader.load("w")
    assert found.record == loaded.record and found.loaded is loaded.loaded
    assert found.task == task == loaded.task and found.timers == () == loaded.timers


def _leased(box: Sandbox) -> tuple[TaskRecord, InstanceLoader]:
    box.start("leasing", workflow_id="w")
    return box.take("leasing.work"), InstanceLoader(box.repo, box.registry)


def test_nothing_is_read_for_an_instance_a_load_would_read_more_of_or_that_moved_on(
    box: Sandbox,
) -> None:
    task, loader = _leased(box)
    # Stepped since the task was scheduled: what the lease knows of it is not the instance.
    assert loader.leased([dataclasses.replace(task, revision=task.revision - 1)]) == {}
    # An item of a fan-out is not its instance's one task.
    assert loader.leased([dataclasses.replace(task, item_index=0)]) == {}
    assert loader.leased([dataclasses.replace(task, workflow_id="nobody")]) == {}
    assert loader.leased([]) == {}
    box.start("leasing-timed", workflow_id="t")
    timed = box.take("leasing.timed")
    assert loader.load("t").timers, "the timeout is armed"
    assert loader.leased([timed]) == {}


def test_an_instance_held_in_memory_at_the_tasks_revision_or_later_is_not_read(
    box: Sandbox,
) -> None:
    task, loader = _leased(box)
    held = {"w": task.revision}
    assert loader.leased([task], cached=held.get) == {}
    held["w"] = task.revision - 1  # a copy from before the step that scheduled the task
    assert loader.leased([task], cached=held.get)["w"].record.revision == task.revision


class _Counted:
    """The repository, counting the instances it is asked to load many of."""

    def __init__(self, repo: Repository) -> None:
        self._repo = repo
        self.asked: list[list[str]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._repo, name)

    def load_many(self, workflow_ids: Sequence[str]) -> list[InstanceRecord]:
        self.asked.append(list(workflow_ids))
        return self._repo.load_many(workflow_ids)


def test_instances_the_lease_read_along_are_not_read_again_and_are_checked_the_same(
    box: Sandbox,
) -> None:
    box.start("leasing", workflow_id="w")
    box.start("leasing", workflow_id="v")
    first, second = box.take("leasing.work"), box.take("leasing.work")
    counted = _Counted(box.repo)
    loader = InstanceLoader(counted, box.registry)  # type: ignore[arg-type]
    read = {first.workflow_id: box.repo.load(first.workflow_id)}
    found = loader.leased([first, second], read)
    assert counted.asked == [[second.workflow_id]], "only what the lease did not read"
    assert found[first.workflow_id] == loader.load(first.workflow_id)
    assert found[second.workflow_id] == loader.load(second.workflow_id)
    # What the lease read is held to the same checks: a later revision is not the task's.
    moved = dataclasses.replace(read[first.workflow_id], revision=first.revision + 1)
    assert loader.leased([first], {first.workflow_id: moved}) == {}
    assert counted.asked == [[second.workflow_id]]
