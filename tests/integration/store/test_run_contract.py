"""The run of an instance (a restart begins the next one) is kept on every backend: the
create writes run 1, a save writes the run its record says (a restart's step, one more)
together with that run's own recursion limit, and each history row keeps the run of the
step that saved it, through single saves and a batch's set-based rows alike."""

from __future__ import annotations

import dataclasses

from statewrightd.store import Repository

from .test_repository_contract import create_op, save_op


def test_runs_round_trip_through_create_save_and_history(repo: Repository) -> None:
    first = repo.create(create_op("run-one"))
    assert first.run == 1
    repo.save(save_op(first))  # a step of run 1
    # The restart's step: the next revision, run 2, with a recursion limit of its own.
    restart = save_op(repo.load("run-one"), state="draft")
    restarted = dataclasses.replace(restart.new, run=2, recursion_limit=4)
    repo.save(dataclasses.replace(restart, new=restarted))
    # A batch's saves carry each its run on (PostgreSQL's and Citus's set-based rows).
    other = repo.create(create_op("run-two"))
    saved = repo.apply_batch([save_op(repo.load("run-one")), save_op(other)])
    assert all(r is not None for r in saved)
    now = repo.load("run-one")
    assert (now.revision, now.run, now.recursion_limit) == (4, 2, 4)
    rows = repo.history_after("run-one", 0, 10)
    assert [(h.revision, h.run) for h in rows] == [(1, 1), (2, 1), (3, 2), (4, 2)]
    assert [(h.revision, h.run) for h in repo.history_after("run-two", 0, 10)] == [(1, 1), (2, 1)]
    runs = {r.workflow_id: r.run for r in repo.list(page_size=10).items}
    assert runs == {"run-one": 2, "run-two": 1}
