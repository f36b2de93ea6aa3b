"""Child workflows' parent links in the store, identically on every backend: a link is
written once (a second one for the same child keeps the first), read back by child, a
parent's live children are counted and listed by id, the live-children scan pages by id
and leaves ended children out, and the list filter `parent = ...` finds a parent's
children (and `!=` the rest). A finished child's end is released to retention only
once its parent's task for it has closed."""

from __future__ import annotations

import dataclasses

from statewrightd.definitions.model import CHILD_QUEUE
from statewrightd.domain import Status
from statewrightd.engine.children import take_ends
from statewrightd.store import Repository
from statewrightd.store.filters import parse_filter
from statewrightd.store.records import ChildLink, Create, InstanceRecord

from .test_tasks_contract import NOW, history, instance, lease, scheduled, step


def created(repo: Repository, wid: str, status: Status = Status.WAITING) -> InstanceRecord:
    rec = dataclasses.replace(instance(wid), status=status)
    repo.create(Create(rec, history(rec)))
    return rec


def link(child: str, parent: str, task: str = "1") -> ChildLink:
    return ChildLink(child, parent, task, "verify", NOW)


def test_a_link_is_written_once_and_read_back_by_child(repo: Repository) -> None:
    first = repo.link_child(link("c-1", "p-1"))
    assert first == link("c-1", "p-1")
    # Another parent's start of the same id finds the first link: it is not its child.
    again = repo.link_child(link("c-1", "p-2", task="7"))
    assert again == first
    found = repo.child_links(["c-1", "nobody", "c-1"])
    assert found == {"c-1": first}


def test_a_parents_live_children_are_counted_and_listed_by_id(repo: Repository) -> None:
    created(repo, "p-1", Status.RUNNING)
    for child, status in (
        ("c-b", Status.WAITING),
        ("c-a", Status.RUNNING),
        ("c-c", Status.COMPLETED),
        ("c-d", Status.CANCELLED),
    ):
        created(repo, child, status)
        repo.link_child(link(child, "p-1"))
    repo.link_child(link("c-unstarted", "p-1"))  # linked, not created yet: not live
    created(repo, "other", Status.WAITING)
    repo.link_child(link("other", "p-2"))
    assert repo.children_of("p-1", 10) == (2, ["c-a", "c-b"])
    assert repo.children_of("p-1", 1) == (2, ["c-a"])
    assert repo.children_of("p-3", 10) == (0, [])
    live = repo.live_children("", 10)
    assert [(x.workflow_id, x.parent_id) for x in live] == [
        ("c-a", "p-1"),
        ("c-b", "p-1"),
        ("other", "p-2"),
    ]
    assert [x.workflow_id for x in repo.live_children("c-a", 1)] == ["c-b"]


def test_the_parent_filter_lists_a_parents_children(repo: Repository) -> None:
    for wid in ("p-1", "c-1", "c-2", "c-9"):
        created(repo, wid)
    repo.link_child(link("c-1", "p-1"))
    repo.link_child(link("c-2", "p-1", task="2"))
    repo.link_child(link("c-9", "p-9"))
    children = parse_filter('parent = "workflows/p-1"', {})
    assert [r.workflow_id for r in repo.list(which=children).items] == ["c-1", "c-2"]
    bare = parse_filter("parent = p-1 AND status = WAITING", {})
    assert [r.workflow_id for r in repo.list(which=bare).items] == ["c-1", "c-2"]
    others = parse_filter('parent != "workflows/p-1"', {})
    assert [r.workflow_id for r in repo.list(which=others).items] == ["c-9", "p-1"]


def test_a_childs_end_is_released_to_retention_once_its_parents_task_closes(
    repo: Repository,
) -> None:
    scheduled(repo, "p-held", queue=CHILD_QUEUE)  # the parent's task "1" stands for the child
    created(repo, "c-held", Status.COMPLETED)
    repo.link_child(link("c-held", "p-held"))
    created(repo, "c-orphan", Status.CANCELLED)
    repo.link_child(link("c-orphan", "p-gone"))  # its parent is gone: nobody waits
    created(repo, "c-live", Status.WAITING)
    repo.link_child(link("c-live", "p-held", task="2"))
    assert take_ends(repo, frozenset()) == 1
    assert [x.workflow_id for x in repo.untaken_children(10)] == ["c-held"]
    assert len(lease(repo, CHILD_QUEUE)) == 1  # leased: the parent still waits for the end
    assert take_ends(repo, frozenset()) == 0
    step(repo, "p-held", 1, cancel=True)  # the parent left the state
    assert take_ends(repo, frozenset({"p-held/1"})) == 0  # a delivery in flight: not yet
    assert take_ends(repo, frozenset()) == 1
    assert repo.untaken_children(10) == []
