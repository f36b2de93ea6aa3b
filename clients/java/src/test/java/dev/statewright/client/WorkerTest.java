package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.Timestamp;
import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.FailTaskRequest;
import dev.statewright.v1.HeartbeatTaskRequest;
import dev.statewright.v1.HeartbeatTaskResponse;
import dev.statewright.v1.PollTasksRequest;
import dev.statewright.v1.Task;
import dev.statewright.v1.TaskStatus;
import io.grpc.Status;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class WorkerTest {
  private static final long MS = 1_000_000;
  /** Bounds every wait of a test, so a broken worker fails the test instead of hanging it. */
  private static final long PATIENCE_SECONDS = 10;

  private FakeService fake;
  private FakeTaskService tasks;
  private StatewrightClient client;
  private Worker worker;
  /** Every backoff delay the worker chose, in nanoseconds. */
  private final List<Long> delays = new CopyOnWriteArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    fake = new FakeService();
    tasks = fake.tasks;
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

  /** Waits (bounded) for {@code condition}; fails the test if it never holds. */
  private static void await(BooleanSupplier condition, String what) {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_SECONDS);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - end > 0) {
        fail("gave up waiting for " + what);
      }
      try {
        Thread.sleep(2);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private static void await(CountDownLatch latch, String what) throws InterruptedException {
    assertTrue(latch.await(PATIENCE_SECONDS, TimeUnit.SECONDS), "gave up waiting for " + what);
  }

  private Worker.Builder builder() {
    // Backoff steps of milliseconds keep the tests fast; the logic is the one of 0.1 s to 5 s.
    return Worker.builder(client)
        .identity("test-worker")
        .pollWait(Duration.ofSeconds(5))
        .backoff(Duration.ofMillis(1), Duration.ofMillis(8))
        .backoffListener(delays::add);
  }

  private static Task task(String id, String queue, Map<String, ?> input) {
    return Task.newBuilder()
        .setName("workflows/w-" + id + "/tasks/" + id)
        .setWorkflow("workflows/w-" + id)
        .setState("charge")
        .setQueue(queue)
        .setInput(Structs.toStruct(input))
        .setAttempt(1)
        .setLeaseToken("lease-" + id)
        .setLeaseExpireTime(FakeTaskService.fromNow(Duration.ofSeconds(30)))
        .setStatus(TaskStatus.TASK_STATUS_LEASED)
        .build();
  }

  private static Task task(String id) {
    return task(id, "payments", Map.of("order", id));
  }

  private static void assertWithin(long step, long delay) {
    assertTrue(delay >= step / 2 && delay <= step, "delay " + delay + " outside [" + step / 2 + ", " + step + "]");
  }

  private FailTaskRequest failOf(String name) {
    return tasks.fails.stream().filter(f -> f.getName().equals(name)).findFirst().orElseThrow();
  }

  // --- results -------------------------------------------------------------------------------

  @Test
  void completesWithWhatTheHandlerReturns() {
    tasks.offer(task("t1", "payments", Map.of("order", "o-1", "amount", 12)));
    List<TaskContext> seen = new CopyOnWriteArrayList<>();
    worker = builder().register("payments", t -> {
      seen.add(t);
      return Map.of("id", "ch-" + t.input().get("order"));
    }).build();
    worker.start();
    await(() -> tasks.completes.size() == 1, "the completion");

    CompleteTaskRequest done = tasks.completes.get(0);
    assertEquals("workflows/w-t1/tasks/t1", done.getName());
    assertEquals("lease-t1", done.getLeaseToken());
    assertEquals("workflows/w-t1/tasks/t1#1#complete", done.getRequestId());
    assertEquals(Map.of("id", "ch-o-1"), Structs.toMap(done.getResult()));
    assertEquals(List.of(), tasks.fails);

    TaskContext t = seen.get(0);
    assertEquals(Map.of("order", "o-1", "amount", 12L), t.input());
    assertEquals(1, t.attempt());
    assertEquals("workflows/w-t1/tasks/t1", t.name());
    assertEquals("workflows/w-t1", t.workflow());
    assertEquals("payments", t.queue());
    assertEquals("charge", t.state());
    assertEquals(Map.of(), t.heartbeatDetails());
    assertFalse(t.isCancelled());

    PollTasksRequest poll = tasks.polls.get(0);
    assertEquals("payments", poll.getQueue());
    assertEquals("test-worker", poll.getIdentity());
    assertEquals(Worker.DEFAULT_CONCURRENCY, poll.getMaxTasks());
    assertEquals(StatewrightClient.DEFAULT_MAX_RECEIVE_BYTES, poll.getMaxBytes());
    assertEquals(5, poll.getWait().getSeconds());
    // The call outlives the long poll it carries.
    long left = tasks.pollDeadlines.get(0).timeRemaining(TimeUnit.MILLISECONDS);
    assertTrue(left > 5_000 && left <= 10_000, "poll deadline " + left);
  }

  @Test
  void aThrownExceptionFailsTheAttemptRetryablyUnderItsClassName() {
    tasks.offer(task("t1"), task("t2").toBuilder().setAttempt(3).build(), task("t3"));
    worker = builder().register("payments", t -> switch (t.name()) {
      case "workflows/w-t1/tasks/t1" -> throw new IllegalStateException("card service down");
      case "workflows/w-t2/tasks/t2" -> throw new java.io.IOException("reset by peer");
      default -> Map.of("not plain data", new Object()); // the result itself cannot be sent
    }).build();
    worker.start();
    await(() -> tasks.fails.size() == 3, "three failures");

    FailTaskRequest first = failOf("workflows/w-t1/tasks/t1");
    assertEquals("IllegalStateException", first.getError().getType());
    assertEquals("card service down", first.getError().getMessage());
    assertEquals("lease-t1", first.getLeaseToken());
    assertFalse(first.getNonRetryable());
    assertFalse(first.hasRetryDelay());
    assertEquals("workflows/w-t1/tasks/t1#1#fail", first.getRequestId());

    FailTaskRequest second = failOf("workflows/w-t2/tasks/t2");
    assertEquals("IOException", second.getError().getType());
    assertEquals("workflows/w-t2/tasks/t2#3#fail", second.getRequestId());

    assertEquals("IllegalArgumentException", failOf("workflows/w-t3/tasks/t3").getError().getType());
    assertEquals(List.of(), tasks.completes);
  }

  @Test
  void aTaskFailureCarriesItsTypeDetailsAndOptions() {
    tasks.offer(task("t1"), task("t2"));
    worker = builder().register("payments", t -> {
      if (t.name().endsWith("t1")) {
        throw TaskFailure.builder("CARD_DECLINED")
            .message("amount 1200 over the limit")
            .details(Map.of("amount", 1200, "limit", 1000))
            .nonRetryable()
            .build();
      }
      // Handlers that wait on futures get the failure wrapped; the worker still sees it.
      throw new CompletionException(
          TaskFailure.builder("RATE_LIMITED")
              .retryDelay(Duration.ofSeconds(7))
              .closeKeyUntil(java.time.Instant.ofEpochSecond(1_900_000_000L))
              .build());
    }).build();
    worker.start();
    await(() -> tasks.fails.size() == 2, "two failures");

    FailTaskRequest declined = failOf("workflows/w-t1/tasks/t1");
    assertEquals("CARD_DECLINED", declined.getError().getType());
    assertEquals("amount 1200 over the limit", declined.getError().getMessage());
    assertEquals(Map.of("amount", 1200L, "limit", 1000L), Structs.toMap(declined.getError().getDetails()));
    assertTrue(declined.getNonRetryable());
    assertFalse(declined.hasRetryDelay());
    assertFalse(declined.hasCloseKeyUntil());

    FailTaskRequest limited = failOf("workflows/w-t2/tasks/t2");
    assertEquals("RATE_LIMITED", limited.getError().getType());
    assertFalse(limited.getNonRetryable());
    assertEquals(7, limited.getRetryDelay().getSeconds());
    assertEquals(1_900_000_000L, limited.getCloseKeyUntil().getSeconds());
  }

  // --- heartbeats and cancellation -------------------------------------------------------------

  @Test
  void heartbeatsCarryTheHandlersDetailsAndExtendTheLease() throws Exception {
    // A short first lease, as the server gives after a poll; the heartbeat extends it.
    tasks.offer(task("t1").toBuilder().setLeaseExpireTime(FakeTaskService.fromNow(Duration.ofMillis(300))).build());
    Timestamp extended = FakeTaskService.fromNow(Duration.ofSeconds(60));
    tasks.heartbeat = request -> HeartbeatTaskResponse.newBuilder().setLeaseExpireTime(extended).build();
    AtomicReference<TaskContext> running = new AtomicReference<>();
    CountDownLatch finish = new CountDownLatch(1);
    worker = builder().register("payments", t -> {
      running.set(t);
      t.heartbeat(Map.of("charged", 0.5));
      finish.await();
      return Map.of();
    }).build();
    worker.start();
    // An automatic heartbeat may come first; the handler's details go out with the next one.
    await(() -> tasks.heartbeats.stream().anyMatch(HeartbeatTaskRequest::hasDetails), "a heartbeat with details");
    HeartbeatTaskRequest beat = tasks.heartbeats.stream().filter(HeartbeatTaskRequest::hasDetails).findFirst().orElseThrow();
    assertEquals("workflows/w-t1/tasks/t1", beat.getName());
    assertEquals("lease-t1", beat.getLeaseToken());
    assertEquals(Map.of("charged", 0.5), Structs.toMap(beat.getDetails()));
    Instant expected = Instant.ofEpochSecond(extended.getSeconds(), extended.getNanos());
    await(() -> expected.equals(running.get().leaseExpireTime()), "the extended lease");

    finish.countDown();
    await(() -> tasks.completes.size() == 1, "the completion");
    assertThrows(IllegalArgumentException.class, () -> running.get().heartbeat(Map.of("x", new Object())));
  }

  @Test
  void heartbeatsRepeatBeforeEachLeaseEndsKeepingThePreviousAttemptsDetails() throws Exception {
    Map<String, Object> progress = Map.of("step", 4L);
    tasks.offer(
        task("t1").toBuilder()
            .setAttempt(2)
            .setHeartbeatDetails(Structs.toStruct(progress))
            .setLeaseExpireTime(FakeTaskService.fromNow(Duration.ofMillis(300)))
            .build());
    // Every lease is short: only heartbeats before each one ends keep the task.
    tasks.heartbeat = request -> HeartbeatTaskResponse.newBuilder().setLeaseExpireTime(FakeTaskService.fromNow(Duration.ofMillis(300))).build();
    AtomicReference<Map<String, Object>> seen = new AtomicReference<>();
    CountDownLatch finish = new CountDownLatch(1);
    worker = builder().register("payments", t -> {
      seen.set(t.heartbeatDetails());
      finish.await();
      return Map.of();
    }).build();
    worker.start();
    await(() -> tasks.heartbeats.size() >= 3, "three heartbeats");
    finish.countDown();
    await(() -> tasks.completes.size() == 1, "the completion");

    assertEquals(progress, seen.get());
    for (HeartbeatTaskRequest beat : tasks.heartbeats) {
      assertEquals(progress, Structs.toMap(beat.getDetails()), "a heartbeat dropped the last attempt's progress");
    }
  }

  @Test
  void cancelRequestedOrALostLeaseCancelsTheHandlerAndNothingIsReported() throws Exception {
    tasks.heartbeat = request -> {
      if (request.getName().endsWith("t1")) {
        return HeartbeatTaskResponse.newBuilder().setLeaseExpireTime(FakeTaskService.fromNow(Duration.ofSeconds(30))).setCancelRequested(true).build();
      }
      if (request.getName().endsWith("t2")) {
        throw FakeService.error(Status.Code.FAILED_PRECONDITION, "LEASE_SUPERSEDED", Map.of());
      }
      throw FakeService.error(Status.Code.FAILED_PRECONDITION, "TASK_CANCELLED", Map.of());
    };
    Map<String, Boolean> cancelledAtReturn = new ConcurrentHashMap<>();
    worker = builder().concurrency(1).register("payments", t -> {
      if (t.name().endsWith("t4")) {
        return Map.of("ok", true);
      }
      CountDownLatch cancelled = new CountDownLatch(1);
      t.onCancel(cancelled::countDown);
      t.heartbeat(Map.of("started", true));
      await(cancelled, "the cancellation of " + t.name());
      AtomicInteger late = new AtomicInteger();
      t.onCancel(late::incrementAndGet); // already cancelled: runs at once
      assertEquals(1, late.get());
      cancelledAtReturn.put(t.name(), t.isCancelled());
      if (t.name().endsWith("t3")) {
        throw new IllegalStateException("stopped");
      }
      return Map.of("late", true);
    }).build();
    tasks.offer(task("t1"), task("t2"), task("t3"), task("t4"));
    worker.start();
    // One slot: t4 runs only after the cancelled handlers returned and their tasks were dropped.
    await(() -> tasks.completes.size() == 1, "the completion of t4");

    assertEquals(
        Map.of("workflows/w-t1/tasks/t1", true, "workflows/w-t2/tasks/t2", true, "workflows/w-t3/tasks/t3", true), cancelledAtReturn);
    assertEquals("workflows/w-t4/tasks/t4", tasks.completes.get(0).getName());
    assertEquals(List.of(), tasks.fails);
  }

  // --- concurrency -------------------------------------------------------------------------------

  @Test
  void pollsAskForTheFreeSlotsOnlyAndNeverRunMoreThanTheLimit() throws Exception {
    Map<String, CountDownLatch> release = new ConcurrentHashMap<>();
    for (String id : List.of("t1", "t2", "t3")) {
      release.put("workflows/w-" + id + "/tasks/" + id, new CountDownLatch(1));
    }
    AtomicInteger running = new AtomicInteger();
    AtomicInteger mostRunning = new AtomicInteger();
    List<String> started = new CopyOnWriteArrayList<>();
    worker = builder().concurrency(2).register("payments", t -> {
      mostRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
      started.add(t.name());
      try {
        release.get(t.name()).await();
      } finally {
        running.decrementAndGet();
      }
      return Map.of();
    }).build();
    tasks.offer(task("t1"), task("t2"), task("t3"));
    worker.start();

    await(() -> started.size() == 2, "two handlers");
    assertEquals(2, tasks.polls.get(0).getMaxTasks());
    // Both slots are taken: the worker must not poll (it could not start what it leased).
    assertEquals(1, tasks.polls.size());

    release.get(started.get(0)).countDown();
    await(() -> started.size() == 3, "the third handler");
    assertEquals(2, tasks.polls.size());
    assertEquals(1, tasks.polls.get(1).getMaxTasks());

    release.values().forEach(CountDownLatch::countDown);
    await(() -> tasks.completes.size() == 3, "three completions");
    assertEquals(2, mostRunning.get());
    for (PollTasksRequest poll : tasks.polls) {
      assertTrue(poll.getMaxTasks() >= 1 && poll.getMaxTasks() <= 2, "max_tasks " + poll.getMaxTasks());
    }
  }

  @Test
  void eachQueueHasItsHandlerAndItsShareOfTheSlots() {
    tasks.offer(task("p1", "payments", Map.of()), task("s1", "shipping", Map.of()));
    Map<String, String> handledBy = new ConcurrentHashMap<>();
    worker = builder()
        .concurrency(4)
        .register("payments", t -> {
          handledBy.put(t.name(), "payments:" + t.queue());
          return Map.of();
        })
        .register("shipping", t -> {
          handledBy.put(t.name(), "shipping:" + t.queue());
          return Map.of();
        })
        .build();
    assertEquals(List.of("payments", "shipping"), List.copyOf(worker.queues()));
    worker.start();
    await(() -> tasks.completes.size() == 2, "both completions");

    assertEquals(Map.of("workflows/w-p1/tasks/p1", "payments:payments", "workflows/w-s1/tasks/s1", "shipping:shipping"), handledBy);
    for (PollTasksRequest poll : tasks.polls) {
      assertTrue(poll.getMaxTasks() >= 1 && poll.getMaxTasks() <= 2, "a poll of " + poll.getQueue() + " asked " + poll.getMaxTasks());
    }
  }

  @Test
  void handlersRunOnTheGivenExecutor() {
    ExecutorService executor = Executors.newFixedThreadPool(2, r -> new Thread(r, "caller-pool"));
    try {
      tasks.offer(task("t1"));
      worker = builder().executor(executor).register("payments", t -> Map.of("thread", Thread.currentThread().getName())).build();
      worker.start();
      await(() -> tasks.completes.size() == 1, "the completion");
      assertEquals(Map.of("thread", "caller-pool"), Structs.toMap(tasks.completes.get(0).getResult()));
      worker.close();
      assertFalse(executor.isShutdown(), "the worker shut down an executor it does not own");
    } finally {
      executor.shutdownNow();
    }
  }

  // --- shutdown ----------------------------------------------------------------------------------

  @Test
  void closeStopsPollingAndLetsARunningHandlerFinishWithinTheGrace() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    worker = builder().concurrency(2).register("payments", t -> {
      started.countDown();
      finish.await();
      return Map.of("done", true);
    }).build();
    tasks.offer(task("t1"));
    worker.start();
    await(started, "the handler");
    await(() -> tasks.waitingPolls() == 1, "the next long poll");

    CompletableFuture<Void> closing = CompletableFuture.runAsync(() -> worker.close(Duration.ofSeconds(60)));
    await(() -> tasks.cancelledPolls.get() == 1, "the open poll to be cancelled");
    int polls = tasks.polls.size();
    assertFalse(closing.isDone(), "close returned with a handler still running inside its grace period");
    finish.countDown();
    closing.get(PATIENCE_SECONDS, TimeUnit.SECONDS);

    assertEquals(1, tasks.completes.size());
    assertEquals(Map.of("done", true), Structs.toMap(tasks.completes.get(0).getResult()));
    assertEquals(List.of(), tasks.fails);
    assertEquals(polls, tasks.polls.size());
    assertTrue(worker.awaitTermination(Duration.ZERO));
  }

  @Test
  void aHandlerStillRunningAtTheEndOfTheGraceIsReleasedCancelledAndInterrupted() throws Exception {
    ExecutorService executor = Executors.newFixedThreadPool(1);
    try {
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch callback = new CountDownLatch(1);
      CountDownLatch interrupted = new CountDownLatch(1);
      AtomicReference<TaskContext> context = new AtomicReference<>();
      worker = builder().executor(executor).register("payments", t -> {
        context.set(t);
        t.onCancel(callback::countDown);
        started.countDown();
        try {
          new CountDownLatch(1).await(); // never finishes by itself
        } catch (InterruptedException e) {
          interrupted.countDown();
          throw e;
        }
        return Map.of();
      }).build();
      tasks.offer(task("t1").toBuilder().setAttempt(2).build());
      worker.start();
      await(started, "the handler");

      worker.close(Duration.ofMillis(20));

      FailTaskRequest release = tasks.fails.get(0);
      assertEquals("workflows/w-t1/tasks/t1", release.getName());
      assertEquals("lease-t1", release.getLeaseToken());
      assertEquals(Worker.SHUTDOWN_TYPE, release.getError().getType());
      assertTrue(release.hasRetryDelay());
      assertEquals(0, release.getRetryDelay().getSeconds());
      assertEquals(0, release.getRetryDelay().getNanos());
      assertFalse(release.getNonRetryable());
      assertEquals("workflows/w-t1/tasks/t1#2#release", release.getRequestId());
      assertTrue(context.get().isCancelled());
      await(callback, "the cancellation callback");
      await(interrupted, "the interrupt");

      // Once the handler's thread is done, the worker has had every chance to report more.
      executor.shutdown();
      assertTrue(executor.awaitTermination(PATIENCE_SECONDS, TimeUnit.SECONDS));
      assertEquals(1, tasks.fails.size());
      assertEquals(List.of(), tasks.completes);
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void runBlocksUntilInterruptedThenClosesGracefully() throws Exception {
    worker = builder().register("payments", t -> Map.of()).build();
    AtomicReference<Boolean> flagKept = new AtomicReference<>();
    Thread runner = new Thread(() -> {
      worker.run();
      flagKept.set(Thread.currentThread().isInterrupted());
    });
    runner.start();
    await(() -> tasks.waitingPolls() == 1, "the long poll");
    runner.interrupt();
    runner.join(TimeUnit.SECONDS.toMillis(PATIENCE_SECONDS));
    assertFalse(runner.isAlive());
    assertTrue(flagKept.get());
    assertTrue(worker.awaitTermination(Duration.ZERO));
    assertThrows(IllegalStateException.class, worker::start);
    worker.close(); // again: a no-op
  }

  @Test
  void closingAWorkerThatNeverStartedJustEndsIt() throws Exception {
    worker = builder().register("payments", t -> Map.of()).build();
    worker.close();
    assertTrue(worker.awaitTermination(Duration.ZERO));
    assertThrows(IllegalStateException.class, worker::start);
    assertEquals(List.of(), tasks.polls);
  }

  // --- outages and errors ------------------------------------------------------------------------

  @Test
  void failedPollsBackOffExponentiallyAndStartOverAfterSuccess() {
    // DEADLINE_EXCEEDED is no code gRPC's own retry takes up: each one reaches the worker.
    io.grpc.StatusRuntimeException late = Status.DEADLINE_EXCEEDED.withDescription("slow storage").asRuntimeException();
    tasks.scriptPolls(late, late, late, task("t1"), late, task("t2"));
    worker = builder().register("payments", t -> Map.of()).build();
    worker.start();
    await(() -> tasks.completes.size() == 2, "both completions");

    assertEquals(4, delays.size(), "delays " + delays);
    assertWithin(1 * MS, delays.get(0));
    assertWithin(2 * MS, delays.get(1));
    assertWithin(4 * MS, delays.get(2));
    assertWithin(1 * MS, delays.get(3));
  }

  @Test
  void keepsPollingThroughUnavailable() {
    io.grpc.StatusRuntimeException down = Status.UNAVAILABLE.withDescription("server restarting").asRuntimeException();
    tasks.scriptPolls(down, down, down, down, down, down, down, task("t1"));
    worker = builder().register("payments", t -> Map.of()).build();
    worker.start();
    await(() -> tasks.completes.size() == 1, "the completion");
    // gRPC retries some of them itself; the rest the worker waited out.
    assertFalse(delays.isEmpty());
    assertTrue(tasks.polls.size() >= 8);
  }

  @Test
  void keepsTryingAServerThatRefusesConnections() throws Exception {
    int port;
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = socket.getLocalPort();
    }
    try (StatewrightClient nowhere = StatewrightClient.connect("127.0.0.1:" + port)) {
      worker = Worker.builder(nowhere)
          .backoff(Duration.ofMillis(1), Duration.ofMillis(8))
          .backoffListener(delays::add)
          .register("payments", t -> Map.of())
          .build();
      worker.start();
      await(() -> delays.size() >= 3, "three backoffs");
      worker.close();
    }
    assertWithin(1 * MS, delays.get(0));
    assertWithin(2 * MS, delays.get(1));
    assertWithin(4 * MS, delays.get(2));
  }

  @Test
  void leaseSupersededOrTaskCancelledOnAReportDropsTheTaskQuietly() {
    tasks.complete = request -> {
      if (request.getName().endsWith("t1")) {
        throw FakeService.error(Status.Code.FAILED_PRECONDITION, "LEASE_SUPERSEDED", Map.of());
      }
      return dev.statewright.v1.CompleteTaskResponse.getDefaultInstance();
    };
    tasks.fail = request -> {
      throw FakeService.error(Status.Code.FAILED_PRECONDITION, "TASK_CANCELLED", Map.of());
    };
    worker = builder().concurrency(1).register("payments", t -> {
      if (t.name().endsWith("t2")) {
        throw new IllegalStateException("too late anyway");
      }
      return Map.of();
    }).build();
    tasks.offer(task("t1"), task("t2"), task("t3"));
    worker.start();
    await(() -> tasks.completes.size() == 2, "the completions of t1 and t3");

    assertEquals(List.of("workflows/w-t1/tasks/t1", "workflows/w-t3/tasks/t3"), tasks.completes.stream().map(CompleteTaskRequest::getName).toList());
    assertEquals(1, tasks.fails.size(), "a dropped failure was retried");
    assertEquals(List.of(), delays);
  }

  @Test
  void anUnavailableReportIsRetriedWithTheSameRequestId() {
    AtomicInteger calls = new AtomicInteger();
    tasks.complete = request -> {
      if (calls.incrementAndGet() <= 7) {
        throw Status.UNAVAILABLE.withDescription("storage down").asRuntimeException();
      }
      return dev.statewright.v1.CompleteTaskResponse.getDefaultInstance();
    };
    tasks.offer(task("t1"));
    worker = builder().register("payments", t -> Map.of("id", "ch-1")).build();
    worker.start();
    await(() -> calls.get() == 8, "the accepted completion");

    assertEquals(8, tasks.completes.size());
    for (CompleteTaskRequest c : tasks.completes) {
      assertEquals("workflows/w-t1/tasks/t1#1#complete", c.getRequestId());
    }
    // gRPC retried up to its limit; the worker waited and called again.
    assertFalse(delays.isEmpty());
  }

  @Test
  void aRateLimitedPollWaitsAtLeastTheServersRetryDelay() {
    tasks.scriptPolls(FakeService.rateLimited(Duration.ofMillis(40)), task("t1"));
    worker = builder().register("payments", t -> Map.of()).build();
    worker.start();
    await(() -> tasks.completes.size() == 1, "the completion");
    // The backoff alone would have waited 1 ms or less; the server asked for 40.
    assertEquals(List.of(Duration.ofMillis(40).toNanos()), delays);
  }

  @Test
  void aRateLimitedReportIsRetriedAfterTheRetryDelayWithTheSameRequestId() {
    AtomicInteger calls = new AtomicInteger();
    tasks.complete = request -> {
      if (calls.incrementAndGet() == 1) {
        throw FakeService.rateLimited(Duration.ofMillis(30));
      }
      return dev.statewright.v1.CompleteTaskResponse.getDefaultInstance();
    };
    tasks.offer(task("t1"));
    worker = builder().register("payments", t -> Map.of("id", "ch-1")).build();
    worker.start();
    await(() -> calls.get() == 2, "the accepted completion");
    assertEquals(2, tasks.completes.size());
    assertEquals(tasks.completes.get(0).getRequestId(), tasks.completes.get(1).getRequestId());
    assertEquals(List.of(Duration.ofMillis(30).toNanos()), delays);
  }

  @Test
  void anInvalidArgumentIsLoggedNotRetriedAndTheWorkerGoesOn() {
    tasks.complete = request -> {
      if (request.getName().endsWith("t1")) {
        throw FakeService.error(Status.Code.INVALID_ARGUMENT, "INVALID_ARGUMENT", Map.of("field", "result"));
      }
      return dev.statewright.v1.CompleteTaskResponse.getDefaultInstance();
    };
    tasks.offer(task("t1"), task("t2"));
    worker = builder().concurrency(1).register("payments", t -> Map.of()).build();
    worker.start();
    await(() -> tasks.completes.size() == 2, "both completion attempts");
    assertEquals(List.of("workflows/w-t1/tasks/t1", "workflows/w-t2/tasks/t2"), tasks.completes.stream().map(CompleteTaskRequest::getName).toList());
    assertEquals(List.of(), tasks.fails);
    assertEquals(List.of(), delays);
  }

  // --- configuration -----------------------------------------------------------------------------

  @Test
  void theBuilderRejectsNonsense() {
    TaskHandler handler = t -> Map.of();
    Worker.Builder b = Worker.builder(client);
    assertThrows(IllegalStateException.class, b::build);
    assertThrows(IllegalArgumentException.class, () -> b.register("Payments", handler));
    assertThrows(IllegalArgumentException.class, () -> b.register("9lives", handler));
    assertThrows(IllegalArgumentException.class, () -> b.register("q".repeat(64), handler));
    b.register("payments.eu-1", handler);
    assertThrows(IllegalArgumentException.class, () -> b.register("payments.eu-1", handler));
    assertThrows(IllegalArgumentException.class, () -> b.concurrency(0));
    assertThrows(IllegalArgumentException.class, () -> b.pollWait(Duration.ofSeconds(61)));
    assertThrows(IllegalArgumentException.class, () -> b.pollWait(Duration.ZERO));
    assertThrows(IllegalArgumentException.class, () -> b.shutdownGrace(Duration.ofSeconds(-1)));
    assertThrows(IllegalArgumentException.class, () -> b.backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)));
    assertThrows(IllegalArgumentException.class, () -> b.identity(" "));
    assertThrows(IllegalArgumentException.class, () -> TaskFailure.builder(""));
    assertThrows(IllegalArgumentException.class, () -> TaskFailure.builder("X").retryDelay(Duration.ofSeconds(-1)));
    assertThrows(IllegalArgumentException.class, () -> TaskFailure.builder("X").details(Map.of("x", new Object())));

    Worker built = b.build();
    assertEquals(Worker.DEFAULT_CONCURRENCY, built.concurrency());
    assertEquals(ProcessHandle.current().pid() + "@", built.identity().substring(0, built.identity().indexOf('@') + 1));
    built.close();
  }

  @Test
  void failureTypesAreTheExceptionsOwnNames() {
    assertEquals("IllegalStateException", Worker.typeOf(new IllegalStateException()));
    RuntimeException anonymous = new RuntimeException() {};
    assertEquals(anonymous.getClass().getName(), Worker.typeOf(anonymous));
    TaskFailure failure = TaskFailure.nonRetryable("CARD_DECLINED", "no");
    assertEquals("CARD_DECLINED", failure.type());
    assertTrue(failure.nonRetryable());
    assertTrue(failure.retryDelay().isEmpty());
    assertEquals(Map.of(), failure.details());
    assertFalse(new TaskFailure("PROVIDER_DOWN", "later").nonRetryable());
  }

  @Test
  void onlyLostTasksAreDroppedAndOnlyOutagesRetried() {
    assertTrue(Worker.lost(StatewrightException.from(FakeService.error(Status.Code.FAILED_PRECONDITION, "LEASE_SUPERSEDED", Map.of()))));
    assertTrue(Worker.lost(StatewrightException.from(FakeService.error(Status.Code.FAILED_PRECONDITION, "TASK_CANCELLED", Map.of()))));
    assertTrue(Worker.lost(StatewrightException.from(FakeService.error(Status.Code.NOT_FOUND, "TASK_NOT_FOUND", Map.of()))));
    assertFalse(Worker.lost(StatewrightException.from(FakeService.error(Status.Code.FAILED_PRECONDITION, "WORKFLOW_BUSY", Map.of()))));
    assertTrue(Worker.transientFailure(StatewrightException.from(Status.UNAVAILABLE.asRuntimeException())));
    assertTrue(Worker.transientFailure(StatewrightException.from(Status.DEADLINE_EXCEEDED.asRuntimeException())));
    assertFalse(Worker.transientFailure(StatewrightException.from(Status.INVALID_ARGUMENT.asRuntimeException())));
    assertTrue(Worker.transientFailure(StatewrightException.from(FakeService.rateLimited(Duration.ofMillis(1)))));
    assertFalse(Worker.transientFailure(StatewrightException.from(FakeService.error(Status.Code.RESOURCE_EXHAUSTED, "TOO_MANY_WATCHES", Map.of()))));
    assertFalse(Worker.transientFailure(StatewrightException.from(FakeService.error(Status.Code.UNAUTHENTICATED, "UNAUTHENTICATED", Map.of()))));
    assertTrue(Worker.transientFailure(StatewrightException.from(FakeService.error(Status.Code.UNKNOWN, "OUTCOME_UNKNOWN", Map.of()))));
    assertFalse(Worker.transientFailure(StatewrightException.from(FakeService.error(Status.Code.UNKNOWN, "STORE_ERROR", Map.of()))));
  }
}
