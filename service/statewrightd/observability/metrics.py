"""Prometheus metrics: RPCs, steps, storage batches, the EventLoop and watchers.

Counters and histograms on hot paths are updated where the event happens (RPC observer,
step and batch hooks). Values the runtime already keeps (EventLoop lag and queue depth,
the writer's queue) are read when Prometheus scrapes, so the EventLoop pays nothing for
them. Every ``Metrics`` has its own registry: two servers in one process (tests) never
share or clash over series.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from statewrightd.config import parse_listen
from statewrightd.engine.event_loop import EventLoopMetrics
from statewrightd.engine.retention import RetentionStats
from statewrightd.engine.timers import TimerStats
from statewrightd.store.flow import QueueConfig
from statewrightd.store.records import QueueCounts
from statewrightd.store.writer import WriterStats

_log = logging.getLogger(__name__)

# RPC latencies span sub-millisecond reads to minutes-long watch streams.
RPC_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
)
STEP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
TIMER_LAG_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Powers of two up to the writer's largest batch (256 by default).
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class Metrics:
    """The server's metric families, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        rpc = ["grpc_service", "grpc_method", "grpc_type"]
        # Names follow the conventional gRPC server metrics so stock dashboards apply.
        self.rpc_started = Counter(
            "grpc_server_started_total", "RPCs started on the server.", rpc, registry=r
        )
        self.rpc_handled = Counter(
            "grpc_server_handled_total",
            "RPCs completed on the server, by status code (errors: any code but OK).",
            [*rpc, "grpc_code"],
            registry=r,
        )
        self.rpc_seconds = Histogram(
            "grpc_server_handling_seconds",
            "Time from the start of an RPC to its status (streams: the whole stream).",
            rpc,
            buckets=RPC_BUCKETS,
            registry=r,
        )
        self.watchers = Gauge(
            "statewright_watchers", "Open WatchWorkflow streams on this server.", registry=r
        )
        self.step_seconds = Histogram(
            "statewright_step_duration_seconds",
            "Time from a step command's arrival to its answer, including its save.",
            ["kind", "outcome"],
            buckets=STEP_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "statewright_writer_batch_size",
            "Saves per group-commit transaction.",
            buckets=BATCH_SIZE_BUCKETS,
            registry=r,
        )
        self.batch_seconds = Histogram(
            "statewright_writer_batch_duration_seconds",
            "Time one group-commit transaction took.",
            buckets=STEP_BUCKETS,
            registry=r,
        )
        self.saves = Counter(
            "statewright_writer_saves_total",
            "Saves by outcome: saved, conflict, unknown (commit outcome lost), failed.",
            ["outcome"],
            registry=r,
        )
        self.timer_fire_lag = Histogram(
            "statewright_timer_fire_lag_seconds",
            "How long after its due time a timer fired (its step answered) on this server.",
            buckets=TIMER_LAG_BUCKETS,
            registry=r,
        )
        self.schedule_fires, self.schedule_fire_lag = _schedule_metrics(r)
        self.task_schedule_to_start = Histogram(
            "statewright_task_schedule_to_start_seconds",
            "How long a task attempt waited, ready, for a worker to lease it.",
            ["queue"],
            buckets=RPC_BUCKETS,
            registry=r,
        )
        self.task_attempts = Counter(
            "statewright_task_attempts",
            "Task attempts that ended on this server, by how: completed, failed, timed_out "
            "(the lease expired) or cancelled (the task's state was left).",
            ["queue", "outcome"],
            registry=r,
        )
        self.projection_failures = Counter(
            "statewright_search_projection_failures",
            "Search field values stored as null: the expression failed or gave another type.",
            ["definition", "field"],
            registry=r,
        )
        self.cas_conflicts = Counter(
            "statewright_cas_conflicts_total",
            "Saves refused by the compare-and-swap (another writer had moved the revision).",
            registry=r,
        )

    def watch_runtime(
        self, counters: RuntimeCounters, malformed_requests: Callable[[], int]
    ) -> None:
        """Export what the EventLoop, the writer, the door, the timer scheduler, the
        task sweeper and the retention purge already count, at scrape time."""
        self.registry.register(_RuntimeCollector(counters, malformed_requests))
        self.registry.register(_RetentionCollector(counters.retention_stats))


class RuntimeCounters(Protocol):
    """What a running server counts anyway, each read from any thread (a recent value,
    no consistent snapshot: a scrape needs no more)."""

    def loop_metrics(self) -> EventLoopMetrics: ...

    def writer_stats(self) -> WriterStats | None: ...

    def timer_stats(self) -> TimerStats: ...

    def task_counts(self) -> list[QueueCounts]: ...

    def queue_limits(self) -> list[QueueConfig]: ...

    def retention_stats(self) -> RetentionStats: ...


class _RuntimeCollector(Collector):
    def __init__(self, counters: RuntimeCounters, malformed_requests: Callable[[], int]) -> None:
        self._counters = counters
        self._malformed_requests = malformed_requests

    def describe(self) -> list[Metric]:
        # Empty: the registry must not call collect() at registration, before open().
        return []

    def collect(self) -> Iterator[Metric]:
        # Read from the scrape thread without locks: each value is a single attribute
        # read, and a scrape only needs a recent value, not a consistent snapshot.
        yield from _loop_metrics(self._counters.loop_metrics())
        yield CounterMetricFamily(
            "statewright_malformed_requests",
            "Requests whose body did not decode, answered INVALID_ARGUMENT MALFORMED_REQUEST.",
            value=self._malformed_requests(),
        )
        timers = self._counters.timer_stats()
        yield GaugeMetricFamily(
            "statewright_timers_armed",
            "Timers armed in the database (every replica's), counted every few seconds.",
            value=timers.armed,
        )
        yield GaugeMetricFamily(
            "statewright_timers_overdue",
            "Armed timers whose due time has passed, counted with statewright_timers_armed.",
            value=timers.overdue,
        )
        scheduled = GaugeMetricFamily(
            "statewright_tasks_scheduled",
            "Tasks ready and waiting for a worker, per queue (every replica's, counted every "
            "few seconds).",
            labels=["queue"],
        )
        leased = GaugeMetricFamily(
            "statewright_tasks_leased",
            "Tasks leased to a worker, per queue, counted with statewright_tasks_scheduled.",
            labels=["queue"],
        )
        for queue in self._counters.task_counts():
            scheduled.add_metric([queue.queue], queue.ready)
            leased.add_metric([queue.queue], queue.leased)
        yield scheduled
        yield leased
        yield _queue_limits(self._counters.queue_limits())
        writer = self._counters.writer_stats()
        if writer is not None:
            yield GaugeMetricFamily(
                "statewright_writer_queue_depth",
                "Saves waiting for the group-commit writer.",
                value=writer.queue_depth,
            )


def _loop_metrics(loop: EventLoopMetrics) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "statewright_eventloop_queue_depth",
        "Commands waiting for the EventLoop thread.",
        value=loop.queue_depth,
    )
    yield GaugeMetricFamily(
        "statewright_eventloop_lag_seconds",
        "Queueing delay of the most recently dispatched EventLoop command.",
        value=loop.lag_last,
    )
    yield GaugeMetricFamily(
        "statewright_eventloop_lag_max_seconds",
        "Largest queueing delay of an EventLoop command since the server started.",
        value=loop.lag_max,
    )
    yield GaugeMetricFamily(
        "statewright_eventloop_stalled_seconds",
        "Seconds since the EventLoop last finished a command or woke up idle "
        "(liveness turns NOT_SERVING past --liveness-stall).",
        value=max(0.0, time.monotonic() - loop.last_progress),
    )
    yield CounterMetricFamily(
        "statewright_eventloop_dispatches",
        "Commands the EventLoop has run.",
        value=loop.dispatch_count,
    )
    yield CounterMetricFamily(
        "statewright_eventloop_slow_dispatches",
        "EventLoop commands that ran longer than the slow-dispatch threshold.",
        value=loop.slow_dispatch_count,
    )
    yield CounterMetricFamily(
        "statewright_eventloop_backlogs",
        "EventLoop batches that began with at least the backlog-warning threshold of "
        "commands queued (--eventloop-backlog-warning).",
        value=loop.backlog_warning_count,
    )
    yield CounterMetricFamily(
        "statewright_eventloop_lagged_dispatches",
        "EventLoop commands that waited longer than the lag-warning threshold "
        "(--eventloop-lag-warning) before they ran.",
        value=loop.lagged_dispatch_count,
    )


def _schedule_metrics(r: CollectorRegistry) -> tuple[Counter, Histogram]:
    fires = Counter(
        "statewright_schedule_fires_total",
        "Schedule fires this server acted on, by outcome: started, skipped (overlap "
        "policy), missed (older than the catch-up window), buffered, failed.",
        ["outcome"],
        registry=r,
    )
    lag = Histogram(
        "statewright_schedule_fire_lag_seconds",
        "How long after its due time (nominal time plus jitter) a scheduled fire started.",
        buckets=TIMER_LAG_BUCKETS,
        registry=r,
    )
    return fires, lag


def _queue_limits(configs: list[QueueConfig]) -> Metric:
    limit = GaugeMetricFamily(
        "statewright_queue_limit",
        "A task queue's flow-control limits (as this server last read them): max_leased, "
        "key_max_leased (tasks), rate, key_rate (tasks a second); a limit of 0 is none.",
        labels=["queue", "limit"],
    )
    for config in configs:
        for name in ("max_leased", "rate", "key_max_leased", "key_rate"):
            limit.add_metric([config.queue, name], float(getattr(config, name)))
    return limit


class _RetentionCollector(Collector):
    def __init__(self, stats: Callable[[], RetentionStats]) -> None:
        self._stats = stats

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        stats = self._stats()
        purged = CounterMetricFamily(
            "statewright_retention_purged_rows",
            "Rows this server's retention purge removed, by table (request records: expired, "
            "or removed with their instance).",
            labels=["table"],
        )
        for table, count in sorted(stats.rows_purged.items()):
            purged.add_metric([table], count)
        yield purged
        overdue = GaugeMetricFamily(
            "statewright_retention_overdue",
            "Rows past their time and not yet removed (every server's, counted every few "
            "seconds, up to 100,000): finished instances past their expire_time, request "
            "records past the request window.",
            labels=["kind"],
        )
        overdue.add_metric(["instance"], stats.overdue_instances)
        overdue.add_metric(["request"], stats.overdue_requests)
        yield overdue
        oldest = GaugeMetricFamily(
            "statewright_retention_oldest_overdue_seconds",
            "How long ago the oldest row not yet removed was due (0: nothing overdue).",
            labels=["kind"],
        )
        counted = stats.counted_time
        instance_age = request_age = 0.0
        if counted is not None and stats.oldest_instance_due is not None:
            instance_age = max(0.0, (counted - stats.oldest_instance_due).total_seconds())
        if counted is not None and stats.oldest_request_time is not None:
            age = (counted - stats.oldest_request_time).total_seconds() - stats.request_window
            request_age = max(0.0, age)
        oldest.add_metric(["instance"], instance_age)
        oldest.add_metric(["request"], request_age)
        yield oldest
        if stats.last_run is not None:
            yield GaugeMetricFamily(
                "statewright_retention_last_run_timestamp_seconds",
                "When this server's retention purge last ran (Unix time).",
                value=stats.last_run.timestamp(),
            )


@dataclass
class MetricsEndpoint:
    """The HTTP server that Prometheus scrapes."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def serve_metrics(metrics: Metrics, listen: str) -> MetricsEndpoint:
    """Serve ``/metrics`` on ``listen`` (HOST:PORT; port 0 picks a free one)."""
    host, port = parse_listen(listen)
    server, thread = start_http_server(port, addr=host, registry=metrics.registry)
    return MetricsEndpoint(server, thread)
