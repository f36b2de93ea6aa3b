"""Schedules over real gRPC on PostgreSQL: derived ids, overlap, pause, trigger, backfill,
two replicas, and catch-up after a SIGKILL.

Every schedule here fires each second and every window is a few seconds, so that the
module stays short; the assertions are about which instances exist, never about timing.
"""

from __future__ import annotations

import io
import json
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2, timestamp_pb2
from statewright import Client as PyClient
from statewright.cli import main
from statewright.v1 import schedule_service_pb2 as spb
from statewright.v1 import schedule_service_pb2_grpc as spb_grpc
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import COMPLETED, Client, uid
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

DONE = """
name: sched-done
version: 1
context:
  at: {type: string, default: ""}
initial: done
states:
  done: {}
"""
WAIT = """
name: sched-wait
version: 1
initial: waiting
states:
  waiting: {wait: true}
  done: {}
transitions:
  - {from: waiting, on: release, to: done}
"""
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def database(postgres_databases: PostgresDatabases) -> Iterator[str]:
    url = postgres_databases.create()
    yield url
    postgres_databases.drop_soon(url)


@pytest.fixture(scope="module")
def definitions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("schedules")
    extra = {"sched-done.yaml": DONE, "sched-wait.yaml": WAIT}
    return definitions_dir(
        root / "definitions", examples=False, test_definitions=False, extra=extra
    )


@pytest.fixture(scope="module")
def server(database: str, definitions: Path) -> Iterator[ServerProcess]:
    with running_server(database, definitions, cwd=definitions.parent) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture(scope="module")
def stubs(server: ServerProcess) -> Iterator[tuple[spb_grpc.ScheduleServiceStub, Client]]:
    with Client(server.target) as client:
        yield spb_grpc.ScheduleServiceStub(client.channel), client


def every_second(
    definition: str = "sched-done",
    overlap: int = spb.OVERLAP_POLICY_UNSPECIFIED,
    catchup: float | None = None,
    paused: bool = False,
) -> spb.Schedule:
    schedule = spb.Schedule()
    schedule.spec.interval.CopyFrom(duration_pb2.Duration(seconds=1))
    schedule.action.definition = definition
    schedule.policies.overlap = overlap  # type: ignore[assignment]
    if catchup is not None:
        schedule.policies.catchup_window.CopyFrom(duration_pb2.Duration(seconds=int(catchup)))
    schedule.state.paused = paused
    return schedule


def started_ids(client: Client, prefix: str) -> list[str]:
    ids: list[str] = []
    token = ""
    while True:
        page = client.stub.ListWorkflows(
            pb.ListWorkflowsRequest(page_size=1000, page_token=token), timeout=TIMEOUT
        )
        ids += [w.workflow_id for w in page.workflows if w.workflow_id.startswith(prefix + "-")]
        token = page.next_page_token
        if not token:
            return ids


def nominal_of(schedule_id: str, workflow_id: str) -> datetime:
    return datetime.fromisoformat(
        workflow_id.removeprefix(schedule_id + "-").replace("Z", "+00:00")
    )


def pause(stub: spb_grpc.ScheduleServiceStub, schedule_id: str) -> None:
    stub.PauseSchedule(spb.PauseScheduleRequest(name=f"schedules/{schedule_id}"), timeout=TIMEOUT)


def settled(
    stub: spb_grpc.ScheduleServiceStub, client: Client, schedule_id: str
) -> tuple[spb.Schedule, list[str]]:
    """After a pause: the schedule and its instances once a fire that was under way when
    the pause landed is recorded too (its start and its record are two writes)."""
    found: list[tuple[spb.Schedule, list[str]]] = []

    def consistent() -> bool:
        shown, ids = get(stub, schedule_id), started_ids(client, schedule_id)
        found[:] = [(shown, ids)]
        return shown.info.fires == len(ids)

    assert wait_until(consistent, 10), found
    return found[0]


def get(stub: spb_grpc.ScheduleServiceStub, schedule_id: str) -> spb.Schedule:
    request = spb.GetScheduleRequest(name=f"schedules/{schedule_id}")
    return stub.GetSchedule(request, timeout=TIMEOUT).schedule


def test_an_every_second_schedule_starts_instances_with_derived_ids(
    stubs: tuple[spb_grpc.ScheduleServiceStub, Client],
) -> None:
    stub, client = stubs
    sid = uid("tick")
    schedule = every_second()
    schedule.action.input_expressions["at"] = "string(schedule.nominal_time)"
    created = stub.CreateSchedule(
        spb.CreateScheduleRequest(schedule_id=sid, schedule=schedule), timeout=TIMEOUT
    ).schedule
    assert created.name == f"schedules/{sid}" and len(created.info.next_fire_times) == 10
    assert wait_until(lambda: len(started_ids(client, sid)) >= 3, 15)
    stub.PauseSchedule(spb.PauseScheduleRequest(name=f"schedules/{sid}", note="t"), timeout=TIMEOUT)
    shown, ids = settled(stub, client, sid)
    for wid in ids:
        nominal = nominal_of(sid, wid)
        assert nominal.microsecond == 0  # each one a whole second: the interval's fires
        started = client.get(wid)
        # Never early: created at or after its nominal time.
        assert started.create_time.ToDatetime(tzinfo=UTC) >= nominal
        assert started.status == COMPLETED
        assert started.context["at"] == wid.removeprefix(sid + "-")  # an input expression
    seconds = sorted(nominal_of(sid, w) for w in ids)
    assert len(set(seconds)) == len(seconds)
    shown = get(stub, sid)
    assert shown.state.paused and shown.info.fires == len(ids)
    assert {a.workflow for a in shown.info.recent_actions} <= {f"workflows/{w}" for w in ids}
    assert all(a.outcome == spb.SCHEDULE_ACTION_OUTCOME_STARTED for a in shown.info.recent_actions)
    assert list(shown.info.next_fire_times) == []
    # Paused: nothing more starts. Trigger fires once now, paused or not.
    time.sleep(1.5)
    assert sorted(started_ids(client, sid)) == sorted(ids)
    fired = stub.TriggerSchedule(
        spb.TriggerScheduleRequest(name=f"schedules/{sid}"), timeout=TIMEOUT
    ).action
    assert fired.outcome == spb.SCHEDULE_ACTION_OUTCOME_STARTED
    assert client.get(fired.workflow.removeprefix("workflows/")).status == COMPLETED
    assert len(started_ids(client, sid)) == len(ids) + 1
    # Unpaused: the fires resume.
    stub.UnpauseSchedule(spb.UnpauseScheduleRequest(name=f"schedules/{sid}"), timeout=TIMEOUT)
    assert wait_until(lambda: len(started_ids(client, sid)) >= len(ids) + 3, 15)
    stub.DeleteSchedule(spb.DeleteScheduleRequest(name=f"schedules/{sid}"), timeout=TIMEOUT)
    with pytest.raises(grpc.RpcError) as refused:
        get(stub, sid)
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND


def test_skip_records_skips_and_buffer_one_starts_exactly_one_after_the_open_one_ends(
    stubs: tuple[spb_grpc.ScheduleServiceStub, Client],
) -> None:
    stub, client = stubs
    for overlap in (spb.OVERLAP_POLICY_SKIP, spb.OVERLAP_POLICY_BUFFER_ONE):
        sid = uid("overlap")
        schedule = every_second("sched-wait", overlap)
        stub.CreateSchedule(
            spb.CreateScheduleRequest(schedule_id=sid, schedule=schedule), timeout=TIMEOUT
        )
        assert wait_until(lambda sid=sid: get(stub, sid).info.skips >= 2, 15)
        (first,) = started_ids(client, sid)  # the one waiting holds every later fire back
        shown = get(stub, sid)
        skipped = [
            a for a in shown.info.recent_actions if a.outcome == spb.SCHEDULE_ACTION_OUTCOME_SKIPPED
        ]
        assert skipped and all(a.reason == "SCHEDULE_OVERLAP" for a in skipped)
        if overlap == spb.OVERLAP_POLICY_SKIP:
            pause(stub, sid)
            client.resume(first, "release")
            time.sleep(1.5)
            assert started_ids(client, sid) == [first]
            continue
        # BUFFER_ONE kept one fire back (its earliest overlapping one) and starts it,
        # once, when the open instance ends; that one waits too, and holds the rest.
        assert shown.info.HasField("buffered_time")
        client.resume(first, "release")
        assert wait_until(lambda sid=sid: len(started_ids(client, sid)) == 2, 10)
        time.sleep(1.5)
        pause(stub, sid)
        ids = started_ids(client, sid)
        assert len(ids) == 2
        buffered = shown.info.buffered_time.ToDatetime(tzinfo=UTC)
        assert nominal_of(sid, sorted(ids)[1]) == buffered


def test_backfill_starts_each_nominal_time_of_the_range_once(
    stubs: tuple[spb_grpc.ScheduleServiceStub, Client],
) -> None:
    stub, client = stubs
    sid = uid("backfill")
    schedule = every_second(paused=True)
    schedule.spec.ClearField("interval")
    schedule.spec.cron_expressions.append("* * * * *")  # every minute
    stub.CreateSchedule(
        spb.CreateScheduleRequest(schedule_id=sid, schedule=schedule), timeout=TIMEOUT
    )
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
    start = end - timedelta(minutes=9)
    request = spb.BackfillScheduleRequest(name=f"schedules/{sid}")
    request.start_time.CopyFrom(timestamp_pb2.Timestamp(seconds=int(start.timestamp())))
    request.end_time.CopyFrom(timestamp_pb2.Timestamp(seconds=int(end.timestamp())))
    assert stub.BackfillSchedule(request, timeout=TIMEOUT).fires == 10
    # Paused, the schedule still runs a backfill (it was asked for), and nothing else.
    assert wait_until(lambda: get(stub, sid).info.backfill_pending == 0, 20)
    ids = started_ids(client, sid)
    backfilled = sorted(n for n in (nominal_of(sid, w) for w in ids) if n <= end)
    assert backfilled == [start + timedelta(minutes=m) for m in range(10)]
    # Asked again, the same range starts nothing new: the ids are taken.
    stub.BackfillSchedule(request, timeout=TIMEOUT)
    assert wait_until(lambda: get(stub, sid).info.backfill_pending == 0, 20)
    assert sorted(started_ids(client, sid)) == sorted(ids)


def test_two_replicas_start_exactly_one_instance_per_nominal_second(
    database: str, definitions: Path, server: ServerProcess
) -> None:
    with (
        Client(server.target) as client,
        running_server(database, definitions, cwd=definitions.parent) as second,
    ):
        stub = spb_grpc.ScheduleServiceStub(client.channel)
        sid = uid("pair")
        stub.CreateSchedule(
            spb.CreateScheduleRequest(schedule_id=sid, schedule=every_second()), timeout=TIMEOUT
        )
        time.sleep(5)
        pause(stub, sid)
        _, ids = settled(stub, client, sid)
        seconds = [nominal_of(sid, w) for w in ids]
        assert len(seconds) >= 3 and len(set(seconds)) == len(seconds)
        # Consecutive seconds, none left out, between the first and the last.
        span = int((max(seconds) - min(seconds)).total_seconds()) + 1
        assert span == len(seconds)
        assert get(stub, sid).info.fires == len(ids)
        assert "Traceback" not in second.log()


def test_after_a_sigkill_fires_within_the_catchup_window_run_once_older_ones_are_missed(
    postgres_databases: PostgresDatabases, definitions: Path
) -> None:
    database = postgres_databases.create()
    sid = uid("catchup")
    with running_server(database, definitions, cwd=definitions.parent) as first:
        with Client(first.target) as client:
            stub = spb_grpc.ScheduleServiceStub(client.channel)
            schedule = every_second(catchup=4)
            stub.CreateSchedule(
                spb.CreateScheduleRequest(schedule_id=sid, schedule=schedule), timeout=TIMEOUT
            )
            assert wait_until(lambda: len(started_ids(client, sid)) >= 2, 15)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
        killed = datetime.now(UTC)
        time.sleep(7)
        again = running_server(database, definitions, cwd=definitions.parent)
        with again as server, Client(server.target) as client:
            stub = spb_grpc.ScheduleServiceStub(client.channel)
            assert wait_until(lambda: get(stub, sid).info.misses >= 1, 15)
            pause(stub, sid)
            shown, ids = settled(stub, client, sid)
    seconds = sorted(nominal_of(sid, w) for w in ids)
    assert len(set(seconds)) == len(seconds)
    assert shown.info.fires == len(ids) and shown.info.misses >= 1
    # Every nominal second from the first fire to the last was started or missed, once.
    span = int((seconds[-1] - seconds[0]).total_seconds()) + 1
    assert span == len(ids) + shown.info.misses
    missed = [
        a for a in shown.info.recent_actions if a.outcome == spb.SCHEDULE_ACTION_OUTCOME_MISSED
    ]
    assert missed and all(a.reason == "SCHEDULE_CATCHUP_PASSED" for a in missed)
    # The restarted replica's first round (when it recorded the misses) started the
    # outage's fires younger than the 4 s window, and none older.
    first_round = min(a.actual_time.ToDatetime(tzinfo=UTC) for a in missed)
    window = first_round - timedelta(seconds=4)
    outage = [t for t in seconds if t > killed]
    assert [t for t in outage if window <= t <= first_round], (seconds, first_round)
    assert not [t for t in outage if t < window], (seconds, first_round)
    assert all(a.nominal_time.ToDatetime(tzinfo=UTC) < window for a in missed)
    postgres_databases.drop_soon(database)


def test_the_cli_and_the_python_client_reach_every_schedule_call(server: ServerProcess) -> None:
    sid = uid("cli")

    def cli(*args: str) -> Any:
        out = io.StringIO()
        assert main([*args, "--address", server.target], stdout=out) == 0
        return json.loads(out.getvalue())

    created = cli(
        "schedule", "create", sid, "sched-done", "--cron", "0 9 * * 1-5",
        "--time-zone", "Europe/Berlin", "--paused", "--note", "from the CLI",
    )  # fmt: skip
    assert created["state"] == {"paused": True, "note": "from the CLI"}
    assert created["spec"]["cron_expressions"] == ["0 9 * * 1-5"]
    fired = cli("schedule", "trigger", sid, "--force")
    assert fired["outcome"] == "SCHEDULE_ACTION_OUTCOME_STARTED"
    assert cli("schedule", "get", f"schedules/{sid}")["info"]["fires"] == "1"
    assert sid in [s["schedule_id"] for s in cli("schedule", "list")["schedules"]]
    assert cli("schedule", "unpause", sid)["info"]["next_fire_times"]
    with PyClient(server.target) as client:
        paused = client.pause_schedule(sid, "python")
        assert paused.state.paused and paused.state.note == "python"
        now = datetime.now(UTC)
        end = now.replace(hour=10, minute=0, second=0, microsecond=0)
        if end > now:  # a backfill ends in the past: before 10:00 UTC, yesterday's
            end -= timedelta(days=1)
        assert client.backfill_schedule(sid, end - timedelta(days=14), end) == 10
        assert sid in [s.schedule_id for s in client.list_schedules()]
        client.delete_schedule(sid)
    assert sid not in [s["schedule_id"] for s in cli("schedule", "list")["schedules"]]
