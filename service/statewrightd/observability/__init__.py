"""Operations telemetry: OpenTelemetry traces, Prometheus metrics and structured logs.

Everything here is off by default and costs (close to) nothing while off:

- tracing is on when the standard ``OTEL_*`` variables ask for an exporter
  (``OTEL_TRACES_EXPORTER`` or ``OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT``);
- metrics are on when ``--metrics-listen`` / ``STATEWRIGHT_METRICS_LISTEN`` is set;
- ``--log-format json`` switches the log lines to one JSON object each.

``setup.Observability`` wires these into a server; ``hooks`` is what the engine and the
store call at the few points worth observing (a finished step, a storage batch).
"""
