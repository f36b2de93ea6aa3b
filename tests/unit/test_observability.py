"""Observability configuration: new server flags, OTEL_* handling, JSON log lines."""

from __future__ import annotations

import argparse
import json
import logging
import sys

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.config import ConfigError, ServerConfig, add_server_arguments, config_from
from statewrightd.context import WORKFLOW_ID
from statewrightd.observability.logs import (
    GRPC_CORE_LOGGER,
    ExecuteBatchError,
    JsonFormatter,
    configure,
)
from statewrightd.observability.rpc import workflow_of
from statewrightd.observability.tracing import exporters_from_env, tracing_requested


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    return parser.parse_args(list(argv))


def test_observability_is_off_by_default() -> None:
    config = config_from(parse(), env={})
    assert (config.log_format, config.metrics_listen) == ("text", None)
    assert config.liveness_stall_seconds == ServerConfig().liveness_stall_seconds
    assert not tracing_requested({})


def test_observability_flags_and_environment() -> None:
    env = {
        "STATEWRIGHT_LOG_FORMAT": "JSON",
        "STATEWRIGHT_METRICS_LISTEN": "0.0.0.0:9464",
        "STATEWRIGHT_LIVENESS_STALL": "4.5",
    }
    config = config_from(parse(), env=env)
    assert (config.log_format, config.metrics_listen) == ("json", "0.0.0.0:9464")
    assert config.liveness_stall_seconds == 4.5
    flags = parse(
        "--log-format", "text", "--metrics-listen", "127.0.0.1:0", "--liveness-stall", "2"
    )
    config = config_from(flags, env=env)
    assert (config.log_format, config.metrics_listen) == ("text", "127.0.0.1:0")
    assert config.liveness_stall_seconds == 2


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"STATEWRIGHT_LOG_FORMAT": "xml"}, "log format"),
        ({"STATEWRIGHT_METRICS_LISTEN": "9464"}, "HOST:PORT"),
        ({"STATEWRIGHT_LIVENESS_STALL": "0"}, "liveness stall"),
        ({"STATEWRIGHT_LIVENESS_STALL": "soon"}, "liveness stall"),
    ],
)
def test_bad_observability_values_are_reported(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from(parse(), env=env)


@pytest.mark.parametrize(
    ("env", "requested"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
        ({"OTEL_SERVICE_NAME": "statewrightd"}, False),
    ],
)
def test_tracing_follows_the_standard_variables(env: dict[str, str], requested: bool) -> None:
    assert tracing_requested(env) is requested


def test_exporters_from_the_environment() -> None:
    (otlp,) = exporters_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"})
    assert isinstance(otlp, OTLPSpanExporter)
    otlp.shutdown()
    both = exporters_from_env({"OTEL_TRACES_EXPORTER": "console,otlp"})
    assert [type(e) for e in both] == [ConsoleSpanExporter, OTLPSpanExporter]
    for exporter in both:
        exporter.shutdown()
    with pytest.raises(ConfigError, match="zipkin"):
        exporters_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(ConfigError, match="protocol"):
        exporters_from_env({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})


def test_the_workflow_a_request_concerns() -> None:
    assert workflow_of(pb.GetWorkflowRequest(name="workflows/wf-1")) == "wf-1"
    assert workflow_of(pb.StartWorkflowRequest(workflow_id="wf-2")) == "wf-2"
    assert workflow_of(pb.StartWorkflowRequest()) is None
    assert workflow_of(pb.GetDefinitionRequest(name="definitions/x")) is None
    assert workflow_of(pb.ListWorkflowsRequest()) is None


def _record(message: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("statewrightd.test", logging.WARNING, __file__, 1, message, (), None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_json_lines_carry_the_workflow_id_from_extra_or_the_rpc_context() -> None:
    formatter = JsonFormatter()
    plain = json.loads(formatter.format(_record("no workflow here")))
    assert plain["message"] == "no workflow here" and plain["level"] == "WARNING"
    assert "workflow_id" not in plain
    explicit = json.loads(formatter.format(_record("x", workflow_id="wf-9")))
    assert explicit["workflow_id"] == "wf-9"
    token = WORKFLOW_ID.set("wf-ctx")
    try:
        from_context = json.loads(formatter.format(_record('quote " and\nnewline')))
    finally:
        WORKFLOW_ID.reset(token)
    assert from_context["workflow_id"] == "wf-ctx"
    assert from_context["message"] == 'quote " and\nnewline'
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = _record("failed")
        record.exc_info = sys.exc_info()
    line = formatter.format(record)
    assert "\n" not in line  # one line per record, tracebacks included
    assert "RuntimeError: boom" in json.loads(line)["exception"]


def test_a_send_to_a_call_that_ended_is_one_line_without_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    core = logging.getLogger(GRPC_CORE_LOGGER)
    saved_filters = core.filters[:]
    configure("INFO", "text")
    try:
        _log_a_left_call_and_a_defect(core)
    finally:
        root.handlers[:], root.level = saved
        core.filters[:] = saved_filters
    err = capsys.readouterr().err
    assert (
        "INFO grpc._cython.cygrpc: ExecuteBatchError raised in core by servicer method "
        "[/x.S/Watch]: the call had already ended" in err
    )
    # Other errors on the same logger keep their traceback.
    assert err.count("Traceback (most recent call last)") == 1
    assert "RuntimeError: a real defect" in err


def _log_a_left_call_and_a_defect(core: logging.Logger) -> None:
    try:
        raise ExecuteBatchError("Failed execute_batch")
    except ExecuteBatchError:
        core.exception("ExecuteBatchError raised in core by servicer method [%s]", "/x.S/Watch")
    try:
        raise RuntimeError("a real defect")
    except RuntimeError:
        core.exception("Unexpected error in [%s]", "/x.S/Get")
