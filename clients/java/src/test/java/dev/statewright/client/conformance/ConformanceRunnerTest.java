package dev.statewright.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.client.TaskContext;
import dev.statewright.client.TaskFailure;
import dev.statewright.client.TaskHandler;
import dev.statewright.v1.Task;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ConformanceRunnerTest {
  private static final Path SCENARIO = Path.of("..", "conformance", "scenario.yaml");
  private static final Set<String> OPS =
      Set.of("StartWorkflow", "ResumeWorkflow", "SignalWorkflow", "GetWorkflow", "WatchWorkflow", "AwaitWatch", "ListWorkflows", "GetDiagnostics", "RunWorker");

  @Test
  void theSharedScenarioUsesOnlyOpsThisRunnerKnows() throws Exception {
    List<Map<String, Object>> steps = ConformanceRunner.steps(ConformanceRunner.load(SCENARIO));
    assertTrue(steps.size() >= 10, "scenario has " + steps.size() + " steps");
    for (Map<String, Object> step : steps) {
      assertTrue(OPS.contains(step.get("op")), "unknown op " + step.get("op"));
    }
  }

  @Test
  void substitutesRunAndRepeatVariables() {
    ConformanceRunner runner = new ConformanceRunner(null, "r1", System.out);
    Object out = runner.substitute(Map.of("id", "order-${run}-${i}", "list", List.of("${run}")), Map.of("run", "r1", "i", "2"));
    assertEquals(Map.of("id", "order-r1-2", "list", List.of("r1")), out);
  }

  @Test
  void unknownReferencesAndKeysFailLoudly() {
    ConformanceRunner runner = new ConformanceRunner(null, "r1", System.out);
    assertThrows(ConformanceRunner.Mismatch.class, () -> runner.substitute("${mail.workflow_id}", Map.of()));
    assertThrows(
        ConformanceRunner.Mismatch.class, () -> ConformanceRunner.checkKeys("expect", Map.of("statsu", "WAITING"), "status"));
  }

  @Test
  void anUnknownOpFailsItsStepAndTheRun() {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    ConformanceRunner runner = new ConformanceRunner(null, "r1", new PrintStream(buffer, true, StandardCharsets.UTF_8));
    int failed = runner.run(List.of(Map.of("id", "mystery", "op", "TeleportWorkflow")));
    assertEquals(1, failed);
    String output = buffer.toString(StandardCharsets.UTF_8);
    assertTrue(output.contains("FAIL mystery"), output);
    assertTrue(output.endsWith("conformance: 0 passed, 1 failed\n"), output);
  }

  @Test
  void handlersKeepInputReferencesUntilTheTaskRuns() {
    ConformanceRunner runner = new ConformanceRunner(null, "r1", System.out);
    Object handlers = runner.substituteHandlers(
        Map.of("payments", Map.of("result", Map.of("id", "ch-${input.order}", "run", "${run}"))), Map.of("run", "r1"));
    assertEquals(Map.of("payments", Map.of("result", Map.of("id", "ch-${input.order}", "run", "r1"))), handlers);
    Object result = ConformanceRunner.substituteInput(
        Map.of("id", "ch-${input.order}", "nested", List.of(Map.of("n", "${input.amount}/${input.order}")), "count", 2),
        Map.of("order", "ful-r1", "amount", 25.0));
    assertEquals(Map.of("id", "ch-ful-r1", "nested", List.of(Map.of("n", "25.0/ful-r1")), "count", 2), result);
  }

  @Test
  void anInputKeyTheTaskLacksOrAnotherReferenceFails() {
    ConformanceRunner.Mismatch missing = assertThrows(
        ConformanceRunner.Mismatch.class, () -> ConformanceRunner.substituteInput("ch-${input.order}", Map.of("refund", "x")));
    assertTrue(missing.getMessage().contains("no order"), missing.getMessage());
    assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.substituteInput("${mail.name}", Map.of()));
    ConformanceRunner runner = new ConformanceRunner(null, "r1", System.out);
    assertThrows(ConformanceRunner.Mismatch.class, () -> runner.substituteHandlers("${mail.name}", Map.of("run", "r1")));
  }

  @Test
  void aResultHandlerCompletesWithItsMapFromTheTaskInput() throws Exception {
    List<String> errors = new ArrayList<>();
    TaskHandler handler =
        ConformanceRunner.handler("payments", Map.of("result", Map.of("id", "ch-${input.order}")), errors);
    assertEquals(Map.of("id", "ch-ful-7"), handler.handle(new Input(Map.of("order", "ful-7", "amount", 25.0))));
    assertTrue(errors.isEmpty(), errors.toString());
  }

  @Test
  void aResultHandlerWithoutItsInputRecordsWhyAndGivesTheTaskUp() {
    List<String> errors = new ArrayList<>();
    TaskHandler handler =
        ConformanceRunner.handler("payments", Map.of("result", Map.of("id", "ch-${input.order}")), errors);
    TaskFailure failure = assertThrows(TaskFailure.class, () -> handler.handle(new Input(Map.of("amount", 25.0))));
    assertTrue(failure.nonRetryable());
    assertEquals(1, errors.size());
    assertTrue(errors.get(0).startsWith("payments: "), errors.get(0));
  }

  @Test
  void aFailHandlerThrowsTheClientsTaskFailure() {
    TaskHandler handler = ConformanceRunner.handler(
        "shipping",
        Map.of("fail", Map.of("type", "CARRIER_DOWN", "message", "no carrier today", "non_retryable", true)),
        new ArrayList<>());
    TaskFailure failure = assertThrows(TaskFailure.class, () -> handler.handle(new Input(Map.of())));
    assertEquals("CARRIER_DOWN", failure.type());
    assertEquals("no carrier today", failure.getMessage());
    assertTrue(failure.nonRetryable());

    TaskHandler retryable =
        ConformanceRunner.handler("shipping", Map.of("fail", Map.of("type", "CARRIER_DOWN")), new ArrayList<>());
    assertFalse(assertThrows(TaskFailure.class, () -> retryable.handle(new Input(Map.of()))).nonRetryable());
  }

  @Test
  void aHandlerMustSayExactlyOneThing() {
    List<String> errors = new ArrayList<>();
    assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.handler("q", Map.of(), errors));
    assertThrows(
        ConformanceRunner.Mismatch.class,
        () -> ConformanceRunner.handler("q", Map.of("result", Map.of(), "fail", Map.of("type", "X")), errors));
    assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.handler("q", Map.of("succeed", Map.of()), errors));
    assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.handler("q", Map.of("fail", Map.of("message", "m")), errors));
    assertThrows(
        ConformanceRunner.Mismatch.class,
        () -> ConformanceRunner.handler("q", Map.of("fail", Map.of("type", "X", "non_retryable", "yes")), errors));
  }

  @Test
  void theScenariosHandlersAllBuild() throws Exception {
    ConformanceRunner runner = new ConformanceRunner(null, "r1", System.out);
    int built = 0;
    for (Map<String, Object> step : ConformanceRunner.steps(ConformanceRunner.load(SCENARIO))) {
      if ("RunWorker".equals(step.get("op"))) {
        Map<String, Object> handlers = ConformanceRunner.cast(runner.substituteHandlers(step.get("handlers"), Map.of("run", "r1")));
        for (Map.Entry<String, Object> e : handlers.entrySet()) {
          ConformanceRunner.handler(e.getKey(), ConformanceRunner.cast(e.getValue()), new ArrayList<>());
          built++;
        }
        ConformanceRunner.duration(step.get("timeout"));
      }
    }
    assertTrue(built >= 2, "built " + built + " handlers");
  }

  @Test
  void contextIsMatchedAsASubset() {
    Map<String, Object> context = new LinkedHashMap<>();
    context.put("charge_id", "ch-1");
    context.put("total", 25.0);
    context.put("failure", Map.of("type", "CARRIER_DOWN", "message", "no carrier today", "attempts", 1L, "details", Map.of()));
    context.put("log", List.of("received", "charged ch-1"));
    context.put("none", null);

    ConformanceRunner.matchSubset("context", context, Map.of());
    ConformanceRunner.matchSubset("context", context, Map.of("charge_id", "ch-1", "failure", Map.of("type", "CARRIER_DOWN", "attempts", 1)));
    ConformanceRunner.matchSubset("context", context, Map.of("total", 25, "log", List.of("received", "charged ch-1")));
    Map<String, Object> wantsNull = new LinkedHashMap<>();
    wantsNull.put("none", null);
    ConformanceRunner.matchSubset("context", context, wantsNull);

    assertMismatch(context, Map.of("refund_id", "ch-1"), "context.refund_id: missing");
    assertMismatch(context, Map.of("failure", Map.of("attempts", 2)), "context.failure.attempts: expected 2, got 1");
    assertMismatch(context, Map.of("failure", Map.of("kind", "X")), "context.failure.kind: missing");
    assertMismatch(context, Map.of("charge_id", Map.of("id", "ch-1")), "context.charge_id: expected a map");
    assertMismatch(context, Map.of("total", "25.0"), "context.total: expected \"25.0\", got 25.0");
    assertMismatch(context, Map.of("log", List.of("received")), "context.log: expected 1 elements");
    assertMismatch(context, Map.of("log", List.of("received", "charged ch-2")), "context.log[1]: expected \"charged ch-2\", got \"charged ch-1\"");
    assertMismatch(context, Map.of("none", "x"), "context.none: expected \"x\", got null");
  }

  @Test
  void durationsParse() {
    assertEquals(Duration.ofSeconds(60), ConformanceRunner.duration("60s"));
    assertEquals(Duration.ofMillis(500), ConformanceRunner.duration("500ms"));
    assertEquals(Duration.ofMillis(1500), ConformanceRunner.duration("1.5s"));
    assertEquals(Duration.ofMinutes(2), ConformanceRunner.duration("2m"));
    assertEquals(Duration.ofHours(1), ConformanceRunner.duration("1h"));
    assertEquals(Duration.ofSeconds(30), ConformanceRunner.duration(30));
    assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.duration("soon"));
    assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.duration("0s"));
    assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.duration("-5s"));
  }

  private static void assertMismatch(Map<String, Object> actual, Map<String, Object> expected, String message) {
    ConformanceRunner.Mismatch e =
        assertThrows(ConformanceRunner.Mismatch.class, () -> ConformanceRunner.matchSubset("context", actual, expected));
    assertTrue(e.getMessage().startsWith(message), e.getMessage());
  }

  /** A task as a handler sees it: only its input matters to the runner's handlers. */
  private record Input(Map<String, Object> input) implements TaskContext {
    @Override
    public String name() {
      return "workflows/w/tasks/1";
    }

    @Override
    public String workflow() {
      return "workflows/w";
    }

    @Override
    public String queue() {
      return "q";
    }

    @Override
    public String state() {
      return "s";
    }

    @Override
    public int attempt() {
      return 1;
    }

    @Override
    public Map<String, Object> heartbeatDetails() {
      return Map.of();
    }

    @Override
    public Instant leaseExpireTime() {
      return Instant.EPOCH;
    }

    @Override
    public Task task() {
      return Task.getDefaultInstance();
    }

    @Override
    public void heartbeat(Map<String, ?> details) {}

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public void onCancel(Runnable callback) {}
  }
}
