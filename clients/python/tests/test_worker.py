"""Worker and AsyncWorker against the fake TaskService: the task worker contract, for both.

Every contract test runs twice: with the blocking Worker (its handler in the thread pool)
and with the AsyncWorker (the same handler body awaited in a thread, through a coroutine,
so that the coroutine path, its cancellation included, is what runs). The fake is strict
about leases, so a missed heartbeat shows up as a refused completion, not as a timing.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from statewright import AsyncClient, AsyncWorker, Client, RunningTask, TaskFailure, Worker, _worker
from statewright.errors import make_error

from tests.fakes import FakeServer, FakeTasks, abort

KINDS = ["sync", "async"]
Body = Callable[[RunningTask], Any]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(max_workers=16) as fake:
        yield fake


class Running:
    """A worker of one kind running on a background thread (the async one in its own
    event loop there) until the test stops it."""

    def __init__(
        self,
        kind: str,
        target: str,
        handlers: Mapping[str, Body],
        *,
        native: bool = False,
        **options: Any,
    ) -> None:
        self.kind = kind
        self.target = target
        self.handlers = handlers
        self.native = native  # async: register the handlers as they are
        self.options = options
        self.worker: Worker | AsyncWorker | None = None
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)

    def __enter__(self) -> Running:
        self._thread.start()
        assert self._ready.wait(10), "the worker never started"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self.stop(immediately=True)
            self._thread.join(15)

    @property
    def stopping(self) -> bool:
        return self.worker is not None and self.worker.stopping

    def stop(self, *, immediately: bool = False) -> None:
        worker = self.worker
        assert worker is not None
        if self._loop is None:
            worker.stop(immediately=immediately)
        else:
            self._loop.call_soon_threadsafe(partial(worker.stop, immediately=immediately))

    def join(self) -> None:
        self._thread.join(15)
        assert not self._thread.is_alive(), "run() did not return"
        if self.error is not None:
            raise self.error

    def _main(self) -> None:
        try:
            if self.kind == "sync":
                with Client(self.target) as client:
                    worker = Worker(client, **self.options)
                    for queue, handler in self.handlers.items():
                        worker.register(queue, handler)
                    self.worker = worker
                    self._ready.set()
                    worker.run(handle_signals=False)
            else:
                asyncio.run(self._async_main())
        except BaseException as exc:
            self.error = exc
        finally:
            self._ready.set()

    async def _async_main(self) -> None:
        async with AsyncClient(self.target) as client:
            worker = AsyncWorker(client, **self.options)
            for queue, handler in self.handlers.items():
                worker.register(queue, handler if self.native else _awaiting(handler))
            self._loop = asyncio.get_running_loop()
            self.worker = worker
            self._ready.set()
            await worker.run(handle_signals=False)


def _awaiting(body: Body) -> Callable[[RunningTask], Any]:
    async def handler(task: RunningTask) -> Any:
        return await asyncio.to_thread(body, task)

    return handler


def _failing(
    behaviour: Callable[[Any, grpc.ServicerContext], Any],
    times: int,
    code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE,
    reason: str = "",
) -> Callable[[Any, grpc.ServicerContext], Any]:
    """Fails the first ``times`` calls with ``code``, then behaves."""
    counter = itertools.count()

    def scripted(request: Any, context: grpc.ServicerContext) -> Any:
        if next(counter) < times:
            abort(context, code, reason, message="scripted failure")
        return behaviour(request, context)

    return scripted


def _until(predicate: Callable[[], bool], seconds: float = 15.0) -> bool:
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def charge(task: RunningTask) -> dict[str, object]:
    amount = task.input["amount"]
    if not isinstance(amount, int):
        return ["not", "a", "dict"]  # type: ignore[return-value]
    if amount >= 1000:
        raise TaskFailure(
            "CARD_DECLINED",
            "card declined",
            details={"limit": 1000},
            non_retryable=True,
            retry_delay=2.5,
        )
    if amount < 0:
        raise ValueError("negative amount")
    if amount == 429:
        raise TaskFailure("RATE_LIMITED", "slow down", close_key_until=REOPENS)
    return {"id": f"ch-{task.input['order']}", "attempt": task.attempt}


REOPENS = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


# --- the contract, for both workers --------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_handler_that_returns_completes_its_task(server: FakeServer, kind: str) -> None:
    tasks = FakeTasks(server.service)
    name = tasks.add("t1", {"order": "o-1", "amount": 10})
    with Running(kind, server.target, {"payments": charge}, identity="w-1") as running:
        assert tasks.wait_until(lambda: name in tasks.completed)
        running.stop()
        running.join()
    request = tasks.completed[name]
    assert dict(request.result.fields)["id"].string_value == "ch-o-1"
    assert request.lease_token == f"{name}@1"
    assert request.request_id == f"{name}#1#complete"
    poll = server.service.calls("PollTasks")[0]
    assert (poll.queue, poll.identity) == ("payments", "w-1")
    assert 20 <= poll.wait.ToTimedelta().total_seconds() <= 30  # a long poll
    assert not tasks.failed


@pytest.mark.parametrize("kind", KINDS)
def test_raised_errors_fail_the_task(server: FakeServer, kind: str) -> None:
    tasks = FakeTasks(server.service)
    declined = tasks.add("t1", {"order": "o-1", "amount": 5000})
    broken = tasks.add("t2", {"order": "o-2", "amount": -1})
    odd = tasks.add("t3", {"order": "o-3", "amount": "ten"})
    with Running(kind, server.target, {"payments": charge}) as running:
        assert tasks.wait_until(lambda: len(tasks.failed) == 3)
        running.stop()
        running.join()
    card = tasks.failed[declined]
    assert (card.error.type, card.error.message) == ("CARD_DECLINED", "card declined")
    assert card.error.details.fields["limit"].number_value == 1000
    assert card.non_retryable
    assert card.retry_delay.ToTimedelta().total_seconds() == 2.5
    assert card.request_id == f"{declined}#1#fail"
    value = tasks.failed[broken]
    assert (value.error.type, value.error.message) == ("ValueError", "negative amount")
    assert not value.non_retryable and not value.HasField("retry_delay")
    # A result that is not a JSON object cannot complete a task: it fails it, retryably.
    assert tasks.failed[odd].error.type == "TypeError"
    assert not tasks.failed[odd].HasField("close_key_until")
    assert not tasks.completed


@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_may_close_its_tasks_key(server: FakeServer, kind: str) -> None:
    tasks = FakeTasks(server.service)
    limited = tasks.add("t1", {"order": "o-1", "amount": 429})
    with Running(kind, server.target, {"payments": charge}) as running:
        assert tasks.wait_until(lambda: len(tasks.failed) == 1)
        running.stop()
        running.join()
    request = tasks.failed[limited]
    assert request.error.type == "RATE_LIMITED"
    assert request.close_key_until.ToDatetime(tzinfo=UTC) == REOPENS
    with pytest.raises(ValueError, match="aware"):
        TaskFailure("X", close_key_until=datetime(2030, 1, 1))


@pytest.mark.parametrize("kind", KINDS)
def test_heartbeats_extend_the_lease_and_carry_the_latest_details(
    server: FakeServer, kind: str
) -> None:
    # The fake refuses a completion on an expired lease: this handler outlives its first
    # lease, so its completion is accepted only if heartbeats extended it in time.
    tasks = FakeTasks(server.service, first_lease=1.0, lease=1.0)
    name = tasks.add("t1", {"order": "o-1", "amount": 10})

    def long_charge(task: RunningTask) -> dict[str, object]:
        expires = task.task.lease_expire_time
        assert expires is not None
        for step in itertools.count():
            task.heartbeat({"step": step})
            if datetime.now(UTC).timestamp() > expires.timestamp() + 0.3 or step > 1000:
                break
            time.sleep(0.02)
        return {"steps": step}

    with Running(kind, server.target, {"payments": long_charge}) as running:
        assert tasks.wait_until(lambda: name in tasks.completed or name in tasks.failed)
        running.stop()
        running.join()
    assert name in tasks.completed, "the completion was refused: the lease ran out"
    beats = [b for b in tasks.heartbeats if b.name == name]
    assert len(beats) >= 2
    assert {b.lease_token for b in beats} == {f"{name}@1"}
    steps = [b.details.fields["step"].number_value for b in beats if b.HasField("details")]
    assert steps == sorted(steps) and steps[-1] > 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["cancel_requested", "TASK_CANCELLED"])
def test_a_cancelled_task_cancels_its_handler_and_reports_nothing(
    server: FakeServer, kind: str, how: str
) -> None:
    tasks = FakeTasks(server.service, first_lease=0.6)
    cancelled = tasks.add("t1", {"order": "o-1", "amount": 10})
    tasks.cancel(cancelled)
    if how == "TASK_CANCELLED":
        heartbeat = tasks.heartbeat

        def refuse(request: Any, context: grpc.ServicerContext) -> Any:
            if request.name == cancelled:
                abort(context, grpc.StatusCode.FAILED_PRECONDITION, "TASK_CANCELLED")
            return heartbeat(request, context)

        server.service.behaviours["HeartbeatTask"] = refuse
    saw: list[bool] = []

    def handler(task: RunningTask) -> dict[str, object]:
        if task.name == cancelled:
            saw.append(task.cancelled.wait(15))
            return {"ignored": True}
        return charge(task)

    # One slot: the next task starts only once the cancelled one has let its slot go.
    with Running(kind, server.target, {"payments": handler}, concurrency=1) as running:
        assert _until(lambda: bool(saw))
        after = tasks.add("t2", {"order": "o-2", "amount": 10})
        assert tasks.wait_until(lambda: after in tasks.completed)
        running.stop()
        running.join()
    assert saw == [True]
    assert cancelled not in tasks.completed and cancelled not in tasks.failed
    assert [r.name for r in server.service.calls("CompleteTask")] == [after]
    assert not server.service.calls("FailTask")


@pytest.mark.parametrize("kind", KINDS)
def test_polls_ask_only_for_free_slots_and_concurrency_is_bounded(
    server: FakeServer, kind: str
) -> None:
    tasks = FakeTasks(server.service, max_per_poll=1)
    names = [tasks.add(f"t{i}", {"order": f"o-{i}", "amount": i}) for i in range(5)]
    gate = threading.Event()
    lock = threading.Lock()
    running_now = [0]
    most = [0]
    asked: list[tuple[int, int]] = []  # (max_tasks, handlers running) at each poll

    def poll(request: Any, context: grpc.ServicerContext) -> Any:
        with lock:
            asked.append((request.max_tasks, running_now[0]))
        return tasks.poll(request, context)

    server.service.behaviours["PollTasks"] = poll

    def handler(task: RunningTask) -> dict[str, object]:
        with lock:
            running_now[0] += 1
            most[0] = max(most[0], running_now[0])
        gate.wait(15)
        with lock:
            running_now[0] -= 1
        return charge(task)

    with Running(kind, server.target, {"payments": handler}, concurrency=2) as running:
        assert _until(lambda: running_now[0] == 2)
        # Both slots are taken: the poller waits for one rather than leasing a third task
        # (a poll now would be recorded with two handlers running, failing the check below).
        assert [m for m, _ in asked] == [2, 1]
        gate.set()
        assert tasks.wait_until(lambda: len(tasks.completed) == 5)
        running.stop()
        running.join()
    assert set(tasks.completed) == set(names)
    assert most[0] == 2
    for max_tasks, busy in asked:
        assert 1 <= max_tasks <= 2 - busy


@pytest.mark.parametrize("kind", KINDS)
def test_shutdown_lets_handlers_finish_then_releases_the_rest(
    server: FakeServer, kind: str
) -> None:
    tasks = FakeTasks(server.service)
    quick = tasks.add("t1", {"kind": "quick"})
    slow = tasks.add("t2", {"kind": "slow"})
    started: set[str] = set()
    slow_saw_cancel: list[bool] = []
    running: Running

    def handler(task: RunningTask) -> dict[str, object]:
        started.add(task.name)
        if task.input["kind"] == "quick":
            _until(lambda: running.stopping)  # still running when the shutdown begins
            return {"done": True}
        slow_saw_cancel.append(task.cancelled.wait(15))
        return {"too": "late"}

    # A third slot keeps a long poll waiting when the worker stops: it must be abandoned.
    options: dict[str, Any] = {"concurrency": 3, "shutdown_grace": 1.0}
    with Running(kind, server.target, {"payments": handler}, **options) as running:
        assert _until(lambda: len(started) == 2)
        assert _until(lambda: len(server.service.calls("PollTasks")) == 2)
        running.stop()
        running.join()
        polls_at_stop = len(server.service.calls("PollTasks"))
    assert quick in tasks.completed
    release = tasks.failed[slow]
    assert release.error.type == "WORKER_SHUTDOWN"
    assert release.HasField("retry_delay") and release.retry_delay.ToNanoseconds() == 0
    assert not release.non_retryable
    assert release.lease_token == f"{slow}@1"
    assert _until(lambda: slow_saw_cancel == [True])
    assert tasks.wait_until(lambda: tasks.abandoned_polls == 1)
    assert len(server.service.calls("PollTasks")) == polls_at_stop == 2


@pytest.mark.parametrize("kind", KINDS)
def test_unavailable_server_means_backoff_and_retries(
    server: FakeServer, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="statewright.worker")
    tasks = FakeTasks(server.service)
    name = tasks.add("t1", {"order": "o-1", "amount": 10})
    # More failures than gRPC's own retries (3 for a poll, 5 for a completion) absorb,
    # so the worker itself must back off and try again.
    server.service.behaviours["PollTasks"] = _failing(tasks.poll, 4)
    server.service.behaviours["CompleteTask"] = _failing(tasks.complete, 6)
    with Running(kind, server.target, {"payments": charge}) as running:
        assert tasks.wait_until(lambda: name in tasks.completed, 30)
        running.stop()
        running.join()
    completions = server.service.calls("CompleteTask")
    assert len(completions) > 5
    assert {(r.request_id, r.lease_token) for r in completions} == {
        (f"{name}#1#complete", f"{name}@1")
    }
    assert len(server.service.calls("PollTasks")) > 3
    messages = [r.getMessage() for r in caplog.records]
    assert any("polling payments failed, backing off" in m for m in messages)
    assert any("polling payments works again" in m for m in messages)
    assert any(f"completion of {name} failed, retrying" in m for m in messages)


@pytest.mark.parametrize("kind", KINDS)
def test_no_server_at_all_means_backing_off_until_stopped(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="statewright.worker")

    def failures() -> int:
        return sum("polling payments failed" in r.getMessage() for r in list(caplog.records))

    with Running(kind, "127.0.0.1:1", {"payments": charge}) as running:
        assert _until(lambda: failures() >= 3, 30)
        running.stop()
        running.join()
    levels = [r.levelno for r in caplog.records if "polling payments failed" in r.getMessage()]
    assert levels[0] == logging.WARNING  # once, then quietly while it keeps failing
    assert set(levels[1:]) == {logging.DEBUG}


@pytest.mark.parametrize("kind", KINDS)
def test_lease_superseded_on_completion_is_dropped(server: FakeServer, kind: str) -> None:
    tasks = FakeTasks(server.service)
    lost = tasks.add("t1", {"order": "o-1", "amount": 10})

    def handler(task: RunningTask) -> dict[str, object]:
        if task.name == lost:
            tasks.supersede(task.name)  # the lease expired and went elsewhere meanwhile
        return charge(task)

    with Running(kind, server.target, {"payments": handler}, concurrency=1) as running:
        assert _until(lambda: len(server.service.calls("CompleteTask")) == 1)
        after = tasks.add("t2", {"order": "o-2", "amount": 10})
        assert tasks.wait_until(lambda: after in tasks.completed)
        running.stop()
        running.join()
    assert [r.name for r in server.service.calls("CompleteTask")] == [lost, after]
    assert lost not in tasks.completed
    assert not server.service.calls("FailTask")


@pytest.mark.parametrize("kind", KINDS)
def test_invalid_argument_is_logged_not_retried(
    server: FakeServer, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="statewright.worker")
    tasks = FakeTasks(server.service)
    name = tasks.add("t1", {"order": "o-1", "amount": -5})
    server.service.behaviours["FailTask"] = _failing(
        tasks.fail, 1, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"
    )
    with Running(kind, server.target, {"payments": charge}) as running:
        assert _until(lambda: len(server.service.calls("FailTask")) == 1)
        running.stop()
        running.join()
    assert len(server.service.calls("FailTask")) == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any(f"failure of {name} failed, giving up" in r.getMessage() for r in errors)


@pytest.mark.parametrize("kind", KINDS)
def test_a_fault_in_the_worker_stops_it_and_is_raised_by_run(
    server: FakeServer, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = FakeTasks(server.service)
    tasks.add("t1", {"order": "o-1", "amount": 10})

    def broken(now: float, expires: object) -> float:
        raise RuntimeError("a bug in the worker")

    monkeypatch.setattr(_worker, "next_heartbeat", broken)
    running = Running(kind, server.target, {"payments": charge})
    with running, pytest.raises(RuntimeError, match="a bug in the worker"):
        running.join()
    assert running.stopping


# --- the asyncio worker's own ways --------------------------------------------------------


def test_a_coroutine_handler_is_cancelled_when_its_task_is(server: FakeServer) -> None:
    tasks = FakeTasks(server.service, first_lease=0.6)
    name = tasks.add("t1", {"order": "o-1", "amount": 10})
    tasks.cancel(name)
    seen: list[str] = []

    async def handler(task: RunningTask) -> dict[str, object]:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled" if task.cancelled.is_set() else "cancelled, no flag")
            raise
        return {}

    with Running("async", server.target, {"payments": handler}, native=True) as running:
        assert _until(lambda: bool(seen))
        running.stop()
        running.join()
    assert seen == ["cancelled"]
    assert not server.service.calls("CompleteTask") and not server.service.calls("FailTask")


def test_a_plain_function_on_the_async_worker_runs_in_a_thread(server: FakeServer) -> None:
    tasks = FakeTasks(server.service)
    name = tasks.add("t1", {"order": "o-1", "amount": 10})
    threads: list[str] = []

    def handler(task: RunningTask) -> dict[str, object]:
        threads.append(threading.current_thread().name)
        return charge(task)

    with Running("async", server.target, {"payments": handler}, native=True) as running:
        assert tasks.wait_until(lambda: name in tasks.completed)
        running.stop()
        running.join()
    assert threads[0].startswith("statewright-task")


async def test_cancelling_async_run_releases_running_tasks(server: FakeServer) -> None:
    tasks = FakeTasks(server.service)
    name = tasks.add("t1", {"order": "o-1", "amount": 10})
    started = asyncio.Event()

    async def handler(task: RunningTask) -> dict[str, object]:
        started.set()
        await asyncio.sleep(30)
        return {}

    async with AsyncClient(server.target) as client:
        worker = AsyncWorker(client, shutdown_grace=30)
        worker.register("payments", handler)
        run = asyncio.create_task(worker.run(handle_signals=False))
        await asyncio.wait_for(started.wait(), 15)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, 15)
    assert tasks.failed[name].error.type == "WORKER_SHUTDOWN"


# --- signals, and the README's examples -----------------------------------------------------

README = Path(__file__).resolve().parents[3] / "clients" / "python" / "README.md"


def _worker_examples() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    return [block for block in blocks if "Worker(" in block]


def _start_script(script: str, target: str) -> subprocess.Popen[str]:
    env = {**os.environ, "STATEWRIGHT_TARGET": target}
    return subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize(("example", "stop_with"), [(0, signal.SIGINT), (1, signal.SIGTERM)])
def test_the_readme_workers_run_until_interrupted(
    server: FakeServer, example: int, stop_with: signal.Signals
) -> None:
    blocks = _worker_examples()
    assert len(blocks) == 2  # the blocking Worker, then the AsyncWorker
    tasks = FakeTasks(server.service)
    ok = tasks.add("t1", {"order": "o-1", "amount": 10})
    declined = tasks.add("t2", {"order": "o-2", "amount": 5000})
    process = _start_script(blocks[example], server.target)
    try:
        assert tasks.wait_until(lambda: ok in tasks.completed and declined in tasks.failed, 30)
        # The signal must find the next long poll waiting: on a busy machine the handlers can
        # report before the worker has sent it, and a worker stopped between polls abandons none.
        assert _until(lambda: len(server.service.calls("PollTasks")) == 2, 30)
        process.send_signal(stop_with)
    finally:
        _, err = _finish(process)
    assert process.returncode == 0, err
    assert dict(tasks.completed[ok].result.fields)["id"].string_value == "ch-o-1"
    card = tasks.failed[declined]
    assert (card.error.type, card.non_retryable) == ("CARD_DECLINED", True)
    assert tasks.wait_until(lambda: tasks.abandoned_polls == 1)  # it stopped polling at once


HOLDING = {
    "sync": """
from statewright import Client, Worker

def hold(task):
    task.cancelled.wait(60)
    return {}

with Client() as client:
    worker = Worker(client, shutdown_grace=60)
    worker.register("payments", hold)
    worker.run()
print("stopped")
""",
    "async": """
import asyncio
from statewright.aio import AsyncClient, AsyncWorker

async def hold(task):
    await asyncio.sleep(60)
    return {}

async def main():
    async with AsyncClient() as client:
        worker = AsyncWorker(client, shutdown_grace=60)
        worker.register("payments", hold)
        await worker.run()

asyncio.run(main())
print("stopped")
""",
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_signal_ends_the_grace_period(server: FakeServer, kind: str) -> None:
    tasks = FakeTasks(server.service)
    name = tasks.add("t1", {"order": "o-1"})
    process = _start_script(HOLDING[kind], server.target)
    try:
        assert tasks.wait_until(lambda: name in tasks.leases and len(tasks.ready) == 0, 30)
        assert _until(lambda: len(server.service.calls("PollTasks")) == 2, 30)
        process.send_signal(signal.SIGTERM)
        # The first signal was handled once the waiting poll is abandoned; the handler still
        # has 60 s of grace, which the second signal ends.
        assert tasks.wait_until(lambda: tasks.abandoned_polls == 1, 30)
        process.send_signal(signal.SIGINT)
        assert tasks.wait_until(lambda: name in tasks.failed, 30)
    finally:
        out, err = _finish(process)
    assert process.returncode == 0, err
    assert out.strip() == "stopped"
    assert tasks.failed[name].error.type == "WORKER_SHUTDOWN"


# --- construction and the shared decisions ---------------------------------------------------


def test_register_checks_queues_and_handlers(server: FakeServer) -> None:
    async def coroutine(task: RunningTask) -> None:
        return None

    with Client(server.target) as client:
        worker = Worker(client)
        worker.register("payments", charge)
        with pytest.raises(ValueError, match="already"):
            worker.register("payments", charge)
        with pytest.raises(ValueError, match="queue"):
            worker.register("Payments!", charge)
        with pytest.raises(TypeError, match="AsyncWorker"):
            worker.register("mail", coroutine)
        assert worker.queues == ("payments",)
        with pytest.raises(ValueError, match="concurrency"):
            Worker(client, concurrency=0)
        with pytest.raises(ValueError, match="poll_wait"):
            Worker(client, poll_wait=61)
        with pytest.raises(RuntimeError, match="handler"):
            Worker(client).run(handle_signals=False)


def test_running_task_records_only_json_details() -> None:
    from statewright.models import Task
    from statewright.v1 import task_pb2

    task = RunningTask(Task.from_proto(task_pb2.Task(name="workflows/w/tasks/t", attempt=2)))
    assert task.details() is None
    task.heartbeat({"done": 1})
    task.heartbeat({"done": 2})
    assert task.details() == {"done": 2}
    with pytest.raises(TypeError):
        task.heartbeat({"when": object()})
    assert task.details() == {"done": 2}
    assert (task.name, task.attempt, task.input) == ("workflows/w/tasks/t", 2, {})
    assert not task.cancelled.is_set()


def test_a_poll_asks_for_the_free_slots_shared_with_idle_pollers() -> None:
    assert _worker.poll_share(free=8, idle_pollers=1) == 8
    assert _worker.poll_share(free=8, idle_pollers=2) == 4
    assert _worker.poll_share(free=1, idle_pollers=3) == 1
    assert _worker.poll_share(free=500, idle_pollers=1) == 100


def test_heartbeats_come_at_a_third_of_the_lease_left() -> None:
    in_30s = datetime.now(UTC) + timedelta(seconds=30)
    assert 9.5 < _worker.next_heartbeat(100.0, in_30s) - 100.0 <= 10.0
    expired = datetime.now(UTC) - timedelta(seconds=5)
    assert _worker.next_heartbeat(100.0, expired) == 100.0 + _worker.MIN_HEARTBEAT_INTERVAL
    assert _worker.next_heartbeat(100.0, None) == 100.0 + _worker.MIN_HEARTBEAT_INTERVAL


@pytest.mark.parametrize(
    ("code", "reason", "verdict"),
    [
        (grpc.StatusCode.FAILED_PRECONDITION, "LEASE_SUPERSEDED", _worker.Verdict.DROP),
        (grpc.StatusCode.FAILED_PRECONDITION, "TASK_CANCELLED", _worker.Verdict.DROP),
        (grpc.StatusCode.NOT_FOUND, "TASK_NOT_FOUND", _worker.Verdict.DROP),
        (grpc.StatusCode.UNAVAILABLE, "", _worker.Verdict.RETRY),
        (grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN", _worker.Verdict.RETRY),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "", _worker.Verdict.RETRY),
        (grpc.StatusCode.ABORTED, "WORKFLOW_BUSY", _worker.Verdict.RETRY),
        (grpc.StatusCode.INTERNAL, "", _worker.Verdict.RETRY),
        (grpc.StatusCode.UNKNOWN, "OUTCOME_UNKNOWN", _worker.Verdict.RETRY),
        (grpc.StatusCode.UNKNOWN, "STORE_ERROR", _worker.Verdict.GIVE_UP),
        (grpc.StatusCode.INTERNAL, "STORAGE_CORRUPT", _worker.Verdict.GIVE_UP),
        (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", _worker.Verdict.GIVE_UP),
        (grpc.StatusCode.FAILED_PRECONDITION, "NOT_RUNNING", _worker.Verdict.GIVE_UP),
    ],
)
def test_call_failures_are_retried_dropped_or_given_up(
    code: grpc.StatusCode, reason: str, verdict: _worker.Verdict
) -> None:
    info = error_details_pb2.ErrorInfo(reason=reason, domain="statewright.dev") if reason else None
    assert _worker.verdict(make_error(code, "m", info)) is verdict


def test_exceptions_become_failures() -> None:
    own = TaskFailure("CARD_DECLINED", "declined", non_retryable=True, retry_delay=1.0)
    assert _worker.failure_of(own) is own
    other = _worker.failure_of(KeyError("order"))
    assert (other.type, other.message, other.non_retryable) == ("KeyError", "'order'", False)
    assert other.retry_delay is None and other.details is None
    assert _worker.failure_of(RuntimeError()).message == "RuntimeError"
    with pytest.raises(ValueError, match="type"):
        TaskFailure("")


def test_the_backoff_doubles_from_a_tenth_to_five_seconds() -> None:
    policy = _worker.backoff()
    delays = [_worker.pause(policy) for _ in range(12)]
    assert 0.05 <= delays[0] <= 0.1
    assert all(2.5 <= d <= 5.0 for d in delays[-3:])
    steps = [0.1 * 2**i for i in range(12)]
    assert all(min(s, 5.0) / 2 <= d <= min(s, 5.0) for s, d in zip(steps, delays, strict=True))


def test_the_backoff_waits_at_least_the_servers_retry_delay() -> None:
    policy = _worker.backoff()
    limited = make_error(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "m",
        error_details_pb2.ErrorInfo(reason="RATE_LIMITED", domain="statewright.dev"),
        retry_delay=7.5,
    )
    assert _worker.pause(policy, limited) == 7.5
    for _ in range(10):
        _worker.pause(policy)
    # Past a short delay the backoff's own (by now long) step wins.
    limited.retry_delay = 0.01
    assert 2.5 <= _worker.pause(policy, limited) <= 5.0
    plain = make_error(grpc.StatusCode.UNAVAILABLE, "m", None)
    assert _worker.pause(policy, plain) <= 5.0


@pytest.mark.parametrize("kind", KINDS)
def test_a_rate_limited_poll_is_retried_after_the_servers_delay(
    kind: str, server: FakeServer
) -> None:
    tasks = FakeTasks(server.service)
    name = tasks.add("t1", {"order": "o-1", "amount": 10})
    refused = itertools.count()
    poll = server.service.behaviours["PollTasks"]

    def limited(request: Any, context: grpc.ServicerContext) -> Any:
        if next(refused) == 0:
            abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED", retry_delay=0.05)
        return poll(request, context)

    server.service.behaviours["PollTasks"] = limited
    with Running(kind, server.target, {"payments": charge}) as running:
        assert tasks.wait_until(lambda: name in tasks.completed)
        running.stop()
        running.join()
    assert len(server.service.calls("PollTasks")) >= 2
