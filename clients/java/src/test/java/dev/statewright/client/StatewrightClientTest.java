package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.v1.GetWorkflowRequest;
import dev.statewright.v1.GetWorkflowResponse;
import dev.statewright.v1.ListWorkflowsRequest;
import dev.statewright.v1.ListWorkflowsResponse;
import dev.statewright.v1.MigrateWorkflowRequest;
import dev.statewright.v1.MigrateWorkflowResponse;
import dev.statewright.v1.MigrationPlan;
import dev.statewright.v1.MigrationTaskFate;
import dev.statewright.v1.ResumeWorkflowRequest;
import dev.statewright.v1.PauseWorkflowRequest;
import dev.statewright.v1.PauseWorkflowResponse;
import dev.statewright.v1.ResetWorkflowRequest;
import dev.statewright.v1.ResetWorkflowResponse;
import dev.statewright.v1.RetryWorkflowRequest;
import dev.statewright.v1.RetryWorkflowResponse;
import dev.statewright.v1.UnpauseWorkflowRequest;
import dev.statewright.v1.UnpauseWorkflowResponse;
import dev.statewright.v1.WorkflowPause;
import dev.statewright.v1.SignalWithStartWorkflowRequest;
import dev.statewright.v1.SignalWithStartWorkflowResponse;
import dev.statewright.v1.StartWorkflowRequest;
import dev.statewright.v1.StartWorkflowResponse;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowStatus;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class StatewrightClientTest {
  private FakeService fake;
  private StatewrightClient client;

  @BeforeEach
  void setUp() throws Exception {
    fake = new FakeService();
    client = new StatewrightClient(fake.channel);
  }

  @AfterEach
  void tearDown() {
    client.close();
    fake.close();
  }

  private static Workflow workflow(String id, long revision, WorkflowStatus status) {
    return Workflow.newBuilder().setName("workflows/" + id).setWorkflowId(id).setRevision(revision).setStatus(status).build();
  }

  @Test
  void retriesUnavailableUntilItSucceeds() {
    AtomicInteger attempts = new AtomicInteger();
    fake.getWorkflow = request -> {
      if (attempts.incrementAndGet() < 3) {
        throw Status.UNAVAILABLE.withDescription("storage down").asRuntimeException();
      }
      return GetWorkflowResponse.newBuilder().setWorkflow(workflow("w", 1, WorkflowStatus.WORKFLOW_STATUS_WAITING)).build();
    };
    Workflow got = client.get("w");
    assertEquals(3, attempts.get());
    assertEquals("workflows/w", got.getName());
    assertEquals("workflows/w", ((GetWorkflowRequest) fake.requests.get(0)).getName());
  }

  @Test
  void signalWithStartSendsItsFieldsWithARequestIdAndRetriesUnavailable() {
    AtomicInteger attempts = new AtomicInteger();
    fake.signalWithStartWorkflow = request -> {
      if (attempts.incrementAndGet() < 2) {
        throw Status.UNAVAILABLE.withDescription("storage down").asRuntimeException();
      }
      return SignalWithStartWorkflowResponse.newBuilder()
          .setWorkflow(workflow("c-42", 1, WorkflowStatus.WORKFLOW_STATUS_RUNNING))
          .setStarted(true)
          .setAccepted(true)
          .build();
    };
    SignalWithStartWorkflowResponse answer =
        client.signalWithStart("tally", "c-42", "tick", Map.of("id", "a"), Map.of("limit", 2));
    assertTrue(answer.getStarted());
    assertTrue(answer.getAccepted());
    SignalWithStartWorkflowRequest first = (SignalWithStartWorkflowRequest) fake.requests.get(0);
    SignalWithStartWorkflowRequest retry = (SignalWithStartWorkflowRequest) fake.requests.get(1);
    assertFalse(first.getRequestId().isEmpty());
    assertEquals(first.getRequestId(), retry.getRequestId());
    assertEquals("c-42", first.getWorkflowId());
    assertEquals("tick", first.getEvent());
    assertEquals("a", first.getPayload().getFieldsOrThrow("id").getStringValue());
    assertEquals(2.0, first.getInput().getFieldsOrThrow("limit").getNumberValue());
  }

  @Test
  void retryAndResetSendTheirFieldsWithARequestIdAndRetryUnavailable() {
    AtomicInteger attempts = new AtomicInteger();
    fake.retryWorkflow = request -> RetryWorkflowResponse.newBuilder()
        .setWorkflow(workflow("w", 3, WorkflowStatus.WORKFLOW_STATUS_RUNNING))
        .setDryRun(request.getDryRun())
        .build();
    fake.resetWorkflow = request -> {
      if (attempts.incrementAndGet() < 2) {
        throw Status.UNAVAILABLE.withDescription("storage down").asRuntimeException();
      }
      return ResetWorkflowResponse.newBuilder()
          .setWorkflow(workflow("w", 4, WorkflowStatus.WORKFLOW_STATUS_WAITING))
          .build();
    };
    RetryWorkflowResponse retried = client.retry(
        RetryWorkflowRequest.newBuilder().setName("workflows/w").setReason("back").setDryRun(true).build());
    assertTrue(retried.getDryRun());
    RetryWorkflowRequest sent = (RetryWorkflowRequest) fake.requests.get(0);
    assertEquals("back", sent.getReason());
    assertFalse(sent.getRequestId().isEmpty());
    ResetWorkflowResponse reset = client.reset(
        ResetWorkflowRequest.newBuilder().setName("workflows/w").setToRevision(2).build());
    assertEquals(WorkflowStatus.WORKFLOW_STATUS_WAITING, reset.getWorkflow().getStatus());
    ResetWorkflowRequest first = (ResetWorkflowRequest) fake.requests.get(1);
    ResetWorkflowRequest again = (ResetWorkflowRequest) fake.requests.get(2);
    assertEquals(2, first.getToRevision());
    assertEquals(first.getRequestId(), again.getRequestId());
  }

  @Test
  void migrateSendsItsMapsWithARequestIdAndRetriesUnavailable() {
    AtomicInteger attempts = new AtomicInteger();
    fake.migrateWorkflow = request -> {
      if (attempts.incrementAndGet() < 2) {
        throw Status.UNAVAILABLE.withDescription("storage down").asRuntimeException();
      }
      return MigrateWorkflowResponse.newBuilder()
          .setWorkflow(workflow("w", 2, WorkflowStatus.WORKFLOW_STATUS_WAITING))
          .setPlan(MigrationPlan.newBuilder().setStateFrom("review").setStateTo("approval")
              .setTaskFate(MigrationTaskFate.MIGRATION_TASK_FATE_NONE))
          .setDryRun(request.getDryRun())
          .build();
    };
    MigrateWorkflowResponse migrated = client.migrate(MigrateWorkflowRequest.newBuilder()
        .setName("workflows/w").setToVersion(2).putStateMap("review", "approval")
        .putSet("tier", "'gold'").setDryRun(true).build());
    assertTrue(migrated.getDryRun());
    assertEquals("approval", migrated.getPlan().getStateTo());
    MigrateWorkflowRequest first = (MigrateWorkflowRequest) fake.requests.get(0);
    MigrateWorkflowRequest again = (MigrateWorkflowRequest) fake.requests.get(1);
    assertEquals("approval", first.getStateMapOrThrow("review"));
    assertEquals("'gold'", first.getSetOrThrow("tier"));
    assertFalse(first.getRequestId().isEmpty());
    assertEquals(first.getRequestId(), again.getRequestId());
  }

  @Test
  void pauseAndUnpauseSendTheirFieldsWithARequestIdAndRetryUnavailable() {
    AtomicInteger attempts = new AtomicInteger();
    fake.pauseWorkflow = request -> {
      if (attempts.incrementAndGet() < 2) {
        throw Status.UNAVAILABLE.withDescription("storage down").asRuntimeException();
      }
      return PauseWorkflowResponse.newBuilder()
          .setWorkflow(workflow("w", 3, WorkflowStatus.WORKFLOW_STATUS_RUNNING).toBuilder()
              .setPaused(true)
              .setPause(WorkflowPause.newBuilder().setReason(request.getReason()).setActor("key:ops")))
          .build();
    };
    fake.unpauseWorkflow = request -> UnpauseWorkflowResponse.newBuilder()
        .setWorkflow(workflow("w", 4, WorkflowStatus.WORKFLOW_STATUS_RUNNING))
        .setDryRun(request.getDryRun())
        .build();
    PauseWorkflowResponse paused = client.pause(
        PauseWorkflowRequest.newBuilder().setName("workflows/w").setReason("incident").build());
    assertTrue(paused.getWorkflow().getPaused());
    assertEquals("incident", paused.getWorkflow().getPause().getReason());
    PauseWorkflowRequest first = (PauseWorkflowRequest) fake.requests.get(0);
    PauseWorkflowRequest again = (PauseWorkflowRequest) fake.requests.get(1);
    assertFalse(first.getRequestId().isEmpty());
    assertEquals(first.getRequestId(), again.getRequestId());
    UnpauseWorkflowResponse unpaused = client.unpause(
        UnpauseWorkflowRequest.newBuilder().setName("workflows/w").setDryRun(true).build());
    assertTrue(unpaused.getDryRun());
    assertFalse(unpaused.getWorkflow().getPaused());
  }

  @Test
  void neverRetriesOtherCodesAndExposesTheErrorInfo() {
    AtomicInteger attempts = new AtomicInteger();
    fake.resumeWorkflow = request -> {
      attempts.incrementAndGet();
      throw FakeService.error(Status.Code.ABORTED, "REVISION_MISMATCH", Map.of("actual_revision", "1", "expected_revision", "99"));
    };
    StatewrightException e = assertThrows(StatewrightException.class, () -> client.resume("w", "approve", 99));
    assertEquals(1, attempts.get());
    assertEquals(Status.Code.ABORTED, e.code());
    assertEquals("REVISION_MISMATCH", e.reason());
    assertEquals(ErrorInfos.DOMAIN, e.domain());
    assertEquals(1L, e.actualRevision().orElseThrow());
    assertEquals(99, ((ResumeWorkflowRequest) fake.requests.get(0)).getExpectedRevision());
  }

  @Test
  void aRetriedStartKeepsItsGeneratedRequestId() {
    AtomicInteger attempts = new AtomicInteger();
    fake.startWorkflow = request -> {
      if (attempts.incrementAndGet() == 1) {
        throw Status.UNAVAILABLE.asRuntimeException();
      }
      return StartWorkflowResponse.newBuilder().setWorkflow(workflow("w", 1, WorkflowStatus.WORKFLOW_STATUS_WAITING)).build();
    };
    client.start("mail-approval", "w", Map.of("topic", "x", "count", 2));
    assertEquals(2, fake.requests.size());
    StartWorkflowRequest first = (StartWorkflowRequest) fake.requests.get(0);
    StartWorkflowRequest second = (StartWorkflowRequest) fake.requests.get(1);
    assertFalse(first.getRequestId().isEmpty());
    assertEquals(first.getRequestId(), second.getRequestId());
    assertEquals("x", first.getInput().getFieldsOrThrow("topic").getStringValue());
    assertEquals(2.0, first.getInput().getFieldsOrThrow("count").getNumberValue());
  }

  @Test
  void everyUnaryCallCarriesTheServiceConfigDeadline() {
    fake.getWorkflow = request -> GetWorkflowResponse.newBuilder().setWorkflow(workflow("w", 1, WorkflowStatus.WORKFLOW_STATUS_RUNNING)).build();
    fake.startWorkflow = request -> StartWorkflowResponse.newBuilder().setWorkflow(workflow("w", 1, WorkflowStatus.WORKFLOW_STATUS_RUNNING)).build();
    client.get("w");
    client.start("review-loop", "", Map.of());
    assertNotNull(fake.deadlines.get(0));
    long read = fake.deadlines.get(0).timeRemaining(TimeUnit.MILLISECONDS);
    long write = fake.deadlines.get(1).timeRemaining(TimeUnit.MILLISECONDS);
    assertTrue(read > 8_000 && read <= 10_000, "GetWorkflow deadline " + read);
    assertTrue(write > 28_000 && write <= 30_000, "StartWorkflow deadline " + write);
  }

  @Test
  void listPagesFollowsPageTokensToTheEnd() {
    fake.listWorkflows = request -> {
      int page = request.getPageToken().isEmpty() ? 0 : Integer.parseInt(request.getPageToken());
      ListWorkflowsResponse.Builder response = ListWorkflowsResponse.newBuilder();
      for (int i = 0; i < (page < 2 ? 2 : 1); i++) {
        response.addWorkflows(workflow("o-" + page + "-" + i, 1, WorkflowStatus.WORKFLOW_STATUS_COMPLETED));
      }
      return response.setNextPageToken(page < 2 ? Integer.toString(page + 1) : "").build();
    };
    List<Workflow> all = client.list("order-pricing", 2);
    assertEquals(5, all.size());
    List<String> tokens = new ArrayList<>();
    fake.requests.forEach(r -> tokens.add(((ListWorkflowsRequest) r).getPageToken()));
    assertEquals(List.of("", "1", "2"), tokens);
    assertEquals(2, ((ListWorkflowsRequest) fake.requests.get(0)).getPageSize());
  }

  @Test
  void resumableCodes() {
    assertTrue(StatewrightClient.resumable(new StatewrightException(Status.Code.UNAVAILABLE, "m", "SHUTTING_DOWN", "", Map.of(), null)));
    assertTrue(StatewrightClient.resumable(new StatewrightException(Status.Code.INTERNAL, "rst", "", "", Map.of(), null)));
    assertTrue(StatewrightClient.resumable(new StatewrightException(Status.Code.CANCELLED, "goaway", "", "", Map.of(), null)));
    assertTrue(StatewrightClient.resumable(new StatewrightException(Status.Code.UNKNOWN, "m", "", "", Map.of(), null)));
    assertFalse(StatewrightClient.resumable(new StatewrightException(Status.Code.NOT_FOUND, "m", "", "", Map.of(), null)));
    assertFalse(StatewrightClient.resumable(new StatewrightException(Status.Code.INTERNAL, "m", "INTERNAL", "", Map.of(), null)));
    assertFalse(StatewrightClient.resumable(new StatewrightException(Status.Code.DEADLINE_EXCEEDED, "m", "", "", Map.of(), null)));
    assertTrue(StatewrightClient.resumable(StatewrightException.from(FakeService.rateLimited(Duration.ofMillis(10)))));
    assertFalse(StatewrightClient.resumable(StatewrightException.from(FakeService.error(Status.Code.RESOURCE_EXHAUSTED, "TOO_MANY_WATCHES", Map.of()))));
    assertFalse(StatewrightClient.resumable(StatewrightException.from(FakeService.error(Status.Code.UNAUTHENTICATED, "UNAUTHENTICATED", Map.of()))));
    assertFalse(StatewrightClient.resumable(StatewrightException.from(FakeService.error(Status.Code.PERMISSION_DENIED, "PERMISSION_DENIED", Map.of()))));
  }
}
