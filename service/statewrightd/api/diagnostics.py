"""The runtime's diagnostics turned into diagnostics messages."""

from __future__ import annotations

import math
import sys

import grpc
from google.protobuf import duration_pb2
from google.protobuf.timestamp_pb2 import Timestamp
from statewright.v1 import diagnostics_pb2
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd import __version__
from statewrightd.api.convert import timers_pb, transitions_pb
from statewrightd.api.status import to_status_proto
from statewrightd.api.validation import workflow_name
from statewrightd.app.diagnostics import InstanceDiagnostics, RuntimeDiagnostics
from statewrightd.app.wiring import Application
from statewrightd.engine.admission import AdmissionState
from statewrightd.engine.retention import RetentionStats
from statewrightd.engine.tasks import QueueView
from statewrightd.engine.timers import TimerStats
from statewrightd.errors import StatewrightError

_ADMISSION = {
    None: diagnostics_pb2.ADMISSION_STATE_IDLE,
    AdmissionState.ADMITTING: diagnostics_pb2.ADMISSION_STATE_ADMITTING,
    AdmissionState.EXECUTING: diagnostics_pb2.ADMISSION_STATE_EXECUTING,
    AdmissionState.PERSISTING: diagnostics_pb2.ADMISSION_STATE_PERSISTING,
    AdmissionState.RECOVERY_REQUIRED: diagnostics_pb2.ADMISSION_STATE_RECOVERY_REQUIRED,
}


def _duration(seconds: float) -> duration_pb2.Duration:
    message = duration_pb2.Duration()
    message.FromNanoseconds(int(seconds * 1e9))
    return message


def _wall(seconds: float) -> Timestamp:
    message = Timestamp()
    message.FromNanoseconds(int(seconds * 1e9))
    return message


def diagnostics_response(d: RuntimeDiagnostics) -> pb.GetDiagnosticsResponse:
    loop, counts, writer = d.loop, d.counts, d.writer
    phase = diagnostics_pb2.EventLoopPhase.Value(f"EVENT_LOOP_PHASE_{loop.phase.name}")
    return pb.GetDiagnosticsResponse(
        event_loop=diagnostics_pb2.EventLoopDiagnostics(
            phase=phase,
            queue_depth=loop.queue_depth,
            max_queue_depth=loop.max_queue_depth,
            lag_last=_duration(loop.lag_last),
            lag_average=_duration(loop.lag_average),
            lag_max=_duration(loop.lag_max),
            dispatch_count=loop.dispatch_count,
            slow_dispatch_count=loop.slow_dispatch_count,
            slow_dispatch_threshold=_duration(loop.slow_dispatch_threshold),
            backlog_warning_threshold=loop.backlog_warning_threshold,
            backlog_warning_count=loop.backlog_warning_count,
            lag_warning_threshold=_duration(loop.lag_warning_threshold),
            lagged_dispatch_count=loop.lagged_dispatch_count,
        ),
        admissions=diagnostics_pb2.AdmissionDiagnostics(
            admitting=counts.admissions.get(AdmissionState.ADMITTING, 0),
            executing=counts.admissions.get(AdmissionState.EXECUTING, 0),
            persisting=counts.admissions.get(AdmissionState.PERSISTING, 0),
            recovery_required=counts.admissions.get(AdmissionState.RECOVERY_REQUIRED, 0),
            cached_sessions=counts.cached_sessions,
            cached_context_bytes=counts.cached_context_bytes,
        ),
        persistence=diagnostics_pb2.PersistenceDiagnostics(
            backend=d.backend,
            queue_depth=writer.queue_depth,
            queue_capacity=d.writer_capacity,
            batches=writer.batches,
            mean_batch_size=writer.mean_batch_size,
            save_latency_p50=_duration(writer.latency_p50_ms / 1000),
            save_latency_p99=_duration(writer.latency_p99_ms / 1000),
            conflicts=writer.conflicts,
            unknown_outcomes=writer.unknown_outcomes,
            saves=writer.saves,
        ),
        watchers=diagnostics_pb2.WatcherDiagnostics(
            active_watchers=d.watchers, catch_ups=d.watch_catch_ups
        ),
        definitions=d.definitions,
        build=diagnostics_pb2.BuildInfo(
            version=__version__,
            python_version=sys.version.split()[0],
            grpc_version=grpc.__version__,
        ),
        uptime=_duration(d.uptime),
        timers=_timers(d.timers),
        task_queues=[_queue(view) for view in d.task_queues],
        retention=_retention(d.retention),
    )


def _retention(stats: RetentionStats) -> diagnostics_pb2.RetentionDiagnostics:
    rows = stats.rows_purged
    message = diagnostics_pb2.RetentionDiagnostics(
        request_window=_duration(stats.request_window),
        instances_purged=rows.get("workflow_instances", 0),
        history_purged=rows.get("workflow_history", 0),
        requests_purged=rows.get("workflow_requests", 0),
        timers_and_tasks_purged=rows.get("workflow_timers", 0) + rows.get("workflow_tasks", 0),
        overdue_instances=stats.overdue_instances,
        overdue_requests=stats.overdue_requests,
    )
    if not math.isinf(stats.retention):
        message.retention.CopyFrom(_duration(stats.retention))
    if stats.last_run is not None:
        message.last_run_time.FromDatetime(stats.last_run)
    counted = stats.counted_time
    if counted is not None:
        message.counted_time.FromDatetime(counted)
        if stats.oldest_instance_due is not None:
            age = (counted - stats.oldest_instance_due).total_seconds()
            message.oldest_overdue_instance_age.CopyFrom(_duration(max(0.0, age)))
        if stats.oldest_request_time is not None:
            age = (counted - stats.oldest_request_time).total_seconds() - stats.request_window
            message.oldest_overdue_request_age.CopyFrom(_duration(max(0.0, age)))
    return message


def _queue(view: QueueView) -> diagnostics_pb2.TaskQueueDiagnostics:
    message = diagnostics_pb2.TaskQueueDiagnostics(
        queue=view.queue, pollers=list(view.pollers), stalled=view.stalled
    )
    counts = view.counts
    if counts is not None:
        message.backlog = counts.ready
        message.leased = counts.leased
    if view.oldest_age is not None:
        message.oldest_scheduled_age.CopyFrom(_duration(view.oldest_age))
    if view.last_poll is not None:
        message.last_poll_time.CopyFrom(_wall(view.last_poll))
    return message


def _timers(stats: TimerStats) -> diagnostics_pb2.TimerDiagnostics:
    message = diagnostics_pb2.TimerDiagnostics(
        armed=stats.armed,
        overdue=stats.overdue,
        fired=stats.fired,
        consumed=stats.consumed,
        fire_lag_p50=_duration(stats.lag_p50),
        fire_lag_p99=_duration(stats.lag_p99),
    )
    if stats.counted_time is not None:
        message.counted_time.FromDatetime(stats.counted_time)
    return message


def workflow_diagnostics_response(
    name: str, found: InstanceDiagnostics
) -> pb.GetWorkflowDiagnosticsResponse:
    info = found.info
    diagnostics = diagnostics_pb2.WorkflowDiagnostics(
        name=name,
        admission_state=_ADMISSION[info.admission],
        cached=info.cached,
        revision=found.revision,
        recent_transitions=[
            t for taken, actor in found.recent for t in transitions_pb([taken], actor)
        ],
        timers=timers_pb(found.timers),
    )
    if info.recovery is not None:
        recovery = info.recovery
        error = recovery.last_error
        diagnostics.recovery.CopyFrom(
            diagnostics_pb2.RecoveryInfo(
                attempts=recovery.attempts,
                next_attempt_time=_wall(recovery.next_attempt),
                since_time=_wall(recovery.since),
                last_error=to_status_proto(error) if isinstance(error, StatewrightError) else None,
            )
        )
    return pb.GetWorkflowDiagnosticsResponse(diagnostics=diagnostics)


async def workflow_diagnostics(app: Application, name: str) -> pb.GetWorkflowDiagnosticsResponse:
    """GetWorkflowDiagnostics of the instance named ``name`` (checked), for the gRPC API and
    the console alike."""
    found = await app.diagnostics.instance(workflow_name(name))
    return workflow_diagnostics_response(name, found)
