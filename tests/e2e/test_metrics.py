"""Prometheus metrics and JSON logs of real server processes.

The metrics are scraped over HTTP from ``--metrics-listen 127.0.0.1:0`` (the port is read
from the server's log) and parsed with prometheus-client's own text parser.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.parser import text_string_to_metric_families
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import COMPLETED, WAITING, Client, expect_error, uid
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

_METRICS_LINE = re.compile(r"metrics on http://([^/\s]+)/metrics")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def metrics_url(server: ServerProcess) -> str:
    for line in server.lines:
        match = _METRICS_LINE.search(line)
        if match:
            return f"http://{match.group(1)}/metrics"
    raise AssertionError("no metrics endpoint in the log:\n" + server.log())


def scrape(url: str) -> Samples:
    assert url.startswith("http://127.0.0.1:"), url  # loopback only
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    matches = [v for (n, ls), v in samples.items() if n == name and wanted <= ls]
    assert matches, f"no series {name}{labels}"
    return sum(matches)


def rpc(method: str) -> dict[str, str]:
    return {"grpc_service": "statewright.v1.WorkflowService", "grpc_method": method}


def test_rpc_step_writer_loop_watcher_and_conflict_metrics(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions")
    metrics = ["--metrics-listen", "127.0.0.1:0"]
    with (
        running_server(url, definitions, cwd=tmp_path, extra_args=metrics) as a,
        running_server(url, definitions, cwd=tmp_path, extra_args=metrics) as b,
        Client(a.target) as on_a,
        Client(b.target) as on_b,
    ):
        ids = [uid("metrics") for _ in range(3)]
        for workflow_id in ids:
            assert on_a.start("mail-approval", workflow_id=workflow_id).workflow.status == WAITING
        expect_error(lambda: on_a.get("absent"), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")

        # An open watch stream is a live watcher until it ends.
        watch = on_a.stub.WatchWorkflow(pb.WatchWorkflowRequest(name=f"workflows/{ids[0]}"))
        assert next(watch).workflow.revision == 1
        assert wait_until(lambda: value(scrape(metrics_url(a)), "statewright_watchers") == 1, 10)

        # B moves ids[1] on while A still caches revision 1: A's save of the same
        # resume loses the compare-and-swap, A reloads, and the resume is refused.
        assert on_b.resume(ids[1], "approve").workflow.status == COMPLETED
        expect_error(
            lambda: on_a.resume(ids[1], "approve"),
            grpc.StatusCode.FAILED_PRECONDITION,
            "NOT_WAITING",
        )
        assert on_a.resume(ids[0], "approve").workflow.status == COMPLETED
        assert [m.workflow.revision for m in watch] == [2]  # the stream ends at the terminal

        samples = scrape(metrics_url(a))
        assert value(samples, "statewright_watchers") == 0
        assert value(samples, "grpc_server_started_total", **rpc("StartWorkflow")) == 3
        assert value(samples, "grpc_server_handled_total", **rpc("StartWorkflow"), grpc_code="OK")
        assert value(samples, "grpc_server_handling_seconds_count", **rpc("StartWorkflow")) == 3
        assert (
            value(samples, "grpc_server_handled_total", **rpc("GetWorkflow"), grpc_code="NOT_FOUND")
            == 1
        )
        assert (
            value(
                samples,
                "grpc_server_handled_total",
                **rpc("ResumeWorkflow"),
                grpc_code="FAILED_PRECONDITION",
            )
            == 1
        )
        assert value(samples, "grpc_server_handled_total", **rpc("WatchWorkflow")) == 1
        assert value(samples, "statewright_step_duration_seconds_count", kind="start") == 3
        assert value(samples, "statewright_step_duration_seconds_count", kind="resume") == 2
        assert value(samples, "statewright_cas_conflicts_total") == 1
        # 3 starts and 1 resume saved (the conflicting save does not count as saved).
        assert value(samples, "statewright_writer_saves_total", outcome="saved") == 4
        assert value(samples, "statewright_writer_saves_total", outcome="conflict") == 1
        batches = value(samples, "statewright_writer_batch_size_count")
        assert 1 <= batches <= 5
        assert value(samples, "statewright_writer_batch_size_sum") == 5
        assert value(samples, "statewright_eventloop_dispatches_total") > 0
        for gauge in (
            "statewright_eventloop_queue_depth",
            "statewright_eventloop_lag_seconds",
            "statewright_eventloop_lag_max_seconds",
            "statewright_eventloop_stalled_seconds",
            "statewright_writer_queue_depth",
        ):
            assert value(samples, gauge) >= 0

        on_b_samples = scrape(metrics_url(b))
        assert value(on_b_samples, "statewright_cas_conflicts_total") == 0
        assert value(on_b_samples, "grpc_server_started_total", **rpc("ResumeWorkflow")) == 1


def test_json_logs_carry_the_workflow_id(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'statewright.db'}"
    definitions = definitions_dir(tmp_path / "definitions")
    args = ["--log-format", "json", "--log-level", "DEBUG"]
    with running_server(database, definitions, cwd=tmp_path, extra_args=args) as server:
        with Client(server.target) as client:
            workflow_id = uid("logged")
            client.start("mail-approval", workflow_id=workflow_id)
            client.resume(workflow_id, "approve")
        server.stop(timeout=15)
    entries = []
    for line in server.lines:
        entry = json.loads(line)  # every line is one JSON object
        assert {"time", "level", "logger", "message"} <= set(entry), line
        entries.append(entry)
    assert any("serving on" in e["message"] for e in entries)
    about = [e for e in entries if workflow_id in e["message"]]
    assert len(about) >= 2, entries  # the start and the resume step
    for entry in about:
        assert entry["workflow_id"] == workflow_id, entry


def test_malformed_requests_are_counted(tmp_path: Path) -> None:
    metrics = ["--metrics-listen", "127.0.0.1:0"]
    with (
        running_server(
            f"sqlite:///{tmp_path / 'm.db'}", None, cwd=tmp_path, extra_args=metrics
        ) as server,
        server.channel() as channel,
    ):
        call: Any = channel.unary_unary("/statewright.v1.WorkflowService/GetWorkflow")
        for _ in range(3):
            try:
                call(b"\xff\xff\xff\xff", timeout=5)
            except grpc.RpcError as err:
                assert err.code() is grpc.StatusCode.INVALID_ARGUMENT
        samples = scrape(metrics_url(server))
        assert value(samples, "statewright_malformed_requests_total") == 3

        # grpc sends an aborted call's status before the handler's interceptor counts it:
        # the caller may scrape first, so the count is awaited, not read once.
        def handled() -> float:
            return value(
                scrape(metrics_url(server)),
                "grpc_server_handled_total",
                **rpc("GetWorkflow"),
                grpc_code="INVALID_ARGUMENT",
            )

        assert wait_until(lambda: handled() == 3, 10), handled()
