"""OpenTelemetry tracing, configured from the standard ``OTEL_*`` environment variables.

Tracing is off unless the environment asks for it: ``OTEL_TRACES_EXPORTER`` (``otlp`` or
``console``; ``none`` turns it off) or an OTLP endpoint
(``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), and
``OTEL_SDK_DISABLED=true`` wins over both. Everything else (endpoint, headers, timeouts,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, the sampler, the batch processor's
limits) is read by the SDK and the OTLP exporter themselves.

Spans are handed to a ``BatchSpanProcessor``: ending a span only appends it to a bounded
in-memory queue and a background thread exports, so neither the EventLoop thread nor
the writer ever waits on the collector (when the queue is full, spans are dropped).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.trace import Tracer

from statewrightd import __version__
from statewrightd.config import ConfigError

INSTRUMENTATION_NAME = "statewrightd"


def tracing_requested(env: Mapping[str, str]) -> bool:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters:
        return exporters != "none"
    return bool(
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def exporters_from_env(env: Mapping[str, str]) -> list[SpanExporter]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names (default ``otlp``)."""
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    exporters: list[SpanExporter] = []
    for name in filter(None, names):
        if name == "otlp":
            protocol = env.get(
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            )
            if protocol.strip().lower() != "grpc":
                raise ConfigError(
                    f"OTLP protocol {protocol!r} is not supported; statewrightd exports OTLP "
                    "over gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc)"
                )
            # Imported here: the exporter pulls in its own gRPC channel machinery, which a
            # server without tracing never needs.
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # noqa: PLC0415
                OTLPSpanExporter,
            )

            exporters.append(OTLPSpanExporter())
        elif name == "console":
            exporters.append(ConsoleSpanExporter())
        else:
            raise ConfigError(
                f"OTEL_TRACES_EXPORTER={name!r} is not supported (use otlp, console or none)"
            )
    return exporters


def _resource() -> Resource:
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; our defaults
    # fill only what the environment left unset.
    resource = Resource.create({SERVICE_VERSION: __version__})
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "statewrightd"}))
    return resource


@contextmanager
def caller_trace(headers: Mapping[str, str]) -> Iterator[None]:
    """Runs the block in the trace context an HTTP call's headers carry (read by the
    process's propagators, W3C Trace Context by default), so that the steps it starts are
    children of the caller's span as they are of a gRPC call's. A call without a
    ``traceparent`` runs as it is."""
    if "traceparent" not in headers:
        yield
        return
    token = otel_context.attach(propagate.extract(headers))
    try:
        yield
    finally:
        otel_context.detach(token)


class Tracing:
    """A tracer provider of the server's own (not the process-global one), and its tracer."""

    def __init__(self, exporters: list[SpanExporter]) -> None:
        self.provider = TracerProvider(resource=_resource())
        for exporter in exporters:
            self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer: Tracer = self.provider.get_tracer(INSTRUMENTATION_NAME, __version__)

    def flush(self, timeout_seconds: float = 5.0) -> None:
        self.provider.force_flush(int(timeout_seconds * 1000))

    def shutdown(self) -> None:
        """Export what is still queued, then stop the processors."""
        self.provider.shutdown()
