package dev.statewright.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ConformanceRunnerTest {
  private static final Path SCENARIO = Path.of("..", "conformance", "scenario.yaml");
  private static final Set<String> OPS =
      Set.of("StartWorkflow", "ResumeWorkflow", "SignalWorkflow", "GetWorkflow", "WatchWorkflow", "AwaitWatch", "ListWorkflows", "GetDiagnostics");

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
}
