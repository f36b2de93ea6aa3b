package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.v1.GetWorkflowRequest;
import dev.statewright.v1.GetWorkflowResponse;
import dev.statewright.v1.WatchEventType;
import dev.statewright.v1.WatchWorkflowRequest;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowStatus;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class WatchTest {
  // Reconnect delays of a millisecond keep the tests fast; the logic is the same as at 0.1 s.
  private static final WatchOptions FAST =
      WatchOptions.defaults().withBackoff(Duration.ofMillis(1), Duration.ofMillis(2)).withReconnectBudget(Duration.ofSeconds(5));

  private static final WorkflowStatus RUNNING = WorkflowStatus.WORKFLOW_STATUS_RUNNING;
  private static final WorkflowStatus WAITING = WorkflowStatus.WORKFLOW_STATUS_WAITING;
  private static final WorkflowStatus COMPLETED = WorkflowStatus.WORKFLOW_STATUS_COMPLETED;

  private FakeService fake;
  private StatewrightClient client;
  private final AtomicInteger streams = new AtomicInteger();
  private final CountDownLatch serverSawCancel = new CountDownLatch(1);

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

  private static WatchWorkflowResponse current(long revision, WorkflowStatus status) {
    return WatchWorkflowResponse.newBuilder()
        .setType(WatchEventType.WATCH_EVENT_TYPE_CURRENT)
        .setRevision(revision)
        .setWorkflow(workflow(revision, status))
        .build();
  }

  private static WatchWorkflowResponse step(long revision, WorkflowStatus status) {
    return current(revision, status).toBuilder().setType(WatchEventType.WATCH_EVENT_TYPE_STEP).build();
  }

  /** Counts the stream and notes when the client cancels it. */
  private void opened(StreamObserver<WatchWorkflowResponse> observer) {
    streams.incrementAndGet();
    ((ServerCallStreamObserver<WatchWorkflowResponse>) observer).setOnCancelHandler(serverSawCancel::countDown);
  }

  private WatchWorkflowRequest watchRequest(int index) {
    return fake.requests.stream()
        .filter(WatchWorkflowRequest.class::isInstance)
        .map(WatchWorkflowRequest.class::cast)
        .skip(index)
        .findFirst()
        .orElseThrow();
  }

  private long getWorkflowCalls() {
    return fake.requests.stream().filter(GetWorkflowRequest.class::isInstance).count();
  }

  private List<Long> collect(String name, WatchOptions options) {
    List<Long> revisions = new ArrayList<>();
    client.watch(name, options, m -> revisions.add(m.getRevision()));
    return revisions;
  }

  @Test
  void deliversCurrentThenStepsAndStopsAfterTheTerminalRevision() throws Exception {
    fake.watchWorkflow = (request, observer) -> {
      opened(observer);
      observer.onNext(current(1, WAITING));
      observer.onNext(step(2, RUNNING));
      observer.onNext(step(3, COMPLETED));
      // The stream stays open: the client must stop on the terminal revision by itself.
    };
    List<WatchWorkflowResponse> seen = new ArrayList<>();
    client.watch("w", FAST, seen::add);

    assertEquals(List.of(1L, 2L, 3L), seen.stream().map(WatchWorkflowResponse::getRevision).toList());
    assertEquals(WatchEventType.WATCH_EVENT_TYPE_CURRENT, seen.get(0).getType());
    assertEquals(WatchEventType.WATCH_EVENT_TYPE_STEP, seen.get(2).getType());
    assertTrue(serverSawCancel.await(5, TimeUnit.SECONDS), "the finished watch left its stream open");
    assertEquals(1, streams.get());
    assertEquals(0, getWorkflowCalls());
    assertEquals("workflows/w", watchRequest(0).getName());
    assertFalse(watchRequest(0).hasAfterRevision());
  }

  @Test
  void acceptsAResourceNameAndByDefaultSetsNoDeadline() {
    fake.watchWorkflow = (request, observer) -> {
      observer.onNext(current(4, COMPLETED));
      observer.onCompleted();
    };
    assertEquals(List.of(4L), collect("workflows/w", WatchOptions.defaults()));
    assertEquals("workflows/w", watchRequest(0).getName());
    assertNull(fake.watchDeadlines.get(0), "a watch lasts as long as the instance");

    assertEquals(List.of(4L), collect("w", WatchOptions.defaults().withStreamTimeout(Duration.ofSeconds(5))));
    assertNotNull(fake.watchDeadlines.get(1));
    long left = fake.watchDeadlines.get(1).timeRemaining(TimeUnit.MILLISECONDS);
    assertTrue(left > 3_000 && left <= 5_000, "stream deadline " + left);
  }

  @Test
  void reconnectsAfterTheLastRevisionAndDropsTheReplayedOne() {
    fake.watchWorkflow = (request, observer) -> {
      if (streams.incrementAndGet() == 1) {
        observer.onNext(current(1, WAITING));
        observer.onNext(step(2, RUNNING));
        observer.onError(Status.UNAVAILABLE.withDescription("server restarting").asRuntimeException());
      } else {
        // A replica may replay a revision the client already handed over.
        observer.onNext(step(2, RUNNING));
        observer.onNext(step(3, RUNNING));
        observer.onNext(step(4, COMPLETED));
        observer.onCompleted();
      }
    };
    assertEquals(List.of(1L, 2L, 3L, 4L), collect("w", FAST));
    assertEquals(2, streams.get());
    assertFalse(watchRequest(0).hasAfterRevision());
    assertEquals(2, watchRequest(1).getAfterRevision());
    assertEquals("workflows/w", watchRequest(1).getName());
  }

  @Test
  void aRateLimitedReconnectIsTriedAgainNotThrown() {
    fake.watchWorkflow = (request, observer) -> {
      int n = streams.incrementAndGet();
      if (n == 1) {
        observer.onNext(current(1, WAITING));
        observer.onError(Status.UNAVAILABLE.withDescription("server restarting").asRuntimeException());
      } else if (n == 2) {
        // Many watchers reconnecting at once: the server's rate limit answers some of them.
        observer.onError(FakeService.rateLimited(Duration.ofMillis(5)));
      } else {
        observer.onNext(step(2, COMPLETED));
        observer.onCompleted();
      }
    };
    assertEquals(List.of(1L, 2L), collect("w", FAST));
    assertEquals(3, streams.get());
    assertEquals(1, watchRequest(2).getAfterRevision());
  }

  @Test
  void reconnectsWithTheCallersAfterRevisionUntilSomethingWasHandedOver() {
    fake.watchWorkflow = (request, observer) -> {
      if (streams.incrementAndGet() == 1) {
        // INTERNAL without an ErrorInfo: a broken connection (RST_STREAM), not the server's verdict.
        observer.onError(Status.INTERNAL.withDescription("stream reset").asRuntimeException());
      } else {
        observer.onNext(step(5, RUNNING));
        observer.onNext(step(6, COMPLETED));
        observer.onCompleted();
      }
    };
    assertEquals(List.of(6L), collect("w", FAST.withAfterRevision(5)));
    assertEquals(5, watchRequest(0).getAfterRevision());
    assertEquals(5, watchRequest(1).getAfterRevision());
  }

  @Test
  void finalErrorsSurfaceAtOnceWithTheirErrorInfo() {
    fake.watchWorkflow = (request, observer) -> {
      streams.incrementAndGet();
      observer.onError(FakeService.error(Status.Code.NOT_FOUND, "WORKFLOW_NOT_FOUND", Map.of("workflow_id", "w")));
    };
    StatewrightException e = assertThrows(StatewrightException.class, () -> collect("w", FAST));
    assertEquals(Status.Code.NOT_FOUND, e.code());
    assertEquals("WORKFLOW_NOT_FOUND", e.reason());
    assertEquals(ErrorInfos.DOMAIN, e.domain());
    assertEquals(Map.of("workflow_id", "w"), e.metadata());
    assertEquals(1, streams.get());

    // A transport-looking code is final too once it carries the server's own reason.
    fake.watchWorkflow = (request, observer) -> {
      streams.incrementAndGet();
      observer.onError(FakeService.error(Status.Code.INTERNAL, "INTERNAL", Map.of()));
    };
    e = assertThrows(StatewrightException.class, () -> collect("w", FAST));
    assertEquals("INTERNAL", e.reason());
    assertEquals(2, streams.get());
    assertEquals(0, getWorkflowCalls());
  }

  @Test
  void endsQuietlyWhenTheInstanceAlreadyEndedAtASeenRevision() {
    fake.watchWorkflow = (request, observer) -> {
      streams.incrementAndGet();
      observer.onCompleted();
    };
    fake.getWorkflow = request -> GetWorkflowResponse.newBuilder().setWorkflow(workflow(5, COMPLETED)).build();
    assertEquals(List.of(), collect("w", FAST.withAfterRevision(5)));
    assertEquals(1, streams.get());
    assertEquals(1, getWorkflowCalls());
  }

  @Test
  void reconnectsWhenAStreamEndsOkBeforeTheTerminalRevision() {
    fake.watchWorkflow = (request, observer) -> {
      if (streams.incrementAndGet() == 1) {
        observer.onNext(current(1, RUNNING));
        observer.onCompleted(); // a draining replica
      } else {
        observer.onNext(step(2, COMPLETED));
        observer.onCompleted();
      }
    };
    fake.getWorkflow = request -> GetWorkflowResponse.newBuilder().setWorkflow(workflow(1, RUNNING)).build();
    assertEquals(List.of(1L, 2L), collect("w", FAST));
    assertEquals(1, watchRequest(1).getAfterRevision());
    assertEquals(1, getWorkflowCalls());
  }

  @Test
  void givesUpWithTheLastErrorOnceTheBudgetRunsOut() {
    fake.watchWorkflow = (request, observer) -> {
      int stream = streams.incrementAndGet();
      // Every reconnect replays revision 1: that is no progress, so the budget keeps running.
      // (The message also stops gRPC's own transparent retry of the failed stream.)
      observer.onNext(stream == 1 ? current(1, RUNNING) : step(1, RUNNING));
      observer.onError(Status.UNAVAILABLE.withDescription("replica " + stream + " down").asRuntimeException());
    };
    List<Long> revisions = new ArrayList<>();
    WatchOptions options = FAST.withReconnectBudget(Duration.ofMillis(30));
    StatewrightException e =
        assertThrows(StatewrightException.class, () -> client.watch("w", options, m -> revisions.add(m.getRevision())));
    assertEquals(Status.Code.UNAVAILABLE, e.code());
    assertTrue(streams.get() >= 2, "streams " + streams.get());
    assertTrue(e.getMessage().endsWith("replica " + streams.get() + " down"), e.getMessage());
    assertEquals(List.of(1L), revisions);
  }

  @Test
  void givesUpWhenStreamsKeepEndingBeforeATerminalRevision() {
    fake.watchWorkflow = (request, observer) -> {
      streams.incrementAndGet();
      observer.onCompleted();
    };
    fake.getWorkflow = request -> GetWorkflowResponse.newBuilder().setWorkflow(workflow(3, RUNNING)).build();
    WatchOptions options = FAST.withAfterRevision(3).withReconnectBudget(Duration.ofMillis(20));
    StatewrightException e = assertThrows(StatewrightException.class, () -> collect("w", options));
    assertEquals(Status.Code.UNAVAILABLE, e.code());
    assertTrue(e.getMessage().contains("watch of workflows/w kept ending before a terminal revision"), e.getMessage());
    assertTrue(streams.get() >= 2, "streams " + streams.get());
  }

  @Test
  void closeEndsTheStreamWithoutReconnecting() throws Exception {
    fake.watchWorkflow = (request, observer) -> {
      opened(observer);
      observer.onNext(current(1, WAITING));
    };
    WatchStream watch = client.watch("w", FAST);
    assertEquals(1, watch.next().getRevision());
    // Another thread blocks for the next revision; close() must release it, whether it is
    // already waiting or not yet.
    CompletableFuture<Boolean> more = CompletableFuture.supplyAsync(watch::hasNext);
    watch.close();
    assertFalse(more.get(5, TimeUnit.SECONDS));
    assertFalse(watch.hasNext());
    assertTrue(serverSawCancel.await(5, TimeUnit.SECONDS));
    assertEquals(1, streams.get());
  }

  @Test
  void cancellingTheCallersContextEndsTheWatchWithoutReconnecting() {
    fake.watchWorkflow = (request, observer) -> {
      opened(observer);
      observer.onNext(current(1, WAITING));
    };
    Context.CancellableContext context = Context.current().withCancellation();
    StatewrightException e =
        assertThrows(
            StatewrightException.class, () -> context.run(() -> client.watch("w", FAST, m -> context.cancel(null))));
    assertEquals(Status.Code.CANCELLED, e.code());
    assertEquals(1, streams.get());
  }

  @Test
  void interruptingTheThreadEndsTheWatchWithoutReconnecting() {
    fake.watchWorkflow = (request, observer) -> {
      opened(observer);
      observer.onNext(current(1, WAITING));
    };
    try {
      StatewrightException e =
          assertThrows(StatewrightException.class, () -> client.watch("w", FAST, m -> Thread.currentThread().interrupt()));
      assertEquals(Status.Code.CANCELLED, e.code());
      assertTrue(Thread.currentThread().isInterrupted(), "the interrupt must stay visible to the caller");
    } finally {
      Thread.interrupted();
    }
    assertEquals(1, streams.get());
  }

  @Test
  void aShutDownChannelEndsTheWatchWithoutReconnecting() {
    fake.watchWorkflow = (request, observer) -> {
      opened(observer);
      observer.onNext(current(1, WAITING));
    };
    StatewrightException e =
        assertThrows(StatewrightException.class, () -> client.watch("w", FAST, m -> fake.channel.shutdownNow()));
    assertEquals(Status.Code.UNAVAILABLE, e.code());
    assertEquals(1, streams.get());
  }

  @Test
  void optionsRejectNonsense() {
    WatchOptions defaults = WatchOptions.defaults();
    assertTrue(defaults.afterRevision().isEmpty());
    assertTrue(defaults.streamTimeout().isEmpty());
    assertEquals(Duration.ofSeconds(30), defaults.reconnectBudget());
    assertEquals(Duration.ofMillis(100), defaults.initialBackoff());
    assertEquals(Duration.ofSeconds(2), defaults.maxBackoff());
    assertThrows(IllegalArgumentException.class, () -> defaults.withAfterRevision(-1));
    assertThrows(IllegalArgumentException.class, () -> defaults.withStreamTimeout(Duration.ZERO));
    assertThrows(IllegalArgumentException.class, () -> defaults.withReconnectBudget(Duration.ofSeconds(-1)));
    assertThrows(IllegalArgumentException.class, () -> defaults.withBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)));
  }
}
