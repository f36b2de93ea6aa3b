"""A start's own recursion limit is kept with its instance on every backend: written by
the create (one statement, or a batch's set-based rows), read back by load and list, and
written again by every save from its record (each step carries its instance's limit on;
a restart's step gives the new run its own)."""

from __future__ import annotations

import dataclasses

from statewrightd.store import Repository
from statewrightd.store.records import Create, InstanceRecord

from .test_repository_contract import create_op, history_of, instance, save_op


def _limited(wid: str, limit: int | None) -> InstanceRecord:
    return dataclasses.replace(instance(wid), recursion_limit=limit)


def test_recursion_limit_round_trips_through_create_save_and_list(repo: Repository) -> None:
    one = _limited("rl-one", 7)
    assert repo.create(Create(one, history_of(one))) == one
    assert repo.load("rl-one").recursion_limit == 7
    # A batch of creates without request ids: PostgreSQL's and Citus's set-based rows.
    many = [_limited("rl-a", 3), _limited("rl-b", None)]
    results = repo.apply_batch([Create(r, history_of(r)) for r in many])
    assert results == many
    assert repo.load("rl-a").recursion_limit == 3
    assert repo.load("rl-b").recursion_limit is None
    # A save writes the limit its record carries on (single, and batched: PostgreSQL's
    # and Citus's set-based rows), the one it had or a new one.
    repo.save(save_op(repo.load("rl-one")))
    lowered = dataclasses.replace(repo.load("rl-b"), recursion_limit=2)
    saved = repo.apply_batch([save_op(repo.load("rl-a")), save_op(lowered)])
    assert all(r is not None for r in saved)
    assert repo.load("rl-one").recursion_limit == 7
    assert repo.load("rl-one").revision == 2
    assert repo.load("rl-a").recursion_limit == 3
    assert repo.load("rl-b").recursion_limit == 2
    page = repo.list(page_size=10)
    assert {r.workflow_id: r.recursion_limit for r in page.items} == {
        "rl-one": 7,
        "rl-a": 3,
        "rl-b": 2,
    }
    assert repo.create(create_op("rl-none")).recursion_limit is None
