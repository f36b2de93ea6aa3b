"""Wires tracing, metrics and the RPC observer into one server, from its configuration."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

import grpc
from opentelemetry.sdk.trace.export import SpanExporter

from statewrightd.config import ServerConfig
from statewrightd.observability.metrics import (
    Metrics,
    MetricsEndpoint,
    RuntimeCounters,
    serve_metrics,
)
from statewrightd.observability.probes import Probes
from statewrightd.observability.rpc import RpcObserver
from statewrightd.observability.tracing import Tracing, exporters_from_env, tracing_requested

_log = logging.getLogger(__name__)


class Observability:
    """What one server exports. Built before the gRPC server (interceptors are fixed at
    construction), started once the application is open, stopped after it closes."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        env: Mapping[str, str] | None = None,
        span_exporters: list[SpanExporter] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        self.config = config
        if span_exporters is None and tracing_requested(env):
            span_exporters = exporters_from_env(env)
        self.tracing = Tracing(span_exporters) if span_exporters else None
        self.metrics = Metrics() if config.metrics_listen else None
        self.endpoint: MetricsEndpoint | None = None
        # What the engine and the store report through (the application passes it down).
        self.probes = Probes(self.tracing.tracer if self.tracing else None, self.metrics)

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        """Outermost first: the server span must exist when the observer annotates it."""
        chain: list[grpc.aio.ServerInterceptor] = []
        # Without any consumer the observer would only cost time on every RPC. It makes the
        # server spans too, so it comes first: the span exists for whatever follows.
        if self.tracing or self.metrics or self.config.log_format == "json":
            tracer = None if self.tracing is None else self.tracing.tracer
            chain.append(RpcObserver(self.metrics, tracer))
        return chain

    def start(self, counters: RuntimeCounters, malformed_requests: Callable[[], int]) -> None:
        """Export what the runtime already counts; each source is read at scrape time."""
        if self.tracing is not None:
            _log.info("tracing: exporting spans through the OTEL_* configuration")
        if self.metrics is not None and self.config.metrics_listen is not None:
            self.metrics.watch_runtime(counters, malformed_requests)
            self.endpoint = serve_metrics(self.metrics, self.config.metrics_listen)
            host = self.config.metrics_listen.rpartition(":")[0]
            # Tests and scripts read this line to find the port when listening on port 0.
            _log.info("metrics on http://%s:%d/metrics", host, self.endpoint.port)

    def stop(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        if self.tracing is not None:
            # Batch spans still waiting for their steps' answers are exported as they are.
            self.probes.close()
            self.tracing.shutdown()
