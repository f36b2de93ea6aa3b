"""Flow control over real gRPC on PostgreSQL and Citus: a queue's limits, its keys' limits,
its rate, priorities and closed keys, with several pollers at once (through two replicas
where a limit is counted).

Limits are checked from the task rows (each completed task's lease start, its attempt's
start time, and its end, its update time), never from timings on the test's side, and
by counting the leased rows while the workers run. On PostgreSQL each count is one
snapshot; on Citus a count spans the shards, each read at its own moment, so it is taken
under the queue's claim lock (the store's): no lease starts meanwhile, and every row it
counts was leased when the lock was taken. The counts are small for CI;
STATEWRIGHT_FLOW_E2E_SCALE multiplies them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from google.protobuf import timestamp_pb2
from statewright.v1 import task_pb2
from statewright.v1 import task_service_pb2 as pb

from statewrightd.store.citus_flow import QUEUE_LOCK, QUEUE_LOCK_CLASS, QUEUE_UNLOCK
from tests.e2e.test_metrics import metrics_url, scrape, value
from tests.support.api import COMPLETED, Client, uid
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until
from tests.support.tasks import Tasks

SCALE = max(1, int(os.environ.get("STATEWRIGHT_FLOW_E2E_SCALE", "1")))
# STATEWRIGHT_FLOW_E2E_FULL=1: the counts the flow-control promises are stated with (200
# tasks under max_leased 5, 20 keys of 10 tasks, 20 leases a second for 10 s, a backlog of
# 500), instead of CI's small ones.
FULL = os.environ.get("STATEWRIGHT_FLOW_E2E_FULL", "") == "1"

FLOW = """
name: flow
version: 1
description: Task states on limited queues, one per scenario.
context:
  route: {type: string, default: max}
  key:   {type: string, default: ""}
  prio:  {type: int, default: 3}
states:
  begin: {}
  on_max:
    task: {queue: flow.max}
  on_key:
    task: {queue: flow.key, concurrency_key: context.key}
  on_rate:
    task: {queue: flow.rate}
  on_prio:
    task: {queue: flow.prio, priority: context.prio}
  on_close:
    task: {queue: flow.close, concurrency_key: context.key}
  on_two:
    task: {queue: flow.two}
  done: {}
transitions:
  - {from: begin, to: on_max, guard: "context.route == 'max'"}
  - {from: begin, to: on_key, guard: "context.route == 'key'"}
  - {from: begin, to: on_rate, guard: "context.route == 'rate'"}
  - {from: begin, to: on_prio, guard: "context.route == 'prio'"}
  - {from: begin, to: on_close, guard: "context.route == 'close'"}
  - {from: begin, to: on_two, guard: "context.route == 'two'"}
  - {from: on_max, to: done}
  - {from: on_key, to: done}
  - {from: on_rate, to: done}
  - {from: on_prio, to: done}
  - {from: on_close, to: done}
  - {from: on_two, to: done}
"""


QUEUES = """
queues:
  flow.file: {max_leased: 2, rate: 50, key_max_leased: 1}
"""


@pytest.fixture(scope="module")
def database(module_server_database: str) -> str:
    return module_server_database


@pytest.fixture(scope="module")
def definitions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("flow")
    return definitions_dir(
        root / "definitions",
        examples=False,
        test_definitions=False,
        extra={"flow.yaml": FLOW, "queues.yaml": QUEUES},
    )


@pytest.fixture(scope="module")
def server(database: str, definitions: Path) -> Iterator[ServerProcess]:
    metrics = ["--metrics-listen", "127.0.0.1:0"]
    root = definitions.parent
    with running_server(database, definitions, cwd=root, extra_args=metrics) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture(scope="module")
def second(server: ServerProcess, database: str, definitions: Path) -> Iterator[ServerProcess]:
    """A second replica on the same database: half the pollers of a test work through it,
    so a limit holds across replicas, not only within one."""
    with running_server(database, definitions, cwd=definitions.parent) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def configure(client: Client, queue: str, **limits: float) -> pb.QueueConfig:
    tasks = Tasks(client.channel)
    config = pb.QueueConfig(queue=queue, **limits)  # type: ignore[arg-type]
    request = pb.SetQueueConfigRequest(config=config)
    return tasks.stub.SetQueueConfig(request, timeout=10).config


def start(client: Client, route: str, n: int, **context: object) -> list[str]:
    ids = []
    for _ in range(n):
        wid = uid(route)
        client.start("flow", workflow_id=wid, input={"route": route, **context})
        ids.append(wid)
    return ids


class Watch:
    """What the workers held at once, overall and per key, from their side: from a poll's
    answer to the completion's call, inside the server's lease, so never more than it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leased: list[task_pb2.Task] = []
        self.holding: dict[str, int] = {}
        self.most: dict[str, int] = {}

    def took(self, tasks: list[task_pb2.Task]) -> None:
        with self.lock:
            self.leased.extend(tasks)
            for t in tasks:
                for name in ("", "key:" + t.concurrency_key):
                    self.holding[name] = self.holding.get(name, 0) + 1
                    self.most[name] = max(self.most.get(name, 0), self.holding[name])

    def ends(self, task: task_pb2.Task) -> None:
        with self.lock:
            for name in ("", "key:" + task.concurrency_key):
                self.holding[name] -= 1


def on_citus(database: str) -> bool:
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'citus'").fetchone()
    return bool(row and row[0])


def sample_leased(database: str, queue: str, stop: threading.Event) -> list[int]:
    """The queue's leased rows, counted over and over until ``stop``: each count one
    consistent snapshot of the table, or on Citus taken under the queue's claim lock."""
    counts: list[int] = []
    lock = {"lock_class": QUEUE_LOCK_CLASS, "queue": queue}
    distributed = on_citus(database)
    with psycopg.connect(database, autocommit=True) as conn:
        while not stop.is_set() and len(counts) < 100_000:
            if distributed:
                conn.execute(QUEUE_LOCK, lock)
            row = conn.execute(
                "SELECT count(*) FROM workflow_tasks WHERE queue = %s AND status = 'LEASED'",
                (queue,),
            ).fetchone()
            if distributed:
                conn.execute(QUEUE_UNLOCK, lock)
            counts.append(int(row[0]) if row else 0)
            stop.wait(0.005)
    return counts


def work(
    server: ServerProcess,
    queue: str,
    total: int,
    *,
    pollers: int = 4,
    hold: float = 0.02,
    deadline: float = 60.0,
    also: ServerProcess | None = None,
) -> Watch:
    """``pollers`` workers on their own channels poll ``queue`` and complete each task
    after ``hold`` seconds, until ``total`` are done."""
    watch = Watch()
    end = time.monotonic() + deadline
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            # With ``also``, every other poller works through that replica.
            replica = also if also is not None and n % 2 else server
            with Client(replica.target) as own:
                tasks = Tasks(own.channel)
                while time.monotonic() < end:
                    with watch.lock:
                        if len(watch.leased) >= total:
                            return
                    got = tasks.poll(queue, wait=1.0, max_tasks=2, identity=f"w{n}")
                    watch.took(got)
                    for task in got:
                        time.sleep(hold)
                        watch.ends(task)
                        tasks.complete(task, {})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(pollers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(deadline + 10)
    assert not errors, errors
    assert len(watch.leased) == total, f"{len(watch.leased)} of {total} leased"
    return watch


def lease_spans(database: str, queue: str) -> list[tuple[datetime, datetime, str | None]]:
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT attempt_start_time, update_time, concurrency_key FROM workflow_tasks"
            " WHERE queue = %s AND status = 'COMPLETED'",
            (queue,),
        ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def most_at_once(spans: list[tuple[datetime, datetime, str | None]]) -> int:
    # An end before a start at the same instant: the slot was free when the next took it.
    edges = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_a_queue_never_has_more_than_max_leased(
    client: Client, server: ServerProcess, second: ServerProcess, database: str
) -> None:
    total = 200 if FULL else 40 * SCALE
    stored = configure(client, "flow.max", max_leased=5)
    assert stored.max_leased == 5 and stored.HasField("update_time")
    ids = start(client, "max", total)
    stop = threading.Event()
    counts: list[int] = []
    sampler = threading.Thread(
        target=lambda: counts.extend(sample_leased(database, "flow.max", stop))
    )
    sampler.start()
    try:
        watch = work(server, "flow.max", total, pollers=4, also=second)
    finally:
        stop.set()
        sampler.join(30)
    assert watch.most[""] <= 5
    assert counts and max(counts) <= 5, "the table never shows more than 5 leased"
    assert max(counts) >= 2, "the pollers did work side by side"
    wait_until(lambda: all(client.get(w).status == COMPLETED for w in ids), timeout=30)


def test_one_key_never_has_two_leased_and_keys_take_turns(
    client: Client, server: ServerProcess, second: ServerProcess
) -> None:
    keys, each = (20, 10) if FULL else (8, 4 * SCALE)
    configure(client, "flow.key", key_max_leased=1)
    for k in range(keys):  # every task of key 0 first, then key 1's ...
        start(client, "key", each, key=f"k{k}")
    watch = work(server, "flow.key", keys * each, pollers=4, also=second)
    first = {t.concurrency_key for t in watch.leased[:keys]}
    # Fairness: the first leases (one per key) cover nearly every key, not key 0's backlog.
    assert len(first) >= keys * 3 // 4, f"the first {keys} leases cover only {sorted(first)}"
    assert all(watch.most[f"key:k{k}"] == 1 for k in range(keys)), watch.most


def test_a_rate_hands_out_no_more_than_its_tokens(
    client: Client, server: ServerProcess, second: ServerProcess, database: str
) -> None:
    rate, seconds, burst = (20.0, 10.0, 2) if FULL else (10.0, 3.0 * SCALE, 2)
    total = int(rate * seconds) + burst
    configure(client, "flow.rate", rate=rate, burst=burst)
    start(client, "rate", total)
    work(server, "flow.rate", total, pollers=4, hold=0.0, also=second)
    starts = sorted(s for s, _, _ in lease_spans(database, "flow.rate"))
    # The burst goes at once; every other lease waits for a token of its own.
    took = (starts[-1] - starts[0]).total_seconds()
    expected = (total - burst) / rate
    assert took >= expected * 0.999, f"{total} leases in {took:.2f}s: faster than the rate"
    if not on_citus(database):
        # On Citus a claim reads every shard group (hundreds of milliseconds on a loaded
        # two-core machine) and a limited queue's claims take turns: their pace, not the
        # bucket, can set the rate there, so only the limit itself is checked.
        assert took <= expected * 1.10, f"{total} leases took {took:.2f}s, not about {expected}s"


def test_a_priority_1_task_jumps_the_backlog(client: Client, server: ServerProcess) -> None:
    configure(client, "flow.prio", max_leased=1000)
    start(client, "prio", 500 if FULL else 30 * SCALE, prio=3)
    tasks = Tasks(client.channel)
    first = tasks.poll("flow.prio", max_tasks=2)
    assert [t.priority for t in first] == [3, 3]
    (vip,) = start(client, "prio", 1, prio=1)
    nxt = []
    for _ in range(5):
        nxt += tasks.poll("flow.prio", max_tasks=1)
    assert f"workflows/{vip}/tasks/1" in [t.name for t in nxt[:5]]
    assert next(t for t in nxt if t.workflow == f"workflows/{vip}").priority == 1


def test_a_closed_key_waits_until_its_time_and_others_flow(
    client: Client, server: ServerProcess
) -> None:
    configure(client, "flow.close", max_leased=100)
    tasks = Tasks(client.channel)
    (a1,) = start(client, "close", 1, key="a")
    got = tasks.poll_one("flow.close")
    assert got.workflow == f"workflows/{a1}" and got.concurrency_key == "a"
    until = datetime.now(UTC) + timedelta(seconds=2)
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(until)
    request = pb.FailTaskRequest(
        name=got.name,
        lease_token=got.lease_token,
        error=task_pb2.TaskError(type="RATE_LIMITED", message="429"),
        close_key_until=stamp,
    )
    failed = tasks.stub.FailTask(request, timeout=10)
    assert failed.task.status == task_pb2.TASK_STATUS_BACKOFF
    shown = tasks.stub.GetQueueConfig(pb.GetQueueConfigRequest(queue="flow.close"), timeout=10)
    assert [k.key for k in shown.closed_keys] == ["a"]
    start(client, "close", 1, key="a")
    (b1,) = start(client, "close", 1, key="b")
    other = tasks.poll_one("flow.close")
    assert other.workflow == f"workflows/{b1}", "another key flows"
    tasks.complete(other, {})
    seen: list[task_pb2.Task] = []
    while len(seen) < 2:
        seen += tasks.poll("flow.close", wait=5.0, max_tasks=2)
        assert datetime.now(UTC) >= until or not seen, "a task of a closed key went early"
    assert {t.concurrency_key for t in seen} == {"a"}
    listed = tasks.stub.ListQueues(pb.ListQueuesRequest(), timeout=10)
    names = [q.queue for q in listed.queues]
    assert "flow.close" in names and "flow.max" in names
    closed = next(q for q in listed.queues if q.queue == "flow.close")
    assert closed.config.max_leased == 100 and closed.leased == 2
    assert [k.key for k in closed.busiest_keys] == ["a"]


def test_a_config_of_zeros_removes_the_limits(client: Client) -> None:
    tasks = Tasks(client.channel)
    configure(client, "flow.gone", max_leased=3)
    got = tasks.stub.GetQueueConfig(pb.GetQueueConfigRequest(queue="flow.gone"), timeout=10)
    assert got.config.max_leased == 3
    assert not configure(client, "flow.gone").queue
    got = tasks.stub.GetQueueConfig(pb.GetQueueConfigRequest(queue="flow.gone"), timeout=10)
    assert not got.HasField("config")


def test_a_queues_file_is_applied_at_start(client: Client, server: ServerProcess) -> None:
    tasks = Tasks(client.channel)
    got = tasks.stub.GetQueueConfig(pb.GetQueueConfigRequest(queue="flow.file"), timeout=10)
    assert (got.config.max_leased, got.config.rate, got.config.key_max_leased) == (2, 50.0, 1)
    samples = scrape(metrics_url(server))
    assert value(samples, "statewright_queue_limit", queue="flow.file", limit="rate") == 50.0
    assert value(samples, "statewright_queue_limit", queue="flow.file", limit="max_leased") == 2


def test_two_replicas_share_one_limit(
    client: Client, server: ServerProcess, second: ServerProcess, database: str
) -> None:
    total = 24 * SCALE
    configure(client, "flow.two", max_leased=3)
    start(client, "two", total)
    stop = threading.Event()
    counts: list[int] = []
    sampler = threading.Thread(
        target=lambda: counts.extend(sample_leased(database, "flow.two", stop))
    )
    sampler.start()
    try:
        watch = work(server, "flow.two", total, pollers=4, also=second)
    finally:
        stop.set()
        sampler.join(30)
    assert watch.most[""] <= 3
    assert counts and max(counts) <= 3, "never more than 3 leased across both replicas"
    assert len({t.name for t in watch.leased}) == total
