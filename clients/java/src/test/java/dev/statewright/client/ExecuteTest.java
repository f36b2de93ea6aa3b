package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.statewright.v1.GetWorkflowResponse;
import dev.statewright.v1.StartWorkflowRequest;
import dev.statewright.v1.StartWorkflowResponse;
import dev.statewright.v1.WatchEventType;
import dev.statewright.v1.WatchWorkflowRequest;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowStatus;
import io.grpc.Status;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ExecuteTest {
  private static final WorkflowStatus RUNNING = WorkflowStatus.WORKFLOW_STATUS_RUNNING;
  private static final WorkflowStatus WAITING = WorkflowStatus.WORKFLOW_STATUS_WAITING;
  private static final WorkflowStatus COMPLETED = WorkflowStatus.WORKFLOW_STATUS_COMPLETED;
  private static final WorkflowStatus FAILED = WorkflowStatus.WORKFLOW_STATUS_FAILED;
  private static final StartWorkflowRequest START = StartWorkflowRequest.newBuilder().setDefinition("d").build();

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

  private static Workflow workflow(long revision, WorkflowStatus status) {
    return Workflow.newBuilder().setName("workflows/w").setWorkflowId("w").setRevision(revision).setStatus(status).build();
  }

  private static WatchWorkflowResponse step(long revision, WorkflowStatus status) {
    return WatchWorkflowResponse.newBuilder()
        .setType(WatchEventType.WATCH_EVENT_TYPE_STEP)
        .setRevision(revision)
        .setWorkflow(workflow(revision, status))
        .build();
  }

  private void startsAs(WorkflowStatus status) {
    fake.startWorkflow = r -> StartWorkflowResponse.newBuilder().setWorkflow(workflow(1, status)).build();
  }

  @Test
  void aStartThatRestsReturnsAtOnceWithARequestId() {
    startsAs(WAITING);
    Workflow wf = client.execute(START, Until.REST, null);
    assertEquals(WAITING, wf.getStatus());
    StartWorkflowRequest sent = (StartWorkflowRequest) fake.requests.get(0);
    assertFalse(sent.getRequestId().isEmpty(), "the start carries a request id");
    assertEquals(0, fake.requests.stream().filter(WatchWorkflowRequest.class::isInstance).count());
  }

  @Test
  void untilFinishFollowsPastAWaitFromTheStartsRevision() {
    startsAs(RUNNING);
    fake.watchWorkflow = (request, observer) -> {
      observer.onNext(step(2, WAITING));
      observer.onNext(step(3, COMPLETED));
    };
    Workflow wf = client.execute(START, Until.FINISH, Duration.ofSeconds(10));
    assertEquals(3, wf.getRevision());
    assertEquals(COMPLETED, wf.getStatus());
    WatchWorkflowRequest watched =
        fake.requests.stream().filter(WatchWorkflowRequest.class::isInstance).map(WatchWorkflowRequest.class::cast).findFirst().orElseThrow();
    assertEquals(1, watched.getAfterRevision());
  }

  @Test
  void untilRestStopsAtTheFirstWait() {
    startsAs(RUNNING);
    fake.watchWorkflow = (request, observer) -> {
      observer.onNext(step(2, RUNNING));
      observer.onNext(step(3, WAITING));
    };
    assertEquals(3, client.execute(START, Until.REST, null).getRevision());
  }

  @Test
  void aTimeoutSaysTheInstanceGoesOn() {
    startsAs(RUNNING);
    fake.watchWorkflow = (request, observer) -> observer.onNext(step(2, RUNNING));
    fake.getWorkflow = r -> GetWorkflowResponse.newBuilder().setWorkflow(workflow(2, RUNNING)).build();
    ExecutionTimedOutException late =
        assertThrows(ExecutionTimedOutException.class, () -> client.execute(START, Until.FINISH, Duration.ofMillis(300)));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, late.code());
    assertNotNull(late.workflow());
    assertEquals(2, late.workflow().getRevision());
    assertEquals(RUNNING, late.workflow().getStatus());
  }

  @Test
  void aFailedInstanceIsReturnedNotThrown() {
    startsAs(FAILED);
    assertEquals(FAILED, client.execute(START, Until.FINISH, null).getStatus());
  }
}
