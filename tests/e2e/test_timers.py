"""Durable timers over real gRPC: escalation, downtime, two replicas, the test clock.

Delays here are about a second (the ``escalation`` definition's ``after: 1s``, or an
absolute ``due`` time a few seconds ahead); nothing waits for a real long delay: a
48-hour timer is fired by restarting the server with its clock 48 hours ahead.
"""

from __future__ import annotations

import itertools
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from google.rpc import error_details_pb2
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import FAILED, RUNNING, WAITING, Client, uid
from tests.support.databases import PostgresDatabases, read_all_history, read_history
from tests.support.deployment import definitions_dir, run_server_to_exit, running_server
from tests.support.server import ServerProcess, wait_until


def error_info_of(workflow: workflow_pb2.Workflow) -> error_details_pb2.ErrorInfo:
    (detail,) = workflow.error.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info)
    return info


def _due(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def test_a_waiting_instance_escalates_when_its_timer_fires(client: Client) -> None:
    wid = uid("esc")
    started = client.start("escalation", workflow_id=wid).workflow
    assert (started.status, started.state) == (WAITING, "awaiting")
    (timer,) = started.timers
    assert (timer.target_state, timer.after, timer.timer_id) == ("escalated", "1s", "1.3")
    due = timer.due_time.ToDatetime(tzinfo=UTC)
    assert due - started.update_time.ToDatetime(tzinfo=UTC) == timedelta(seconds=1)
    assert [t.timer_id for t in client.get(wid).timers] == ["1.3"]

    assert wait_until(lambda: client.get(wid).state == "escalated", 15), client.get(wid)
    escalated = client.get(wid)
    assert (escalated.status, escalated.revision, list(escalated.timers)) == (RUNNING, 2, [])
    request = pb.WatchWorkflowRequest(name=f"workflows/{wid}", after_revision=0)
    stream = client.stub.WatchWorkflow(request, timeout=10)
    steps = [next(stream), next(stream)]
    stream.cancel()
    assert [(m.revision, m.event) for m in steps] == [(1, ""), (2, "after")]
    # Without authentication a caller is anonymous; a timer's step is the server's own.
    assert [m.actor for m in steps] == ["anonymous", "statewright:timer"]
    assert [(t.from_state, t.to_state, t.event) for t in steps[1].transitions] == [
        ("awaiting", "escalated", "after")
    ]
    assert [t.timer_id for t in steps[0].workflow.timers] == ["1.3"]
    assert client.workflow_diagnostics(wid).diagnostics.timers == []


def test_an_instance_resumed_before_its_timer_never_escalates(
    client: Client, module_database_url: str
) -> None:
    wid = uid("esc")
    client.start("escalation", workflow_id=wid)
    resumed = client.resume(wid, "approve").workflow
    assert resumed.state == "done" and list(resumed.timers) == []
    time.sleep(2.0)  # past the timer's due time
    final = client.get(wid)
    assert (final.state, final.revision) == ("done", 2)
    events = [row.event for row in read_history(module_database_url, wid)]
    assert "after" not in events


def test_diagnostics_count_armed_timers_and_the_fire_lag(client: Client) -> None:
    wid = uid("esc")
    client.start("escalation", workflow_id=wid, input={"due": _due(3600)})
    assert len(client.workflow_diagnostics(wid).diagnostics.timers) == 1

    def counted() -> bool:
        return client.diagnostics().timers.armed >= 1

    assert wait_until(counted, 15)
    fired_before = client.diagnostics().timers.fired
    quick = uid("esc")
    client.start("escalation", workflow_id=quick)
    assert wait_until(lambda: client.diagnostics().timers.fired > fired_before, 15)
    timers = client.diagnostics().timers
    assert timers.fire_lag_p99.ToTimedelta() >= timers.fire_lag_p50.ToTimedelta()


def test_timers_due_while_the_server_was_down_fire_once_after_a_restart(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions")
    count = 200
    with running_server(url, definitions, cwd=tmp_path) as server, Client(server.target) as c:
        due = _due(2.0)
        with ThreadPoolExecutor(8) as pool:
            ids = list(
                pool.map(
                    lambda _: c.start("escalation", input={"due": due}).workflow.workflow_id,
                    range(count),
                )
            )
        server.signal(signal.SIGKILL)
        server.wait(10)
    time.sleep(4.0)  # every timer comes due while no server runs
    restarted = ServerProcess(
        database_url=url, definitions=definitions, cwd=tmp_path, grace=2.0
    ).start()
    ready = time.monotonic()
    try:
        with Client(restarted.target) as c:

            def escalated() -> int:
                return sum(1 for h in read_all_history(url).values() if h[-1].event == "after")

            assert wait_until(lambda: escalated() == count, 15, interval=0.2), escalated()
            took = time.monotonic() - ready
            print(f"{count} timers fired {took:.1f}s after the restarted server was ready")
    finally:
        restarted.stop()
    histories = read_all_history(url)
    for wid in ids:
        rows = histories[wid]
        assert [r.revision for r in rows] == [1, 2], rows
        assert [r.event for r in rows].count("after") == 1
    postgres_databases.drop_soon(url)


def test_two_replicas_fire_each_of_a_thousand_timers_exactly_once(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions")
    count = 1000
    with (
        running_server(url, definitions, cwd=tmp_path) as a,
        running_server(url, definitions, cwd=tmp_path) as b,
        Client(a.target) as on_a,
        Client(b.target) as on_b,
    ):
        clients = itertools.cycle([on_a, on_b])
        due = _due(8.0)
        with ThreadPoolExecutor(8) as pool:
            started = list(
                pool.map(
                    lambda c: c.start("escalation", input={"due": due}).workflow,
                    [next(clients) for _ in range(count)],
                )
            )
        assert all(w.status == WAITING for w in started)

        def fired() -> int:
            return sum(c.diagnostics().timers.fired for c in (on_a, on_b))

        assert wait_until(lambda: fired() >= count, 60, interval=0.25), fired()
        by_replica = [on_a.diagnostics().timers.fired, on_b.diagnostics().timers.fired]
        print(f"fired by replica: {by_replica}")
        assert sum(by_replica) == count
        # The counts are refreshed every few seconds; the table empties as timers fire.
        assert wait_until(lambda: on_a.diagnostics().timers.armed == 0, 20)
    histories = read_all_history(url)
    assert len(histories) == count
    events = Counter(r.event for rows in histories.values() for r in rows)
    assert events["after"] == count
    for rows in histories.values():
        assert [r.revision for r in rows] == [1, 2]
    postgres_databases.drop_soon(url)


def test_the_test_clock_fires_a_two_day_timer_without_waiting(
    database_url: str, tmp_path: Path
) -> None:
    definitions = definitions_dir(tmp_path / "definitions")
    with (
        running_server(database_url, definitions, cwd=tmp_path) as server,
        Client(server.target) as c,
    ):
        wid = c.start("escalation", input={"due": _due(48 * 3600)}).workflow.workflow_id
        time.sleep(1.5)
        assert c.get(wid).state == "scheduled"
    ahead = ["--clock-offset", "48h1m"]
    with (
        running_server(database_url, definitions, cwd=tmp_path, extra_args=ahead) as server,
        Client(server.target) as c,
    ):
        assert wait_until(lambda: c.get(wid).state == "escalated", 15)


def test_a_timer_past_the_longest_wait_fails_its_step_cleanly(client: Client) -> None:
    # Ten thousand years: its due time would be past the year 9999.
    wid = uid("far")
    answer = client.start(
        "ticket-escalation", workflow_id=wid, input={"respond_within": "87600000h"}
    ).workflow
    assert (answer.status, answer.state, answer.revision) == (FAILED, "open", 1)
    assert list(answer.timers) == []
    info = error_info_of(answer)
    assert info.reason == "TIMER_OUT_OF_RANGE" and "100 years" in answer.error.message
    # What the caller was answered is what is stored: one whole step, nothing armed.
    assert client.get(wid) == answer
    # Within the longest wait, the same definition arms its timer as usual.
    near = client.start("ticket-escalation", input={"respond_within": "876000h"}).workflow
    assert near.status == WAITING and [t.target_state for t in near.timers] == ["escalated"]


def test_a_definition_with_a_literal_timer_past_the_longest_is_refused_at_start(
    tmp_path: Path,
) -> None:
    far = "name: far-timer\nversion: 1\nstates: {a: {wait: true}, b: {}}\n" + (
        "transitions:\n  - {from: a, on: go, to: b}\n  - {from: a, after: 99999999999d, to: b}\n"
    )
    definitions = definitions_dir(
        tmp_path / "definitions", examples=False, test_definitions=False, extra={"far.yaml": far}
    )
    ended = run_server_to_exit(f"sqlite:///{tmp_path / 'db'}", definitions, cwd=tmp_path)
    assert ended.returncode == 2, ended.stdout
    assert "after must be at most 100 years" in ended.stdout
    assert "Traceback" not in ended.stdout


def test_a_timer_due_at_the_last_representable_time_is_armed_and_read_back(
    client: Client,
) -> None:
    # A timestamp rather than a duration: the latest one CEL, protobuf and every client
    # can hold. It is armed like any other (nothing can add to it and overflow).
    for due in ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999999Z"):
        wid = uid("last")
        answer = client.start("escalation", workflow_id=wid, input={"due": due}).workflow
        assert (answer.status, answer.state) == (WAITING, "scheduled"), answer
        (timer,) = answer.timers
        assert timer.due_time.ToDatetime().year == 9999
        assert client.get(wid) == answer
        assert client.resume(wid, "approve").workflow.state == "done"
