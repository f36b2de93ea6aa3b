package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.Task;
import dev.statewright.v1.TaskStatus;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.junit5.OpenTelemetryExtension;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Trace context through the Java client, with an SDK installed globally (W3C propagation). */
class TracingTest {
  @RegisterExtension static final OpenTelemetryExtension OTEL = OpenTelemetryExtension.create();

  private static final String TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
  private static final String STEP_SPAN = "b7ad6b7169203331";

  private FakeService fake;
  private StatewrightClient client;
  private Worker worker;

  @BeforeEach
  void setUp() throws Exception {
    fake = new FakeService();
    client = new StatewrightClient(fake.channel);
  }

  @AfterEach
  void tearDown() {
    if (worker != null) {
      worker.close(Duration.ZERO);
    }
    client.close();
    fake.close();
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - end > 0) {
        fail("gave up waiting for " + what);
      }
      Thread.sleep(2);
    }
  }

  @Test
  void theHandlerRunsInAChildSpanOfTheTasksContextWhichTheReportCarries() throws Exception {
    fake.tasks.offer(
        Task.newBuilder()
            .setName("workflows/w-1/tasks/1")
            .setWorkflow("workflows/w-1")
            .setState("charge")
            .setQueue("payments")
            .setAttempt(1)
            .setLeaseToken("lease-1")
            .setLeaseExpireTime(FakeTaskService.fromNow(Duration.ofSeconds(30)))
            .setStatus(TaskStatus.TASK_STATUS_LEASED)
            .setTraceparent("00-" + TRACE_ID + "-" + STEP_SPAN + "-01")
            .setTracestate("vendor=x")
            .build());
    List<String> active = new CopyOnWriteArrayList<>();
    worker =
        Worker.builder(client)
            .register("payments", t -> {
              active.add(Span.current().getSpanContext().getSpanId());
              return Map.of("id", "ch-1");
            })
            .build();
    worker.start();
    await(() -> fake.tasks.completes.size() == 1, "the completion");

    SpanData span =
        OTEL.getSpans().stream()
            .filter(s -> s.getName().equals("statewright.task payments"))
            .findFirst()
            .orElseThrow();
    assertEquals(TRACE_ID, span.getTraceId());
    assertEquals(STEP_SPAN, span.getParentSpanId());
    assertEquals(List.of(span.getSpanId()), active);
    String own = "00-" + TRACE_ID + "-" + span.getSpanId() + "-01";
    CompleteTaskRequest done = fake.tasks.completes.get(0);
    assertEquals(own, done.getTraceparent());
    assertEquals("vendor=x", done.getTracestate());
    // The CompleteTask call itself is a child of the worker's span.
    assertTrue(fake.traceparents.contains("CompleteTask " + own), fake.traceparents.toString());
  }

  @Test
  void everyCallCarriesTheCallersCurrentTraceContext() {
    Span caller = OTEL.getOpenTelemetry().getTracer("test").spanBuilder("caller").startSpan();
    try (Scope ignored = caller.makeCurrent()) {
      assertThrows(
          StatewrightException.class,
          () -> client.get("workflows/absent"));
    } finally {
      caller.end();
    }
    String expected =
        "GetWorkflow 00-"
            + caller.getSpanContext().getTraceId()
            + "-"
            + caller.getSpanContext().getSpanId()
            + "-"
            + caller.getSpanContext().getTraceFlags().asHex();
    assertEquals(List.of(expected), fake.traceparents);
  }
}
