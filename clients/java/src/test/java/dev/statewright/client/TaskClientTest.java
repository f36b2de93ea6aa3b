package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.CompleteTaskResponse;
import dev.statewright.v1.FailTaskRequest;
import dev.statewright.v1.GetTaskRequest;
import dev.statewright.v1.GetTaskResponse;
import dev.statewright.v1.HeartbeatTaskResponse;
import dev.statewright.v1.ListTasksRequest;
import dev.statewright.v1.ListTasksResponse;
import dev.statewright.v1.Task;
import dev.statewright.v1.TaskError;
import dev.statewright.v1.TaskStatus;
import dev.statewright.v1.Workflow;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The client's TaskService calls, for workers of one's own. */
class TaskClientTest {
  private FakeService fake;
  private FakeTaskService tasks;
  private StatewrightClient client;

  @BeforeEach
  void setUp() throws Exception {
    fake = new FakeService();
    tasks = fake.tasks;
    client = new StatewrightClient(fake.channel);
  }

  @AfterEach
  void tearDown() {
    client.close();
    fake.close();
  }

  private static Task task(String id) {
    return Task.newBuilder().setName("workflows/w/tasks/" + id).setQueue("payments").setLeaseToken("lease-" + id).setAttempt(1).build();
  }

  @Test
  void pollLeasesTasksWithADeadlineBeyondItsWait() {
    tasks.offer(task("a"), task("b"), task("c"));
    List<Task> leased = client.pollTasks("payments", "me@here", 2, Duration.ofSeconds(3));
    assertEquals(List.of("workflows/w/tasks/a", "workflows/w/tasks/b"), leased.stream().map(Task::getName).toList());
    assertEquals("me@here", tasks.polls.get(0).getIdentity());
    assertEquals(2, tasks.polls.get(0).getMaxTasks());
    assertEquals(3, tasks.polls.get(0).getWait().getSeconds());
    long left = tasks.pollDeadlines.get(0).timeRemaining(TimeUnit.MILLISECONDS);
    assertTrue(left > 3_000 && left <= 8_000, "poll deadline " + left);
  }

  @Test
  void heartbeatSendsDetailsUnderTheConfiguredDeadline() {
    tasks.heartbeat = request -> HeartbeatTaskResponse.newBuilder().setCancelRequested(true).build();
    HeartbeatTaskResponse answer = client.heartbeatTask("workflows/w/tasks/a", "lease-a", Map.of("done", 3));
    assertTrue(answer.getCancelRequested());
    assertEquals("lease-a", tasks.heartbeats.get(0).getLeaseToken());
    assertEquals(Map.of("done", 3L), Structs.toMap(tasks.heartbeats.get(0).getDetails()));
    long left = tasks.callDeadlines.get(0).timeRemaining(TimeUnit.MILLISECONDS);
    assertTrue(left > 25_000 && left <= 30_000, "heartbeat deadline " + left);
  }

  @Test
  void aRetriedCompletionKeepsItsGeneratedRequestId() {
    AtomicInteger attempts = new AtomicInteger();
    tasks.complete = request -> {
      if (attempts.incrementAndGet() < 3) {
        throw Status.UNAVAILABLE.withDescription("storage down").asRuntimeException();
      }
      return CompleteTaskResponse.newBuilder().setWorkflow(Workflow.newBuilder().setName("workflows/w").setRevision(4)).build();
    };
    Workflow after = client.completeTask("workflows/w/tasks/a", "lease-a", Map.of("id", "ch-1"), null);
    assertEquals(4, after.getRevision());
    assertEquals(3, tasks.completes.size());
    String id = tasks.completes.get(0).getRequestId();
    assertFalse(id.isEmpty());
    for (CompleteTaskRequest c : tasks.completes) {
      assertEquals(id, c.getRequestId());
      assertEquals(Map.of("id", "ch-1"), Structs.toMap(c.getResult()));
    }

    client.completeTask("workflows/w/tasks/b", "lease-b", Map.of(), "mine");
    assertEquals("mine", tasks.completes.get(3).getRequestId());
  }

  @Test
  void failGetsARequestIdAndLostLeasesSurfaceWithTheirReason() {
    client.failTask(FailTaskRequest.newBuilder().setName("workflows/w/tasks/a").setLeaseToken("lease-a").setError(TaskError.newBuilder().setType("X")).build());
    assertFalse(tasks.fails.get(0).getRequestId().isEmpty());

    tasks.fail = request -> {
      throw FakeService.error(Status.Code.FAILED_PRECONDITION, "LEASE_SUPERSEDED", Map.of());
    };
    StatewrightException e =
        assertThrows(
            StatewrightException.class,
            () -> client.failTask(FailTaskRequest.newBuilder().setName("workflows/w/tasks/a").setLeaseToken("old").build()));
    assertEquals(Status.Code.FAILED_PRECONDITION, e.code());
    assertEquals("LEASE_SUPERSEDED", e.reason());
    assertEquals(2, tasks.fails.size(), "FAILED_PRECONDITION must not be retried");
  }

  @Test
  void getAndListTasks() {
    tasks.getTask = request -> {
      if (!request.getName().endsWith("/a")) {
        throw FakeService.error(Status.Code.NOT_FOUND, "TASK_NOT_FOUND", Map.of());
      }
      return GetTaskResponse.newBuilder().setTask(task("a").toBuilder().setLeaseToken("").setStatus(TaskStatus.TASK_STATUS_SCHEDULED)).build();
    };
    assertEquals(TaskStatus.TASK_STATUS_SCHEDULED, client.getTask("workflows/w/tasks/a").getStatus());
    assertEquals("TASK_NOT_FOUND", assertThrows(StatewrightException.class, () -> client.getTask("workflows/w/tasks/z")).reason());
    long left = tasks.callDeadlines.get(0).timeRemaining(TimeUnit.MILLISECONDS);
    assertTrue(left > 5_000 && left <= 10_000, "read deadline " + left);

    tasks.listTasks = request -> switch (request.getPageToken()) {
      case "" -> ListTasksResponse.newBuilder().addTasks(task("a")).addTasks(task("b")).setNextPageToken("p2").build();
      case "p2" -> ListTasksResponse.newBuilder().addTasks(task("c")).build();
      default -> throw Status.INVALID_ARGUMENT.asRuntimeException();
    };
    ListTasksRequest filter = ListTasksRequest.newBuilder().setQueue("payments").setStatus(TaskStatus.TASK_STATUS_LEASED).setPageSize(2).build();
    List<Task> all = client.listTasks(filter);
    assertEquals(List.of("workflows/w/tasks/a", "workflows/w/tasks/b", "workflows/w/tasks/c"), all.stream().map(Task::getName).toList());
    List<ListTasksRequest> pages =
        tasks.reads.stream().filter(ListTasksRequest.class::isInstance).map(ListTasksRequest.class::cast).toList();
    assertEquals(2, pages.size());
    assertEquals("p2", pages.get(1).getPageToken());
    assertEquals("payments", pages.get(1).getQueue());
    assertEquals(TaskStatus.TASK_STATUS_LEASED, pages.get(1).getStatus());
    assertEquals(List.of(GetTaskRequest.newBuilder().setName("workflows/w/tasks/a").build()), tasks.reads.subList(0, 1));
  }
}
