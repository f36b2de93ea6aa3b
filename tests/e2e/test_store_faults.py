"""Storage faults under a real server, PostgreSQL only: the
server reaches the database through a protocol-aware proxy (tests/support/pgproxy.py).

- A COMMIT whose answer is lost while the database is unreachable leaves the save's outcome
  unknown: the caller is answered UNKNOWN OUTCOME_UNKNOWN at once, the instance is
  recovery_required (its RPCs answer FAILED_PRECONDITION RECOVERY_REQUIRED) until a
  background re-check with backoff resolves it once the database is back, and then it is
  usable again, whether the COMMIT had reached PostgreSQL or not.
- A lost COMMIT answer that the read-back can settle is simply a success; a connection
  lost before COMMIT is a known failure with nothing written.
- With the writer queue full (capacity 1, the database stalled), more saves are refused
  with RESOURCE_EXHAUSTED OVERLOADED at once, while the store is still stalled.
- A server that starts while the database does not answer waits for it (with backoff, for
  a while) instead of exiting.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from statewright.v1 import diagnostics_pb2, task_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    RUNNING,
    WAITING,
    Client,
    context_of,
    error_info,
    expect_error,
    rpc_failure,
    uid,
)
from tests.support.databases import PostgresDatabases, read_history
from tests.support.deployment import definitions_dir, running_server
from tests.support.pgproxy import RETRY_MARKER, PgProxy
from tests.support.server import ServerProcess, wait_until
from tests.support.tasks import Tasks

PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
IDLE = diagnostics_pb2.ADMISSION_STATE_IDLE
RECOVERY = diagnostics_pb2.ADMISSION_STATE_RECOVERY_REQUIRED


@dataclass
class Proxied:
    proxy: PgProxy
    server: ServerProcess
    client: Client
    direct_url: str  # the database itself, bypassing the proxy

    def unknown_outcomes(self) -> int:
        return self.client.diagnostics().persistence.unknown_outcomes

    def admission(self, wid: str) -> diagnostics_pb2.WorkflowDiagnostics:
        return self.client.workflow_diagnostics(wid).diagnostics

    def recovered(self, wid: str) -> bool:
        """Whether the instance left recovery (polled; reads may fail while the pool heals)."""
        try:
            return self.admission(wid).admission_state == IDLE
        except grpc.RpcError as err:
            assert err.code() is grpc.StatusCode.UNAVAILABLE, err
            return False


@contextlib.contextmanager
def _proxied_server(
    databases: PostgresDatabases, root: Path, *extra_args: str, grace: float = 2.0
) -> Iterator[Proxied]:
    url = databases.create()
    definitions = definitions_dir(root / "definitions")
    proxy = PgProxy.for_url(url)
    with (
        proxy,
        running_server(
            proxy.url_for(url), definitions, cwd=root, extra_args=extra_args, grace=grace
        ) as server,
        Client(server.target) as client,
    ):
        yield Proxied(proxy, server, client, url)
    databases.drop_soon(url)


@pytest.fixture(scope="module")
def shared(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxied]:
    with _proxied_server(postgres_databases, tmp_path_factory.mktemp("faults")) as proxied:
        yield proxied


@pytest.fixture
def proxied(shared: Proxied) -> Iterator[Proxied]:
    """The module's proxied server; each test leaves the proxy healed and recovery done."""
    yield shared
    shared.proxy.heal()
    shared.proxy.resume()
    assert wait_until(lambda: shared.client.diagnostics().admissions.recovery_required == 0, 30), (
        shared.server.log()
    )
    _until_storage_usable(shared)


def _until_storage_usable(proxied: Proxied) -> None:
    """Wait until a run of reads succeeds after the database went dark.

    test_rpcs_succeed_once_the_database_is_back proves the server's pool recovers at once;
    tests that are about something else only make sure here that they do not start
    while the previous outage is still being cleaned up.
    """
    probe = uid("probe")
    streak = 0

    def usable() -> bool:
        nonlocal streak
        try:
            proxied.client.get(probe)
        except grpc.RpcError as err:
            if err.code() is not grpc.StatusCode.NOT_FOUND:
                streak = 0
                return False
        streak += 1
        return streak >= 20

    assert wait_until(usable, 30, interval=0.01), proxied.server.log()


def test_unknown_commit_outcome_requires_recovery_until_a_recheck_resolves_it(
    proxied: Proxied,
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("tally")
    c.start("tally", workflow_id=wid)
    assert c.signal(wid, "tick", {"id": "a"}).accepted
    unknown_before, cuts_before = proxied.unknown_outcomes(), proxy.cuts

    proxy.arm_cut(forward_commit=True, refuse=True, drop_open=True)
    # The caller is answered, well before its deadline, although nothing can be read back.
    info = expect_error(
        lambda: c.signal(wid, "tick", {"id": "b"}, timeout=20),
        grpc.StatusCode.UNKNOWN,
        "OUTCOME_UNKNOWN",
    )
    assert (info.metadata["workflow_id"], info.metadata["revision"]) == (wid, "3")
    assert proxy.cuts == cuts_before + 1 and proxy.refusing

    # While unresolved, the instance's step RPCs are refused without touching it: a signal
    # is not accepted (and shows the last state known for certain), the others fail.
    refused = c.signal(wid, "tick", {"id": "c"})
    assert (refused.accepted, refused.reason) == (False, pb.SIGNAL_REJECTION_RECOVERY_REQUIRED)
    assert (refused.workflow.revision, context_of(refused.workflow)["seen"]) == (2, ["a"])
    for call in (lambda: c.resume(wid), lambda: c.cancel(wid)):
        info = expect_error(call, PRECONDITION, "RECOVERY_REQUIRED")
        assert info.metadata["workflow_id"] == wid
    d = proxied.admission(wid)
    assert d.admission_state == RECOVERY
    assert d.HasField("recovery") and d.recovery.since_time.seconds > 0
    # Re-checks run in the background, with backoff, and fail while the database is dark.
    assert wait_until(lambda: proxied.admission(wid).recovery.attempts >= 2, 20)
    d = proxied.admission(wid)
    assert d.admission_state == RECOVERY
    assert d.recovery.next_attempt_time.ToNanoseconds() > d.recovery.since_time.ToNanoseconds()
    assert d.recovery.last_error.message

    proxy.heal()
    assert wait_until(lambda: proxied.recovered(wid), 30), proxied.server.log()
    _until_storage_usable(proxied)
    # The COMMIT had reached PostgreSQL: "b" was applied, once.
    wf = c.get(wid)
    assert (wf.revision, context_of(wf)["seen"]) == (3, ["a", "b"])
    after = c.signal(wid, "tick", {"id": "c"})
    assert after.accepted and after.workflow.revision == 4
    assert context_of(after.workflow)["seen"] == ["a", "b", "c"]
    assert [h.revision for h in read_history(proxied.direct_url, wid)] == [1, 2, 3, 4]
    runtime = c.diagnostics()
    assert runtime.admissions.recovery_required == 0
    assert runtime.persistence.unknown_outcomes == unknown_before + 1
    assert "recovery resolved (committed)" in proxied.server.log()


def test_workflow_diagnostics_of_an_instance_in_recovery_keep_what_is_known(
    proxied: Proxied,
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("tally")
    c.start("tally", workflow_id=wid)
    c.signal(wid, "tick", {"id": "a"})
    proxy.arm_cut(forward_commit=True, refuse=True, drop_open=True)
    expect_error(
        lambda: c.signal(wid, "tick", {"id": "b"}, timeout=20),
        grpc.StatusCode.UNKNOWN,
        "OUTCOME_UNKNOWN",
    )
    d = proxied.admission(wid)
    assert d.admission_state == RECOVERY
    # The last revision known for certain (2), or the one in doubt (3); never "none".
    assert d.revision in (2, 3), d
    assert [(t.from_state, t.to_state, t.event) for t in d.recent_transitions][:1] == [
        ("open", "open", "tick")
    ]


def test_unknown_outcome_with_a_request_id_then_a_retry_answers_the_committed_step(
    proxied: Proxied,
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid, rid = uid("tally"), uid("req")
    c.start("tally", workflow_id=wid)
    proxy.arm_cut(forward_commit=True, refuse=True, drop_open=True)
    # The request id cannot be looked up either: the step's own answer stands.
    expect_error(
        lambda: c.signal(wid, "tick", {"id": "once"}, request_id=rid, timeout=5),
        grpc.StatusCode.UNKNOWN,
        "OUTCOME_UNKNOWN",
    )
    proxy.heal()
    assert wait_until(lambda: proxied.recovered(wid), 30), proxied.server.log()
    _until_storage_usable(proxied)
    # The retry answers the step that committed and applies nothing again.
    retry = c.signal(wid, "tick", {"id": "once"}, request_id=rid)
    assert retry.accepted and retry.workflow.revision == 2
    assert context_of(c.get(wid))["seen"] == ["once"]
    assert [h.revision for h in read_history(proxied.direct_url, wid)] == [1, 2]


def test_unknown_outcome_with_a_request_id_is_answered_within_a_short_deadline(
    proxied: Proxied,
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("tally")
    c.start("tally", workflow_id=wid)
    proxy.arm_cut(forward_commit=True, refuse=True, drop_open=True)
    expect_error(
        lambda: c.signal(wid, "tick", {"id": "a"}, request_id=uid("req"), timeout=5),
        grpc.StatusCode.UNKNOWN,
        "OUTCOME_UNKNOWN",
    )


def test_unknown_outcome_of_a_commit_that_never_arrived_resolves_as_not_written(
    proxied: Proxied,
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("gated")
    c.start("gated-approval", workflow_id=wid)
    proxy.arm_cut(forward_commit=False, refuse=True, drop_open=True)
    expect_error(
        lambda: c.resume(wid, "reject", timeout=20), grpc.StatusCode.UNKNOWN, "OUTCOME_UNKNOWN"
    )
    expect_error(lambda: c.resume(wid, "reject"), PRECONDITION, "RECOVERY_REQUIRED")
    assert proxied.admission(wid).admission_state == RECOVERY
    proxy.heal()
    assert wait_until(lambda: proxied.recovered(wid), 30), proxied.server.log()
    _until_storage_usable(proxied)
    # Nothing was written: the instance still waits at revision 1 and resumes normally.
    wf = c.get(wid)
    assert (wf.status, wf.revision) == (WAITING, 1)
    assert c.resume(wid, "reject").workflow.revision == 2
    assert [h.revision for h in read_history(proxied.direct_url, wid)] == [1, 2]


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "not-committed"])
def test_a_start_whose_outcome_is_unknown_is_resolved_either_way(
    proxied: Proxied, committed: bool
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("created")
    proxy.arm_cut(forward_commit=committed, refuse=True, drop_open=True)
    expect_error(
        lambda: c.start("mail-approval", workflow_id=wid, version=2, timeout=20),
        grpc.StatusCode.UNKNOWN,
        "OUTCOME_UNKNOWN",
    )
    # The id is reserved until the re-check knows whether the instance exists. Once the
    # server has also found the database down (its readiness check, a moment later), the
    # refusal may say that instead: either way the start is refused, not applied.
    refused = rpc_failure(lambda: c.start("mail-approval", workflow_id=wid, version=2))
    assert (refused[0], refused[1].reason) in {
        (PRECONDITION, "RECOVERY_REQUIRED"),
        (grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"),
    }, refused
    proxy.heal()
    assert wait_until(lambda: c.diagnostics().admissions.recovery_required == 0, 30)
    _until_storage_usable(proxied)
    if committed:
        assert c.get(wid).revision == 1
        expect_error(
            lambda: c.start("mail-approval", workflow_id=wid, version=2),
            grpc.StatusCode.ALREADY_EXISTS,
            "WORKFLOW_ALREADY_EXISTS",
        )
    else:
        expect_error(lambda: c.get(wid), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")
        assert c.start("mail-approval", workflow_id=wid, version=2).created
    assert c.resume(wid, "approve").workflow.revision == 2
    assert [h.revision for h in read_history(proxied.direct_url, wid)] == [1, 2]


def test_every_save_of_a_batch_with_an_unknown_outcome_is_recovered(proxied: Proxied) -> None:
    c, proxy = proxied.client, proxied.proxy
    ids = [uid("batch") for _ in range(8)]
    for wid in ids:
        c.start("tally", workflow_id=wid)
    cuts_before = proxy.cuts
    # Connections already open keep working: later batches commit normally.
    proxy.arm_cut(forward_commit=True, refuse=True)

    def tick(wid: str) -> str:
        try:
            return "accepted" if c.signal(wid, "tick", {"id": wid}, timeout=20).accepted else "no"
        except grpc.RpcError as err:
            return f"{err.code().name}:{error_info(err).reason}"

    with ThreadPoolExecutor(8) as pool:
        answers = dict(zip(ids, pool.map(tick, ids), strict=True))
    assert proxy.cuts == cuts_before + 1
    assert set(answers.values()) <= {"accepted", "UNKNOWN:OUTCOME_UNKNOWN"}, answers
    unknown = [wid for wid, answer in answers.items() if answer != "accepted"]
    assert unknown
    assert c.diagnostics().admissions.recovery_required == len(unknown)
    proxy.heal()
    assert wait_until(lambda: c.diagnostics().admissions.recovery_required == 0, 30)
    # The cut transaction committed: every save in it, and every accepted one, applied once.
    for wid in ids:
        wf = c.get(wid)
        assert (wf.revision, context_of(wf)["seen"]) == (2, [wid]), answers[wid]
        assert c.signal(wid, "tick", {"id": "again"}).workflow.revision == 3


def test_signals_sent_while_a_save_with_an_unknown_outcome_is_in_flight_are_not_accepted(
    proxied: Proxied,
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("tally")
    c.start("tally", workflow_id=wid)
    proxy.stall_step_commits()
    proxy.arm_cut(forward_commit=True, refuse=True, drop_open=True)
    with ThreadPoolExecutor(4) as pool:
        cut = pool.submit(c.signal, wid, "tick", {"id": "a"}, timeout=30)
        assert wait_until(
            lambda: (
                proxied.admission(wid).admission_state == diagnostics_pb2.ADMISSION_STATE_PERSISTING
            ),
            20,
        )
        # Queued behind the save, or arriving once it is in recovery: never accepted.
        queued = [pool.submit(c.signal, wid, "tick", {"id": f"q{i}"}, timeout=30) for i in (1, 2)]
        proxy.resume()  # the held COMMIT goes through, and the connection is cut after it
        with pytest.raises(grpc.RpcError) as caught:
            cut.result()
        assert caught.value.code() is grpc.StatusCode.UNKNOWN
        for future in queued:
            response = future.result()
            assert (response.accepted, response.reason) == (
                False,
                pb.SIGNAL_REJECTION_RECOVERY_REQUIRED,
            )
            assert response.workflow.revision == 1
    proxy.heal()
    assert wait_until(lambda: proxied.recovered(wid), 30), proxied.server.log()
    _until_storage_usable(proxied)
    assert context_of(c.get(wid))["seen"] == ["a"]


def test_rpcs_succeed_once_the_database_is_back(proxied: Proxied) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid, other = uid("tally"), uid("tally")
    c.start("tally", workflow_id=wid)
    c.start("tally", workflow_id=other)
    with ThreadPoolExecutor(8) as pool:  # the server's pool grows to several connections
        list(pool.map(lambda _: c.get(other), range(64)))
    proxy.arm_cut(forward_commit=True, refuse=True, drop_open=True)
    expect_error(
        lambda: c.signal(wid, "tick", {"id": "a"}, timeout=20),
        grpc.StatusCode.UNKNOWN,
        "OUTCOME_UNKNOWN",
    )
    proxy.heal()

    def read(_: int) -> str:
        try:
            return c.get(other).name
        except grpc.RpcError as err:
            return err.code().name

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(read, range(16)))
    assert answers == [f"workflows/{other}"] * 16


def test_lost_commit_answer_that_the_read_back_settles_is_a_success(proxied: Proxied) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("mail")
    c.start("mail-approval", workflow_id=wid)
    unknown_before, cuts_before = proxied.unknown_outcomes(), proxy.cuts
    proxy.arm_cut(forward_commit=True)
    response = c.resume(wid, "approve", input={"approver": "ann"}, timeout=20)
    assert proxy.cuts == cuts_before + 1
    assert response.workflow.revision == 2
    assert c.get(wid) == response.workflow
    assert proxied.admission(wid).admission_state == IDLE
    assert proxied.unknown_outcomes() == unknown_before
    assert [h.revision for h in read_history(proxied.direct_url, wid)] == [1, 2]


def test_connection_lost_before_commit_is_a_known_failure(proxied: Proxied) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("mail")
    c.start("mail-approval", workflow_id=wid)
    cuts_before = proxy.cuts
    proxy.arm_cut(forward_commit=False)
    expect_error(
        lambda: c.resume(wid, "approve", timeout=20),
        grpc.StatusCode.UNAVAILABLE,
        "STORAGE_UNAVAILABLE",
    )
    assert proxy.cuts == cuts_before + 1
    # Nothing was written and no recovery is needed: the same step simply works now.
    assert proxied.admission(wid).admission_state == IDLE
    assert c.get(wid).revision == 1
    assert c.resume(wid, "approve").workflow.revision == 2


def test_a_task_retry_once_written_is_answered_even_if_the_database_then_goes_dark(
    proxied: Proxied,
) -> None:
    # FailTask answers with the instance too. Read after the retry was written, a database
    # gone meanwhile answered UNAVAILABLE, a failure that wrote nothing: the worker went
    # on as if it still held a lease already given up, while another worker leased the
    # next attempt.
    c, proxy = proxied.client, proxied.proxy
    tasks = Tasks(c.channel)
    wid = uid("retry")
    c.start("task-flow", workflow_id=wid, input={"route": "retry"})
    task = tasks.poll_one("e2e.retry")
    cuts_before = proxy.cuts
    proxy.arm_dark_after(marker=RETRY_MARKER)
    failed = tasks.fail(task, "FLAKY", "try again")
    assert proxy.cuts == cuts_before + 1, "the fault was not injected"
    assert proxy.refusing, "the database did not go dark"
    assert failed.task.status == task_pb2.TASK_STATUS_BACKOFF
    assert failed.task.attempt == 1
    assert failed.workflow.name == f"workflows/{wid}" and failed.workflow.state == "retrying"
    proxy.heal()
    _until_storage_usable(proxied)
    again = tasks.get(task.name)
    assert again.status == task_pb2.TASK_STATUS_BACKOFF
    assert again.last_error.message == "try again"


def test_competing_steps_while_a_save_is_in_flight(proxied: Proxied) -> None:
    """Admission: one live segment per instance, made visible by
    stalling the database while a save is in flight."""
    c, proxy = proxied.client, proxied.proxy
    wid, twin = uid("gated"), uid("gated")
    c.start("gated-approval", workflow_id=wid, version=1)
    c.start("gated-approval", workflow_id=twin, version=1)
    rid = uid("req")
    proxy.stall_step_commits()
    with ThreadPoolExecutor(4) as pool:
        resumed = pool.submit(c.resume, wid, "revise", timeout=60)
        assert wait_until(
            lambda: (
                proxied.admission(wid).admission_state == diagnostics_pb2.ADMISSION_STATE_PERSISTING
            ),
            20,
        )
        # A competing Resume, Cancel or Start is refused at once...
        for call in (
            lambda: c.resume(wid, "reject"),
            lambda: c.cancel(wid),
            lambda: c.start("gated-approval", workflow_id=wid, version=1),
        ):
            info = expect_error(call, grpc.StatusCode.ABORTED, "WORKFLOW_BUSY")
            assert info.metadata["workflow_id"] == wid
        # ...while a signal waits its turn and runs on the result.
        signalled = pool.submit(c.signal, wid, "resubmit", timeout=60)
        # The same request twice in flight: the duplicate waits for the original's answer.
        first = pool.submit(c.resume, twin, "revise", request_id=rid, timeout=60)
        assert wait_until(
            lambda: (
                proxied.admission(twin).admission_state
                == diagnostics_pb2.ADMISSION_STATE_PERSISTING
            ),
            20,
        ), proxied.server.log()
        duplicate = pool.submit(c.resume, twin, "revise", request_id=rid, timeout=60)
        assert c.diagnostics().admissions.persisting >= 1
        assert not first.done() and not duplicate.done()
        assert not resumed.done() and not signalled.done()
        proxy.resume()
        assert resumed.result().workflow.status == RUNNING
        after = signalled.result()
        assert after.accepted and after.workflow.revision == 3
        assert after.workflow.status == WAITING
        assert first.result() == duplicate.result()
    assert c.get(twin).revision == 2


def test_a_caller_past_its_deadline_is_answered_and_the_step_still_completes(
    proxied: Proxied,
) -> None:
    c, proxy = proxied.client, proxied.proxy
    wid = uid("gated")
    c.start("gated-approval", workflow_id=wid, version=1)
    proxy.stall_step_commits()
    with pytest.raises(grpc.RpcError) as caught:
        c.resume(wid, "revise", timeout=1.5)
    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    # The step is still being saved: the instance is busy, not broken.
    assert proxied.admission(wid).admission_state == diagnostics_pb2.ADMISSION_STATE_PERSISTING
    expect_error(lambda: c.resume(wid, "reject"), grpc.StatusCode.ABORTED, "WORKFLOW_BUSY")
    proxy.resume()
    assert wait_until(lambda: proxied.recovered(wid), 20)
    # The server decided the outcome, visible through GetWorkflow, and the instance goes on.
    wf = c.get(wid)
    assert (wf.state, wf.status, wf.revision) == ("revising", RUNNING, 2)
    assert c.signal(wid, "resubmit").workflow.revision == 3


def test_draining_server_finishes_the_step_in_flight_and_refuses_queued_signals(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    with _proxied_server(postgres_databases, tmp_path, grace=20) as proxied:
        c, proxy, server = proxied.client, proxied.proxy, proxied.server
        wid = uid("tally")
        c.start("tally", workflow_id=wid, version=1)
        proxy.stall_step_commits()
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(c.signal, wid, "tick", {"id": "a"}, timeout=30)
            assert wait_until(
                lambda: (
                    proxied.admission(wid).admission_state
                    == diagnostics_pb2.ADMISSION_STATE_PERSISTING
                ),
                20,
            )
            base = c.diagnostics().event_loop.dispatch_count
            queued = pool.submit(c.signal, wid, "tick", {"id": "b"}, timeout=30)
            polls = 0

            def dispatched() -> bool:
                # Each GetDiagnostics is one dispatch itself; one more is the queued signal.
                nonlocal polls
                polls += 1
                return c.diagnostics().event_loop.dispatch_count >= base + polls + 1

            assert wait_until(dispatched, 20)
            server.signal()  # SIGTERM: drain

            def refusing_new_rpcs() -> bool:
                # The EventLoop starts draining before the gRPC server stops taking RPCs.
                try:
                    c.diagnostics()
                except grpc.RpcError as err:
                    return err.code() is grpc.StatusCode.UNAVAILABLE
                return False

            assert wait_until(refusing_new_rpcs, 20), server.log()
            proxy.resume()
            assert first.result().accepted  # in flight when the drain began: finished
            late = queued.result()
            assert (late.accepted, late.reason) == (False, pb.SIGNAL_REJECTION_SHUTTING_DOWN)
            assert late.workflow.revision == 2
        assert server.wait(30) == 0
        history = read_history(proxied.direct_url, wid)
        assert [(h.revision, h.context["seen"]) for h in history] == [(1, []), (2, ["a"])]


def test_diagnostics_answer_while_the_database_is_dark(proxied: Proxied) -> None:
    """The runtime's own view must not depend on the database it may be diagnosing."""
    c, proxy = proxied.client, proxied.proxy
    wid = uid("tally")
    c.start("tally", workflow_id=wid, version=1)
    unknown_before = proxied.unknown_outcomes()
    proxy.arm_cut(forward_commit=True, refuse=True, drop_open=True)
    expect_error(
        lambda: c.signal(wid, "tick", {"id": "a"}, timeout=20),
        grpc.StatusCode.UNKNOWN,
        "OUTCOME_UNKNOWN",
    )
    d = c.stub.GetDiagnostics(pb.GetDiagnosticsRequest(), timeout=5)
    assert d.event_loop.phase == diagnostics_pb2.EVENT_LOOP_PHASE_RUNNING
    assert d.admissions.recovery_required == 1
    assert d.persistence.unknown_outcomes == unknown_before + 1
    assert "definitions/tally/versions/1" in d.definitions


def test_full_writer_queue_answers_overloaded_at_once(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    with _proxied_server(postgres_databases, tmp_path, "--writer-queue", "1") as proxied:
        _overload(proxied)


def _overload(proxied: Proxied) -> None:
    c, proxy = proxied.client, proxied.proxy
    live = uid("tally")
    c.start("tally", workflow_id=live, version=1)
    assert c.diagnostics().persistence.queue_capacity == 1

    proxy.stall()
    ids = [uid("burst") for _ in range(6)]
    answers: dict[str, pb.StartWorkflowResponse | grpc.RpcError] = {}
    done = threading.Condition()

    def start(wid: str) -> None:
        result: pb.StartWorkflowResponse | grpc.RpcError
        try:
            # An explicit version: the start needs no read, only the (stalled) save.
            result = c.start("mail-approval", workflow_id=wid, version=2, timeout=60)
        except grpc.RpcError as err:
            result = err
        with done:
            answers[wid] = result
            done.notify_all()

    threads = [threading.Thread(target=start, args=(wid,), daemon=True) for wid in ids]
    for thread in threads:
        thread.start()
    with done:
        # One save is stuck in the database and at most one waits in the queue: every
        # other start is refused while the database is still stalled.
        assert done.wait_for(lambda: len(answers) >= len(ids) - 2, 20), answers
        early = dict(answers)
    for answer in early.values():
        assert isinstance(answer, grpc.RpcError), answer
        assert answer.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert error_info(answer).reason == "OVERLOADED"
    # Whether a save waits in the queue depends on how the EventLoop batched the burst: if
    # all six reached the writer in one hand-off, it queued one and refused five, and the
    # queue is empty once the writer is stuck on that one. Then the queue has room, so
    # fill it before checking that a signal meets a full queue.
    assert wait_until(lambda: proxy.held > 0, 10), "the writer never reached the database"
    if c.diagnostics().persistence.queue_depth == 0:
        filler = uid("burst")
        ids.append(filler)
        thread = threading.Thread(target=start, args=(filler,), daemon=True)
        threads.append(thread)
        thread.start()
        assert wait_until(lambda: c.diagnostics().persistence.queue_depth == 1, 10)
    # A signal finds the queue just as full; the EventLoop itself keeps answering.
    expect_error(
        lambda: c.signal(live, "tick", {"id": "refused"}),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "OVERLOADED",
    )
    live_view = c.workflow_diagnostics(live).diagnostics
    assert (live_view.cached, live_view.revision) == (True, 1)
    assert proxy.held > 0

    proxy.resume()
    for thread in threads:
        thread.join(30)
    assert len(answers) == len(ids)
    refused = [wid for wid, answer in answers.items() if isinstance(answer, grpc.RpcError)]
    assert set(early) <= set(refused) and len(refused) >= len(ids) - 2
    for wid, answer in answers.items():
        if isinstance(answer, grpc.RpcError):
            assert error_info(answer).reason == "OVERLOADED"
            expect_error(lambda w=wid: c.get(w), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")  # type: ignore[misc]
        else:
            assert answer.workflow.status == WAITING
            assert c.get(wid) == answer.workflow
    # Nothing of the refused signal was applied, and the instance still works.
    after = c.signal(live, "tick", {"id": "ok"})
    assert after.accepted and after.workflow.status == RUNNING
    assert context_of(after.workflow)["seen"] == ["ok"]


@pytest.mark.parametrize("outage", ["stopped", "stalled"])
def test_calls_that_need_storage_fail_fast_once_it_is_known_down(
    proxied: Proxied, outage: str
) -> None:
    c, proxy, server = proxied.client, proxied.proxy, proxied.server
    wid = uid("tally")
    c.start("tally", workflow_id=wid, version=1)
    health: Any = health_pb2_grpc.HealthStub(server.channel())

    def not_ready() -> bool:
        request = health_pb2.HealthCheckRequest(service="readiness")
        status = health.Check(request, timeout=5).status
        return bool(status == health_pb2.HealthCheckResponse.NOT_SERVING)

    if outage == "stopped":
        proxy.go_dark()
    else:
        proxy.stall()
    assert wait_until(not_ready, 20), server.log()
    # The callers' deadlines are long: only a fast failure answers UNAVAILABLE within them.
    for call in (
        lambda: c.stub.GetWorkflow(pb.GetWorkflowRequest(name=f"workflows/{wid}"), timeout=30),
        lambda: c.start("mail-approval", version=2, timeout=30),
        lambda: c.signal(wid, "tick", {"id": "a"}, timeout=30),
        # With a request id too: the look-up of an earlier attempt fails on the same storage.
        lambda: c.signal(wid, "tick", {"id": "a"}, request_id=uid("req"), timeout=30),
        lambda: c.stub.ListWorkflows(pb.ListWorkflowsRequest(), timeout=30),
    ):
        expect_error(call, grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE")
    proxy.resume()
    proxy.heal()
    assert wait_until(lambda: not not_ready(), 20), server.log()
    _until_storage_usable(proxied)
    assert c.signal(wid, "tick", {"id": "b"}).workflow.revision == 2


def test_a_server_started_while_the_database_is_dark_serves_once_it_answers(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions")
    with PgProxy.for_url(url) as proxy:
        proxy.go_dark()
        server = ServerProcess(
            database_url=proxy.url_for(url),
            definitions=definitions,
            cwd=tmp_path,
            extra_args=["--log-level", "INFO"],
        )
        starting = threading.Thread(target=server.start, kwargs={"timeout": 60.0})
        starting.start()
        try:
            # The database comes back only once the server has found it unreachable.
            assert wait_until(
                lambda: "the database does not answer" in server.log() or server.port, 30
            ), server.log()
            assert "the database does not answer" in server.log(), server.log()
            assert server.proc.poll() is None, server.log()
            proxy.heal()
            starting.join(60)
            assert server.port, server.log()
            with Client(server.target) as client:
                started = client.start("mail-approval", input={"topic": "back"}).workflow
                assert (started.status, started.revision) == (WAITING, 1)
        finally:
            proxy.heal()
            starting.join(60)
            server.kill()
    postgres_databases.drop_soon(url)


# Long enough for the server to find the database down (a readiness check every second, a
# check that gives up after two) and answer, far shorter than the ten seconds a call used
# to wait for a pooled connection that could never come.
LOAD_DEADLINE = 6.0
LOAD_THREADS = 6
ANSWERS_WHILE_DOWN = {
    grpc.StatusCode.UNAVAILABLE,
    # A step whose save was on its way when the database went: it may or may not be saved.
    grpc.StatusCode.UNKNOWN,
}


@pytest.mark.parametrize("outage", ["stopped", "stalled"])
def test_under_load_no_call_waits_out_its_deadline_once_the_database_is_down(
    proxied: Proxied, outage: str
) -> None:
    c, proxy, server = proxied.client, proxied.proxy, proxied.server
    live = [c.start("tally", version=1).workflow.workflow_id for _ in range(LOAD_THREADS)]
    health: Any = health_pb2_grpc.HealthStub(server.channel())
    down = threading.Event()
    stop = threading.Event()
    answers: list[tuple[str, grpc.StatusCode, bool]] = []  # (call, code, known down at start)

    def load(index: int) -> None:
        with Client(server.target, timeout=LOAD_DEADLINE) as own:
            calls: dict[str, Callable[[], object]] = {
                "get": lambda: own.get(live[index]),
                "start": lambda: own.start("mail-approval", version=2),
                "signal": lambda: own.signal(live[index], "tick", {"id": uid("op")}),
                "list": lambda: own.stub.ListWorkflows(
                    pb.ListWorkflowsRequest(page_size=5), timeout=LOAD_DEADLINE
                ),
                "resume": lambda: own.resume(uid("none"), "approve"),
            }
            for n in range(2_000):  # bounded; the test stops it much sooner
                if stop.is_set():
                    return
                name = list(calls)[(n + index) % len(calls)]
                known = down.is_set()
                try:
                    calls[name]()
                    code = grpc.StatusCode.OK
                except grpc.RpcError as err:
                    failed: Any = err
                    code = failed.code()
                    if code in ANSWERS_WHILE_DOWN:
                        error_info(err)  # answered by the server, with its ErrorInfo
                answers.append((name, code, known))

    def not_ready() -> bool:
        request = health_pb2.HealthCheckRequest(service="readiness")
        return bool(
            health.Check(request, timeout=5).status == health_pb2.HealthCheckResponse.NOT_SERVING
        )

    with ThreadPoolExecutor(LOAD_THREADS) as pool:
        running = [pool.submit(load, i) for i in range(LOAD_THREADS)]
        assert wait_until(lambda: len(answers) >= 50, 30), server.log()
        proxy.go_dark() if outage == "stopped" else proxy.stall()
        assert wait_until(not_ready, 20), server.log()
        down.set()
        time.sleep(3.0)  # calls keep coming while the database is known down
        stop.set()
        for future in running:
            future.result(timeout=LOAD_DEADLINE * 3)
    proxy.resume()
    proxy.heal()
    deadline = grpc.StatusCode.DEADLINE_EXCEEDED
    waited_out = [(name, known) for name, code, known in answers if code is deadline]
    assert waited_out == [], (waited_out, len(answers))
    healthy = {"resume": grpc.StatusCode.NOT_FOUND}  # of an id that names nothing
    unexpected = [
        (name, code)
        for name, code, _ in answers
        if code not in ANSWERS_WHILE_DOWN | {grpc.StatusCode.OK, healthy.get(name)}
    ]
    assert unexpected == [], unexpected
    # Every call made once it was known down was refused at once as unavailable.
    after = {code for _, code, known in answers if known}
    assert after == {grpc.StatusCode.UNAVAILABLE}, after
    assert wait_until(lambda: not not_ready(), 20), server.log()
    _until_storage_usable(proxied)
