"""What one definition, one step and one name may cost the server, over real gRPC.

A definition past its size limits is refused at start with the limit named; an
evaluation that would cost more than its budget is refused before it runs, and the
instance fails cleanly while every other instance is served; a value grown step after
step is stopped as soon as it passes the context limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from statewright.v1 import workflow_pb2

from statewrightd.definitions.limits import MAX_STATES
from statewrightd.engine.tasks import MAX_POLLERS
from tests.e2e.conftest import _database_for
from tests.support.api import COMPLETED, FAILED, RUNNING, Client, context_of, expect_error, uid
from tests.support.deployment import definitions_dir, run_server_to_exit, running_server
from tests.support.server import ServerProcess
from tests.support.tasks import SCHEDULED, Tasks

BUDGETS = """\
name: budgets
version: 1
recursion_limit: 100
context:
  items: {type: list, default: []}
  words: {type: list, default: []}
  text: {type: string, default: "x"}
  n: {type: int, default: 0}
states:
  idle: {}
  grow:
    entry: [{set: {text: "context.text + context.text", n: "context.n + 1"}}]
  done: {}
transitions:
  - {from: idle, on: square, to: done, guard: "context.items.map(x, x * 2).size() > 0"}
  - from: idle
    on: copy
    to: done
    set: {words: "context.items.map(x, context.text + context.text)"}
  - {from: idle, on: double, to: grow}
  - {from: idle, on: poke, to: idle, set: {n: "context.n + 1"}}
  - {from: grow, to: grow, guard: "context.n < 90"}
  - {from: grow, to: done}
"""


BULKY = """\
name: bulky
version: 1
context:
  blob: {type: string, default: ""}
states:
  working:
    task:
      queue: limits.bulky
      input: "{'a': context.blob, 'b': context.blob, 'c': context.blob, 'd': context.blob}"
  idle:
    task: {queue: limits.idle}
  done: {}
transitions:
  - {from: working, to: done}
  - {from: idle, to: done}
"""
BLOB = 60_000  # characters; a task's input holds it four times (about 240 KB)


@pytest.fixture(scope="module")
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("limits")
    url = _database_for("postgresql", request, root)
    definitions = definitions_dir(
        root / "definitions", examples=False, extra={"budgets.yaml": BUDGETS, "bulky.yaml": BULKY}
    )
    with running_server(url, definitions, cwd=root) as running:
        yield running
    assert "Traceback" not in running.log(), running.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def _reason(workflow: workflow_pb2.Workflow) -> dict[str, str]:
    """The failed step's ErrorInfo: its reason and metadata."""
    (detail,) = workflow.error.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info)
    return {"reason": info.reason, **dict(info.metadata)}


def test_the_test_suites_expensive_guard_at_the_list_limit_is_refused_before_it_runs(
    client: Client,
) -> None:
    """The hostile definition's quadratic guard over a list at the item limit (10,000)
    held the EventLoop for seconds; it is now refused from its estimate."""
    wid = uid("budget")
    client.start("hostile", workflow_id=wid, input={"big": list(range(10_000))})
    bystander = uid("bystander")
    client.start("budgets", workflow_id=bystander)
    response = client.signal(wid, "go", timeout=10)
    assert response.workflow.status == FAILED
    found = _reason(response.workflow)
    assert found["reason"] == "EVALUATION_BUDGET_EXCEEDED", found
    assert found["budget"] == "time", found
    assert found["path"] == "transitions[0].guard", found
    # Every other instance is answered as before.
    poked = client.signal(bystander, "poke")
    assert poked.accepted and poked.workflow.status == RUNNING


def test_a_map_of_a_long_list_is_refused_and_a_short_one_runs(client: Client) -> None:
    long, short = uid("long"), uid("short")
    client.start("budgets", workflow_id=long, input={"items": list(range(5_000))})
    client.start("budgets", workflow_id=short, input={"items": list(range(20))})
    refused = client.signal(long, "square").workflow
    assert _reason(refused)["reason"] == "EVALUATION_BUDGET_EXCEEDED"
    assert client.signal(short, "square").workflow.state == "done"


def test_building_more_memory_than_an_evaluation_may_is_refused(client: Client) -> None:
    wid = uid("memory")
    client.start(
        "budgets", workflow_id=wid, input={"items": list(range(300)), "text": "y" * 60_000}
    )
    found = _reason(client.signal(wid, "copy").workflow)
    assert (found["reason"], found["budget"]) == ("EVALUATION_BUDGET_EXCEEDED", "memory")


def test_a_string_doubled_in_one_step_stops_at_the_context_limit(client: Client) -> None:
    """Each automatic transition doubles the string: the step ends at the first value
    past the context limit (256 KiB), not at hundreds of megabytes."""
    wid = uid("double")
    client.start("budgets", workflow_id=wid)
    failed = client.signal(wid, "double", timeout=10).workflow
    found = _reason(failed)
    assert found["reason"] == "CONTEXT_TOO_LARGE", found
    assert found["path"] == "states.grow.entry[0].set.text", found
    assert int(found["size"]) <= 2 * int(found["limit"]), found
    assert client.get(wid).status == FAILED


def test_a_definition_past_the_state_limit_is_refused_at_start_with_the_limit(
    database_url: str, tmp_path: Path
) -> None:
    states = "\n".join(f"  s{i}: {{}}" for i in range(MAX_STATES + 1))
    huge = f"name: huge\nversion: 1\nstates:\n{states}\n"
    directory = definitions_dir(
        tmp_path / "defs", examples=False, test_definitions=False, extra={"huge.yaml": huge}
    )
    ended = run_server_to_exit(database_url, directory, cwd=tmp_path)
    assert ended.returncode != 0, ended.stdout
    assert f"more than the limit of {MAX_STATES:,}" in ended.stdout, ended.stdout
    assert "Traceback" not in ended.stdout


# -- a poll's answer is sized to its caller ------------------------------------------------


def test_a_poll_leases_only_what_its_answer_has_room_for(client: Client) -> None:
    """Twelve tasks of about 240 KB each would make an answer of almost 3 MB: a poll
    asking for 1 MiB gets four, and the others stay ready, their attempts untouched."""
    tasks = Tasks(client.channel)
    queue = "limits.bulky"
    while tasks.poll(queue, wait=0, max_tasks=100):  # what an earlier test left
        pass
    ids = [uid("bulky") for _ in range(12)]
    for wid in ids:
        client.start("bulky", workflow_id=wid, input={"blob": "z" * BLOB})

    first = tasks.poll(queue, wait=0, max_tasks=12, max_bytes=1024 * 1024)
    assert 1 <= len(first) <= 4, len(first)
    assert sum(t.ByteSize() for t in first) <= 1024 * 1024
    # Nothing it could not send was leased: every other task is as it was scheduled.
    left = [w for w in ids if w not in {t.workflow.removeprefix("workflows/") for t in first}]
    for wid in left:
        pending = client.get(wid).pending_task
        assert (pending.status, pending.attempt) == (SCHEDULED, 0), pending

    # One task alone is larger than the smallest answer a caller may ask for: left ready.
    assert tasks.poll(queue, wait=0, max_tasks=12, max_bytes=16 * 1024) == []
    assert client.get(left[0]).pending_task.attempt == 0

    # The default (3 MiB) fits under gRPC's default receive limit of 4 MiB, which this
    # channel has: the rest arrives, in answers the client can read.
    rest: list[object] = []
    while len(rest) < len(left):
        got = tasks.poll(queue, wait=0, max_tasks=12)
        assert got, f"{len(left) - len(rest)} task(s) never came"
        rest += got
    assert len(rest) == len(left)


def test_a_poll_asking_for_too_small_an_answer_is_refused(client: Client) -> None:
    info = expect_error(
        lambda: Tasks(client.channel).poll("limits.bulky", wait=0, max_bytes=1000),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FIELD",
    )
    assert info.metadata["field"] == "max_bytes", info


# -- per-name memory is bounded ---------------------------------------------------------------


def test_names_a_caller_invents_leave_nothing_behind(client: Client) -> None:
    """Polls of queues no definition names, reads and signals of instances that do not
    exist, starts of definitions that do not exist: none is remembered once answered."""
    tasks = Tasks(client.channel)
    before = client.diagnostics()
    missing = grpc.StatusCode.NOT_FOUND
    for i in range(600):
        ghost = f"ghost-{i}"
        assert tasks.poll(f"nobody.{i}", wait=0, identity=ghost) == []
        expect_error(partial(client.get, ghost), missing, "WORKFLOW_NOT_FOUND")
        expect_error(partial(client.signal, ghost, "poke"), missing, "WORKFLOW_NOT_FOUND")
        expect_error(partial(client.start, f"no-such-{i}"), missing, "DEFINITION_NOT_FOUND")
    after = client.diagnostics()
    queues = [q.queue for q in after.task_queues]
    assert not [q for q in queues if q.startswith("nobody.")], queues
    assert len(queues) <= len(before.task_queues) + 1, queues
    admissions = after.admissions
    assert admissions.cached_sessions <= before.admissions.cached_sessions
    assert (admissions.admitting, admissions.executing, admissions.persisting) == (0, 0, 0)


def test_a_queue_remembers_its_most_recent_pollers_only(client: Client) -> None:
    tasks = Tasks(client.channel)
    for i in range(MAX_POLLERS + 50):
        tasks.poll("limits.idle", wait=0, identity=f"worker-{i}")
    (queue,) = [q for q in client.diagnostics().task_queues if q.queue == "limits.idle"]
    assert len(queue.pollers) == MAX_POLLERS
    assert f"worker-{MAX_POLLERS + 49}" in queue.pollers
    assert "worker-0" not in queue.pollers


# -- what a server caches of its instances is bounded in bytes -------------------------------

CACHED = """\
name: cached
version: 1
context:
  blob: {type: string, default: ""}
  n: {type: int, default: 0}
states:
  waiting: {}
  done: {}
transitions:
  - {from: waiting, on: poke, to: waiting, set: {n: "context.n + 1"}}
  - {from: waiting, on: finish, to: done}
"""
CACHED_BLOB = 40_000
CONTEXT_JSON = len('{"blob":"","n":0}') + CACHED_BLOB  # each instance's, n < 10
CACHE_BUDGET = 200_000  # four such contexts, not five


def test_the_session_cache_holds_contexts_up_to_its_budget_and_steps_the_rest_from_the_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = _database_for("postgresql", request, tmp_path)
    definitions = definitions_dir(
        tmp_path / "definitions", examples=False, test_definitions=False, extra={"c.yaml": CACHED}
    )
    args = ["--max-cached-contexts", str(CACHE_BUDGET)]
    with (
        running_server(url, definitions, cwd=tmp_path, extra_args=args) as server,
        Client(server.target) as client,
    ):

        def cached() -> tuple[int, int]:
            admissions = client.diagnostics().admissions
            return admissions.cached_sessions, admissions.cached_context_bytes

        ids = [uid("cached") for _ in range(12)]
        for n, wid in enumerate(ids):
            client.start("cached", workflow_id=wid, input={"blob": str(n % 10) * CACHED_BLOB})
        assert cached() == (4, 4 * CONTEXT_JSON), "the four most recent fit the budget"
        # The eight let go are read from the store for their step; each step is whole.
        for n, wid in enumerate(ids):
            workflow = client.signal(wid, "poke").workflow
            assert context_of(workflow) == {"blob": str(n % 10) * CACHED_BLOB, "n": 1}
        assert cached() == (4, 4 * CONTEXT_JSON)
        for wid in ids:
            assert client.signal(wid, "finish").workflow.status == COMPLETED
        assert cached() == (0, 0), "finished instances are let go"
    assert "Traceback" not in server.log(), server.log()
