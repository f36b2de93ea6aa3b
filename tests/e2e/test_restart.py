"""Nothing lives only in memory, on PostgreSQL and SQLite.

Drive 100 review-loop instances to RUNNING and 100 mail-approval instances to WAITING,
SIGKILL the server (mid-traffic: signals to other instances are in flight), start a new
process on the same database, then signal and resume every instance to completion.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import grpc
from statewright.v1 import diagnostics_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    COMPLETED,
    RUNNING,
    WAITING,
    Client,
    context_of,
    expect_error,
    uid,
)
from tests.support.databases import read_all_history
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import wait_until

COUNT = 100
WORKERS = 4
T = TypeVar("T")
R = TypeVar("R")


def _each(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fn, items))


class _Ticker:
    """Sends distinct ticks to a few tally instances until stopped; remembers the answers."""

    def __init__(self, client: Client, workflow_ids: list[str]) -> None:
        self.client = client
        self.workflow_ids = workflow_ids
        self.sent: dict[str, set[str]] = {wid: set() for wid in workflow_ids}
        self.acknowledged: dict[str, set[str]] = {wid: set() for wid in workflow_ids}
        self.refused: list[pb.SignalWorkflowResponse] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            wid = self.workflow_ids[n % len(self.workflow_ids)]
            tick = f"t{n}"
            n += 1
            self.sent[wid].add(tick)
            try:
                response = self.client.signal(wid, "tick", {"id": tick}, timeout=5)
            except grpc.RpcError:
                continue  # the server is gone: this one's fate is unknown to the caller
            if response.accepted:
                self.acknowledged[wid].add(tick)
            else:
                self.refused.append(response)


def test_every_instance_completes_after_a_sigkill_restart(
    database_url: str, tmp_path: Path
) -> None:
    definitions = definitions_dir(tmp_path / "definitions")
    reviews = [uid("review") for _ in range(COUNT)]
    mails = [uid("mail") for _ in range(COUNT)]
    improving = set(reviews[::2])  # these get one low score before the kill
    tallies = [uid("tally") for _ in range(4)]
    rid = uid("req")

    with (
        running_server(database_url, definitions, cwd=tmp_path) as first,
        Client(first.target) as c,
    ):
        started = _each(lambda w: c.start("review-loop", workflow_id=w).workflow, reviews)
        assert all(w.status == RUNNING for w in started)
        lows = _each(lambda w: c.signal(w, "score", {"score": 0.2}), sorted(improving))
        assert all(r.accepted and r.workflow.state == "improving" for r in lows)
        parked = _each(
            lambda w: c.start("mail-approval", workflow_id=w, input={"topic": w}).workflow,
            mails,
        )
        assert all(w.status == WAITING for w in parked)
        original = c.start("catalog", input={"n": 7}, request_id=rid)
        for wid in tallies:
            c.start("tally", workflow_id=wid)
        before_kill = {w.workflow_id: w for w in c.list_all(page_size=1000)}
        ticker = _Ticker(c, tallies)
        ticker.thread.start()
        assert wait_until(lambda: sum(map(len, ticker.acknowledged.values())) >= 20, 30)
        first.kill()  # SIGKILL, with signals still in flight
        ticker.stop.set()
        ticker.thread.join(10)
        assert first.proc.returncode == -9
        assert not ticker.refused, ticker.refused

    with (
        running_server(database_url, definitions, cwd=tmp_path) as second,
        Client(second.target) as c,
    ):
        # The new process starts with an empty cache: everything comes from the store.
        probe = c.workflow_diagnostics(reviews[0]).diagnostics
        assert (probe.cached, probe.revision) == (False, before_kill[reviews[0]].revision)
        assert probe.admission_state == diagnostics_pb2.ADMISSION_STATE_IDLE
        for wid in [*reviews, *mails]:
            assert c.get(wid) == before_kill[wid]
        # Duplicates and retries are decided by the store, not by a cache.
        expect_error(
            lambda: c.start("mail-approval", workflow_id=mails[0]),
            grpc.StatusCode.ALREADY_EXISTS,
            "WORKFLOW_ALREADY_EXISTS",
        )
        existing = c.start(
            "mail-approval", workflow_id=mails[0], if_exists=pb.IF_EXISTS_POLICY_RETURN_EXISTING
        )
        assert not existing.created and existing.workflow == before_kill[mails[0]]
        assert c.start("catalog", input={"n": 7}, request_id=rid) == original

        def finish_review(wid: str) -> pb.SignalWorkflowResponse:
            if wid in improving:
                assert c.signal(wid, "revised", {"document": f"doc {wid}"}).accepted
            return c.signal(wid, "score", {"score": 0.9})

        def finish_mail(wid: str) -> pb.ResumeWorkflowResponse:
            if mails.index(wid) % 2:
                return c.resume(wid, "reject")
            return c.resume(wid, "approve", input={"approver": f"approver of {wid}"})

        finished_reviews = _each(finish_review, reviews)
        finished_mails = _each(finish_mail, mails)
        assert all(r.accepted for r in finished_reviews)

        # Ticks acknowledged before the kill survived it; a tick is never applied twice.
        for wid in tallies:
            seen = context_of(c.get(wid))["seen"]
            assert len(seen) == len(set(seen)), seen
            assert ticker.acknowledged[wid] <= set(seen) <= ticker.sent[wid]
            assert c.signal(wid, "tick", {"id": "after-restart"}).accepted

    history = read_all_history(database_url)
    for response in finished_reviews:
        wf = response.workflow
        ctx = context_of(wf)
        assert (wf.status, wf.state) == (COMPLETED, "accepted")
        if wf.workflow_id in improving:
            assert wf.revision == 4
            assert ctx["document"] == f"doc {wf.workflow_id}"
            assert ctx["history"] == [{"score": 0.2}, "accepted"]
            assert ctx["iterations"] == 1
        else:
            assert wf.revision == 2
            assert ctx["history"] == ["accepted"] and ctx["iterations"] == 0
        assert ctx["score"] == 0.9
        events = [(h.revision, h.event) for h in history[wf.workflow_id]]
        expected = [None, "score", "revised", "score"] if wf.revision == 4 else [None, "score"]
        assert events == list(enumerate(expected, start=1))
    for i, resume in enumerate(finished_mails):
        wf = resume.workflow
        ctx = context_of(wf)
        assert (wf.status, wf.revision) == (COMPLETED, 2)
        assert wf.state == ("rejected" if i % 2 else "send")
        assert ctx["draft"] == f"Dear team: {wf.workflow_id}"
        if i % 2:
            assert ctx["notes"] == ["rejected"] and not ctx["sent"]
        else:
            assert ctx["notes"] == [f"sent after approval by approver of {wf.workflow_id}"]
            assert ctx["sent"] and ctx["approved"]
            assert ctx["meta"] == {"approved_at_revision": 2}
        assert [h.revision for h in history[wf.workflow_id]] == [1, 2]
    for wid in tallies:
        rows = history[wid]
        assert [h.revision for h in rows] == list(range(1, len(rows) + 1))
        final: Any = rows[-1].context["seen"]
        assert final[-1] == "after-restart" and len(final) == len(rows) - 1
