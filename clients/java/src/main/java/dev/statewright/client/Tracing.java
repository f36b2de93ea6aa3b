package dev.statewright.client;

import dev.statewright.v1.Task;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.util.HashMap;
import java.util.Map;

/**
 * Tracing through the OpenTelemetry API; with no SDK installed ({@link GlobalOpenTelemetry})
 * every span is a no-op and nothing is sent.
 *
 * <ul>
 *   <li>Every call carries the caller's current trace context: {@link #INTERCEPTOR} injects it
 *       into the call's metadata with the configured propagator.
 *   <li>A worker runs each attempt in a span ({@code statewright.task <queue>}) that is a child
 *       of the step that scheduled the task (the task's W3C {@code traceparent} and {@code
 *       tracestate}, read with OpenTelemetry's W3C propagator), and sends that span's context
 *       back with its completion or failure, whose step is then linked to it.
 * </ul>
 */
final class Tracing {
  static final String INSTRUMENTATION = "dev.statewright.client";
  /** The task's fields and the worker's are W3C Trace Context, whatever the process propagates. */
  private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

  private static final TextMapSetter<Metadata> METADATA =
      (carrier, key, value) -> {
        if (carrier != null) {
          carrier.put(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER), value);
        }
      };

  private static final TextMapGetter<Map<String, String>> MAP_GETTER =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
          return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  /** Puts the current trace context into each call's metadata. */
  static final ClientInterceptor INTERCEPTOR =
      new ClientInterceptor() {
        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(
            MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
          return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
            @Override
            public void start(Listener<R> listener, Metadata headers) {
              GlobalOpenTelemetry.getPropagators()
                  .getTextMapPropagator()
                  .inject(Context.current(), headers, METADATA);
              super.start(listener, headers);
            }
          };
        }
      };

  private Tracing() {}

  /** The span of one attempt of {@code task}: a child of the step that scheduled it. */
  static Span startTaskSpan(Task task) {
    Map<String, String> carrier = new HashMap<>();
    if (!task.getTraceparent().isEmpty()) {
      carrier.put("traceparent", task.getTraceparent());
      if (!task.getTracestate().isEmpty()) {
        carrier.put("tracestate", task.getTracestate());
      }
    }
    Context parent = W3C.extract(Context.root(), carrier, MAP_GETTER);
    return GlobalOpenTelemetry.getTracer(INSTRUMENTATION)
        .spanBuilder("statewright.task " + task.getQueue())
        .setParent(parent)
        .setSpanKind(SpanKind.CONSUMER)
        .setAttribute("statewright.task", task.getName())
        .setAttribute("statewright.queue", task.getQueue())
        .setAttribute("statewright.state", task.getState())
        .setAttribute("statewright.task.attempt", task.getAttempt())
        .startSpan();
  }

  /** {@code span}'s W3C {@code traceparent} and {@code tracestate} (absent when it has none). */
  static Map<String, String> headers(Span span) {
    Map<String, String> carrier = new HashMap<>();
    W3C.inject(Context.root().with(span), carrier, Map::put);
    return carrier;
  }

  /** Ends an attempt's span; {@code failure}: the error type it failed with, or null. */
  static void end(Span span, String failure) {
    if (failure != null) {
      span.setAttribute("statewright.error.type", failure);
      span.setStatus(StatusCode.ERROR, failure);
    }
    span.end();
  }
}
