package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.v1.CompleteTaskResponse;
import dev.statewright.v1.GetWorkflowRequest;
import dev.statewright.v1.GetWorkflowResponse;
import dev.statewright.v1.ListWorkflowsResponse;
import dev.statewright.v1.StartWorkflowResponse;
import dev.statewright.v1.WatchEventType;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowServiceGrpc;
import dev.statewright.v1.WorkflowStatus;
import io.grpc.Status;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The bearer token on the calls themselves, against the in-process fake (which counts as secure). */
class BearerTokenCallsTest {
  private FakeService fake;

  @BeforeEach
  void setUp() throws Exception {
    fake = new FakeService();
    Workflow done = Workflow.newBuilder().setName("workflows/w").setRevision(2).setStatus(WorkflowStatus.WORKFLOW_STATUS_COMPLETED).build();
    fake.getWorkflow = r -> GetWorkflowResponse.newBuilder().setWorkflow(done).build();
    fake.startWorkflow = r -> StartWorkflowResponse.newBuilder().setWorkflow(done).build();
    fake.listWorkflows = r -> ListWorkflowsResponse.getDefaultInstance();
    fake.watchWorkflow = (r, out) -> {
      out.onNext(WatchWorkflowResponse.newBuilder().setType(WatchEventType.WATCH_EVENT_TYPE_CURRENT).setRevision(2).setWorkflow(done).build());
      out.onCompleted();
    };
  }

  @AfterEach
  void tearDown() {
    fake.close();
  }

  private List<String> authorizations() {
    List<String> seen = new ArrayList<>();
    fake.calls.forEach(c -> seen.add(c.substring(c.indexOf(' ') + 1)));
    return seen;
  }

  @Test
  void aStaticTokenGoesOnEveryCallOfBothServicesStreamsAndRawStubsIncluded() {
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).token("sw_static").build()) {
      client.get("w");
      client.start("mail-approval", "", Map.of());
      client.list("", 10);
      client.watch("w", WatchOptions.defaults(), event -> {});
      client.pollTasks("payments", "me", 1, Duration.ofMillis(10));
      client.completeTask("workflows/w/tasks/t", "lease", Map.of(), "");
      WorkflowServiceGrpc.newBlockingStub(client.channel()).getWorkflow(GetWorkflowRequest.newBuilder().setName("workflows/w").build());
    }
    assertEquals(
        List.of("GetWorkflow", "StartWorkflow", "ListWorkflows", "WatchWorkflow", "PollTasks", "CompleteTask", "GetWorkflow"),
        fake.calls.stream().map(c -> c.substring(0, c.indexOf(' '))).toList());
    assertEquals(List.of("Bearer sw_static"), authorizations().stream().distinct().toList());
  }

  @Test
  void withoutATokenNoAuthorizationIsSent() {
    try (StatewrightClient client = new StatewrightClient(fake.channel)) {
      client.get("w");
    }
    assertEquals(List.of("GetWorkflow -"), fake.calls);
  }

  @Test
  void aOneCallTokenIsAskedForBeforeEveryCall() {
    AtomicInteger asked = new AtomicInteger();
    TokenProvider provider = () -> BearerToken.of("t" + asked.incrementAndGet());
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).tokenProvider(provider).build()) {
      client.get("w");
      client.get("w");
      client.watch("w", WatchOptions.defaults(), event -> {});
    }
    assertEquals(List.of("Bearer t1", "Bearer t2", "Bearer t3"), authorizations());
  }

  @Test
  void anExpiringTokenIsReusedUntilShortlyBeforeItExpiresThenRefreshed() {
    AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2030-01-01T00:00:00Z"));
    AtomicInteger asked = new AtomicInteger();
    TokenProvider provider = () -> BearerToken.expiringAt("t" + asked.incrementAndGet(), now.get().plus(Duration.ofMinutes(5)));
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).tokenProvider(provider).clock(now::get).build()) {
      client.get("w");
      now.set(now.get().plus(Duration.ofMinutes(4))); // 60 s left: more than the 30 s margin
      client.get("w");
      now.set(now.get().plus(Duration.ofSeconds(31))); // 29 s left: time for a new one
      client.get("w");
      client.get("w");
    }
    assertEquals(List.of("Bearer t1", "Bearer t1", "Bearer t2", "Bearer t2"), authorizations());
  }

  @Test
  void aShortLivedTokenIsReplacedAtHalfItsLife() {
    AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2030-01-01T00:00:00Z"));
    AtomicInteger asked = new AtomicInteger();
    TokenProvider provider = () -> BearerToken.expiringAt("t" + asked.incrementAndGet(), now.get().plus(Duration.ofSeconds(20)));
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).tokenProvider(provider).clock(now::get).build()) {
      client.get("w");
      now.set(now.get().plus(Duration.ofSeconds(9)));
      client.get("w");
      now.set(now.get().plus(Duration.ofSeconds(2)));
      client.get("w");
    }
    assertEquals(List.of("Bearer t1", "Bearer t1", "Bearer t2"), authorizations());
  }

  @Test
  void anUnauthenticatedAnswerDropsTheHeldTokenSoTheNextCallAsksAgain() {
    AtomicInteger asked = new AtomicInteger();
    TokenProvider provider = () -> BearerToken.expiringAt("t" + asked.incrementAndGet(), Instant.now().plus(Duration.ofHours(1)));
    AtomicInteger served = new AtomicInteger();
    fake.getWorkflow = r -> {
      if (served.incrementAndGet() == 2) {
        throw FakeService.error(Status.Code.UNAUTHENTICATED, "UNAUTHENTICATED", Map.of());
      }
      return GetWorkflowResponse.getDefaultInstance();
    };
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).tokenProvider(provider).build()) {
      client.get("w");
      UnauthenticatedException e = assertThrows(UnauthenticatedException.class, () -> client.get("w"));
      assertEquals("UNAUTHENTICATED", e.reason());
      client.get("w");
      client.get("w");
    }
    assertEquals(List.of("Bearer t1", "Bearer t1", "Bearer t2", "Bearer t2"), authorizations());
  }

  @Test
  void aFailingProviderFailsTheCallUnauthenticatedWithoutReachingTheServer() {
    TokenProvider provider = () -> {
      throw new IOException("identity provider unreachable");
    };
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).tokenProvider(provider).build()) {
      UnauthenticatedException e = assertThrows(UnauthenticatedException.class, () -> client.get("w"));
      assertTrue(e.getMessage().contains("the token provider failed: java.io.IOException: identity provider unreachable"), e.getMessage());
      assertEquals("", e.reason());
      UnauthenticatedException none = assertThrows(UnauthenticatedException.class, () -> StatewrightClient.builder()
          .channel(fake.channel).tokenProvider(() -> null).build().get("w"));
      assertTrue(none.getMessage().contains("returned no token"), none.getMessage());
    }
    assertEquals(List.of(), fake.calls);
  }

  @Test
  void theServersRefusalsAreTypedAndARateLimitSaysWhenToTryAgain() {
    fake.getWorkflow = r -> {
      throw FakeService.error(Status.Code.PERMISSION_DENIED, "PERMISSION_DENIED", Map.of());
    };
    fake.startWorkflow = r -> {
      throw FakeService.rateLimited(Duration.ofMillis(1500));
    };
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).token("t").build()) {
      StatewrightException denied = assertThrows(StatewrightException.class, () -> client.get("w"));
      assertInstanceOf(PermissionDeniedException.class, denied);
      assertEquals(Status.Code.PERMISSION_DENIED, denied.code());
      StatewrightException limited = assertThrows(StatewrightException.class, () -> client.start("mail-approval", "", Map.of()));
      assertTrue(limited.isRateLimited());
      assertEquals(Duration.ofMillis(1500), limited.retryDelay().orElseThrow());
      assertEquals("5/s", limited.metadata().get("limit"));
      assertFalse(denied.retryDelay().isPresent());
    }
  }

  @Test
  void aWorkerSendsItsClientsTokenOnPollsAndReports() throws Exception {
    fake.tasks.complete = r -> CompleteTaskResponse.getDefaultInstance();
    try (StatewrightClient client = StatewrightClient.builder().channel(fake.channel).token("sw_worker").build()) {
      Worker worker = Worker.builder(client).pollWait(Duration.ofSeconds(5)).register("payments", t -> Map.of()).build();
      fake.tasks.offer(dev.statewright.v1.Task.newBuilder()
          .setName("workflows/w/tasks/t").setQueue("payments").setAttempt(1).setLeaseToken("lease")
          .setLeaseExpireTime(FakeTaskService.fromNow(Duration.ofSeconds(30))).setStatus(dev.statewright.v1.TaskStatus.TASK_STATUS_LEASED).build());
      worker.start();
      long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (fake.tasks.completes.isEmpty() && System.nanoTime() - end < 0) {
        Thread.sleep(5);
      }
      worker.close(Duration.ZERO);
    }
    assertEquals(1, fake.tasks.completes.size());
    assertTrue(fake.calls.contains("PollTasks Bearer sw_worker"), fake.calls.toString());
    assertTrue(fake.calls.contains("CompleteTask Bearer sw_worker"), fake.calls.toString());
    assertEquals(List.of("Bearer sw_worker"), authorizations().stream().distinct().toList());
  }
}
