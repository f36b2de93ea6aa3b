package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServiceConfigTest {
  @Test
  void packagedConfigIsTheSharedFile() throws Exception {
    // Surefire runs in clients/java; the jar must carry clients/service-config.json unchanged.
    String shared = Files.readString(Path.of("..", "service-config.json"), StandardCharsets.UTF_8);
    assertEquals(ServiceConfig.parse(shared), ServiceConfig.asMap());
  }

  @Test
  void retriesOnlyUnavailable() {
    for (Object entry : (List<?>) ServiceConfig.asMap().get("methodConfig")) {
      Map<?, ?> retry = (Map<?, ?>) ((Map<?, ?>) entry).get("retryPolicy");
      assertEquals(List.of("UNAVAILABLE"), retry.get("retryableStatusCodes"));
      // gRPC's parser accepts JSON numbers only as Double.
      assertInstanceOf(Double.class, retry.get("maxAttempts"));
    }
  }

  @Test
  void methodTimeoutsComeFromTheConfig() {
    Map<String, Duration> timeouts = ServiceConfig.methodTimeouts();
    assertEquals(Duration.ofSeconds(10), timeouts.get("GetWorkflow"));
    assertEquals(Duration.ofSeconds(30), timeouts.get("StartWorkflow"));
    assertEquals(null, timeouts.get("WatchWorkflow"));
    assertEquals(null, timeouts.get("CompleteTask"));

    Map<String, Duration> tasks = ServiceConfig.methodTimeouts(ServiceConfig.TASK_SERVICE);
    assertEquals(Duration.ofSeconds(10), tasks.get("GetTask"));
    assertEquals(Duration.ofSeconds(30), tasks.get("CompleteTask"));
    assertEquals(Duration.ofSeconds(30), tasks.get("HeartbeatTask"));
    // A long poll's deadline follows its wait, not the config.
    assertEquals(null, tasks.get("PollTasks"));
    assertEquals(null, tasks.get("GetWorkflow"));
  }

  @Test
  void parsesProtoDurations() {
    assertEquals(Duration.ofMillis(100), ServiceConfig.parseDuration("0.1s"));
    assertEquals(Duration.ofSeconds(2), ServiceConfig.parseDuration("2s"));
  }
}
