package dev.statewright.client;

import com.google.protobuf.Struct;
import com.google.protobuf.Timestamp;
import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.FailTaskRequest;
import dev.statewright.v1.HeartbeatTaskRequest;
import dev.statewright.v1.HeartbeatTaskResponse;
import dev.statewright.v1.Task;
import dev.statewright.v1.TaskError;
import dev.statewright.v1.TaskStatus;
import io.grpc.Status;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;
import java.util.regex.Pattern;

/**
 * Runs task handlers for the queues they are registered on: polls TaskService, runs each task on an
 * {@link ExecutorService}, heartbeats it while it runs, and completes or fails it with what the
 * handler returned or threw.
 *
 * <pre>{@code
 * Worker worker = Worker.builder(client)
 *     .concurrency(8)
 *     .register("payments", task -> Map.of("id", "ch-" + task.input().get("order")))
 *     .build();
 * worker.start();
 * ...
 * worker.close(); // stops polling, lets running tasks finish, releases the rest
 * }</pre>
 *
 * <ul>
 *   <li><b>Concurrency.</b> At most {@link Builder#concurrency} tasks run at once, across all
 *       queues. One poller thread per queue asks for as many tasks as there are free slots (with
 *       several queues, at most its share of them, so one idle queue's long poll cannot hold every
 *       slot), and none while every slot is taken: the worker never leases what it cannot start.
 *   <li><b>Heartbeats.</b> Every running task is heartbeaten at a third of the time left on its
 *       lease (at least every 10 s, so cancellation is learnt promptly), carrying the latest
 *       details the handler gave. A heartbeat answering {@code cancel_requested}, or failing with
 *       {@code LEASE_SUPERSEDED}, {@code TASK_CANCELLED} or {@code NOT_FOUND}, cancels the task
 *       ({@link TaskContext#isCancelled()}, {@link TaskContext#onCancel}) and nothing is reported
 *       for it.
 *   <li><b>Results.</b> A returned map goes to CompleteTask with request id {@code
 *       "{name}#{attempt}#complete"}; a thrown {@link TaskFailure} to FailTask with its type and
 *       options, any other exception retryably with type = its simple class name ({@code
 *       "{name}#{attempt}#fail"}). UNAVAILABLE and DEADLINE_EXCEEDED are retried with backoff (the
 *       same request id makes that idempotent) until shortly after the lease ends, and so is
 *       RESOURCE_EXHAUSTED {@code RATE_LIMITED}, no sooner than its RetryInfo says; {@code
 *       LEASE_SUPERSEDED}, {@code TASK_CANCELLED} and {@code NOT_FOUND} drop the task quietly; any
 *       other error is logged.
 *   <li><b>Outages.</b> A poll that fails (UNAVAILABLE, DEADLINE_EXCEEDED, connection refused, or
 *       anything else) is retried after 0.1 s doubling to 5 s, with jitter, or after the delay of
 *       the failure's RetryInfo when that is longer, for as long as the worker runs.
 *   <li><b>Shutdown.</b> {@link #close()} stops polling, waits up to the grace period for running
 *       tasks, then releases those still running with FailTask type {@value #SHUTDOWN_TYPE} and
 *       {@code retry_delay} 0 (another worker takes them at once), cancels and interrupts them,
 *       and returns.
 * </ul>
 *
 * <p>Lease times are compared with this machine's clock: keep clocks synchronised (NTP).
 * Diagnostics go to {@link System.Logger} {@code dev.statewright.client.Worker}.
 */
public final class Worker implements AutoCloseable {
  /** The {@code error.type} of a task released because its worker shut down. */
  public static final String SHUTDOWN_TYPE = "WORKER_SHUTDOWN";

  static final int DEFAULT_CONCURRENCY = 10;
  static final Duration DEFAULT_POLL_WAIT = Duration.ofSeconds(20);
  static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(20);
  static final Duration DEFAULT_BACKOFF_INITIAL = Duration.ofMillis(100);
  static final Duration DEFAULT_BACKOFF_MAX = Duration.ofSeconds(5);

  private static final System.Logger LOG = System.getLogger(Worker.class.getName());
  private static final Pattern QUEUE = Pattern.compile("[a-z][a-z0-9.-]{0,62}");
  private static final int MAX_TASKS_PER_POLL = 100;
  private static final Duration MAX_POLL_WAIT = Duration.ofSeconds(60);
  private static final long MIN_HEARTBEAT_NANOS = Duration.ofMillis(100).toNanos();
  private static final long MAX_HEARTBEAT_NANOS = Duration.ofSeconds(10).toNanos();
  // Details the handler gives are sent at most this often.
  private static final long HEARTBEAT_THROTTLE_NANOS = Duration.ofSeconds(1).toNanos();
  // When a lease is missing from the answer, assume the longest first lease the server gives.
  private static final Duration ASSUMED_LEASE = Duration.ofSeconds(30);
  // How long after its lease ended a result is still retried: past it the server has moved on.
  private static final long REPORT_AFTER_LEASE_NANOS = Duration.ofSeconds(30).toNanos();
  private static final Duration RELEASE_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration POLLER_EXIT_TIMEOUT = Duration.ofSeconds(10);

  private enum Lifecycle {
    NEW,
    RUNNING,
    CLOSING,
    CLOSED
  }

  private enum Phase {
    /** The handler runs and the worker holds the lease. */
    RUNNING,
    /** The handler returned; its result is being reported. */
    REPORTING,
    /** The server took the task back (cancel_requested, lease superseded): report nothing. */
    CANCELLED,
    /** Released at shutdown: report nothing more. */
    RELEASED
  }

  private final StatewrightClient client;
  private final Map<String, TaskHandler> handlers;
  private final int concurrency;
  private final String identity;
  private final Duration pollWait;
  private final Duration shutdownGrace;
  private final Duration backoffInitial;
  private final Duration backoffMax;
  private final ExecutorService executor;
  private final boolean ownsExecutor;
  private final LongConsumer backoffListener;

  private final Semaphore slots;
  private final ScheduledThreadPoolExecutor timer;
  // Heartbeats and releases are blocking calls: they run here, never on the timer's one thread.
  private final ExecutorService calls;
  private final Set<Running> active = ConcurrentHashMap.newKeySet();
  private final Object activeChanged = new Object();
  private final CountDownLatch stopPolling = new CountDownLatch(1);
  private final CountDownLatch hardStop = new CountDownLatch(1);
  private final CountDownLatch terminated = new CountDownLatch(1);
  private final Object lifecycleLock = new Object();
  private final List<Thread> pollers = new ArrayList<>();
  private Lifecycle lifecycle = Lifecycle.NEW;

  private Worker(Builder b) {
    this.client = b.client;
    this.handlers = Collections.unmodifiableMap(new LinkedHashMap<>(b.handlers));
    this.concurrency = b.concurrency;
    this.identity = b.identity != null ? b.identity : defaultIdentity();
    this.pollWait = b.pollWait;
    this.shutdownGrace = b.shutdownGrace;
    this.backoffInitial = b.backoffInitial;
    this.backoffMax = b.backoffMax;
    this.ownsExecutor = b.executor == null;
    this.executor = ownsExecutor ? Executors.newFixedThreadPool(concurrency, threads("statewright-task", true)) : b.executor;
    this.backoffListener = b.backoffListener;
    this.slots = new Semaphore(concurrency);
    this.timer = new ScheduledThreadPoolExecutor(1, threads("statewright-heartbeat-timer", true));
    timer.setRemoveOnCancelPolicy(true);
    this.calls = Executors.newCachedThreadPool(threads("statewright-heartbeat", true));
  }

  /** A builder for a worker that calls the server through {@code client} (not closed by the worker). */
  public static Builder builder(StatewrightClient client) {
    return new Builder(client);
  }

  /** Who this worker says it is when it polls: by default {@code pid@hostname}. */
  public String identity() {
    return identity;
  }

  /** The queues it serves, in registration order. */
  public Set<String> queues() {
    return handlers.keySet();
  }

  /** The most tasks it runs at once. */
  public int concurrency() {
    return concurrency;
  }

  /**
   * Starts one poller thread per queue and returns. The poller threads are not daemons: a started
   * worker keeps the JVM alive until {@link #close()}.
   *
   * @throws IllegalStateException if it was started or closed before
   */
  public void start() {
    synchronized (lifecycleLock) {
      if (lifecycle != Lifecycle.NEW) {
        throw new IllegalStateException("worker already " + lifecycle.name().toLowerCase());
      }
      lifecycle = Lifecycle.RUNNING;
      ThreadFactory factory = threads("statewright-poll", false);
      handlers.forEach((queue, handler) -> {
        Thread poller = factory.newThread(() -> pollLoop(queue, handler));
        poller.setName("statewright-poll-" + queue);
        pollers.add(poller);
      });
      pollers.forEach(Thread::start);
    }
    LOG.log(Level.INFO, "worker {0} polling {1} with {2} slots", identity, handlers.keySet(), concurrency);
  }

  /**
   * Starts the worker (unless it was started) and blocks until it is closed, by {@link #close()}
   * from another thread (a shutdown hook, say) or by interrupting this one, which closes it
   * gracefully and returns with the interrupt flag set.
   */
  public void run() {
    synchronized (lifecycleLock) {
      if (lifecycle == Lifecycle.NEW) {
        start();
      }
    }
    try {
      terminated.await();
    } catch (InterruptedException e) {
      close();
      Thread.currentThread().interrupt();
    }
  }

  /** Waits until the worker has closed; false if {@code timeout} passed first. */
  public boolean awaitTermination(Duration timeout) throws InterruptedException {
    return terminated.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** {@link #close(Duration)} with the builder's {@link Builder#shutdownGrace grace period}. */
  @Override
  public void close() {
    close(shutdownGrace);
  }

  /**
   * Shuts down gracefully and returns once done: stops polling (an open poll is cancelled), waits up
   * to {@code grace} for running tasks to finish and be reported, then releases the tasks whose
   * handlers still run (FailTask {@value #SHUTDOWN_TYPE}, {@code retry_delay} 0), marks them
   * cancelled and interrupts them. Tasks still being reported get no more retries. An executor
   * passed to {@link Builder#executor} is left running. Calling it again waits for the first call.
   */
  public void close(Duration grace) {
    Objects.requireNonNull(grace, "grace");
    synchronized (lifecycleLock) {
      switch (lifecycle) {
        case NEW -> {
          lifecycle = Lifecycle.CLOSED;
          shutDownExecutors();
          terminated.countDown();
          return;
        }
        case RUNNING -> lifecycle = Lifecycle.CLOSING;
        default -> {
          awaitTerminatedUninterruptibly();
          return;
        }
      }
    }
    boolean interrupted = false;
    long deadline = System.nanoTime() + Math.max(0, grace.toNanos());
    stopPolling.countDown();
    pollers.forEach(Thread::interrupt);
    // Wait for the pollers before counting the running tasks: a poll answered just now may still be
    // starting its tasks, which then get the grace period like the others.
    for (Thread poller : pollers) {
      try {
        poller.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()) + POLLER_EXIT_TIMEOUT.toMillis()));
      } catch (InterruptedException e) {
        interrupted = true;
      }
      if (poller.isAlive()) {
        LOG.log(Level.WARNING, "{0} did not stop", poller.getName());
      }
    }
    synchronized (activeChanged) {
      while (!interrupted && !active.isEmpty()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(activeChanged, left);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    hardStop.countDown();
    List<Running> left = List.copyOf(active);
    List<CompletableFuture<Void>> releases = new ArrayList<>();
    for (Running task : left) {
      if (task.release()) {
        releases.add(CompletableFuture.runAsync(() -> sendRelease(task.task, "the worker shut down with the task still running"), calls));
      }
    }
    for (Running task : left) {
      task.interruptIfAbandoned();
    }
    for (CompletableFuture<Void> release : releases) {
      try {
        release.get(RELEASE_TIMEOUT.toMillis() + 1_000, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        interrupted = true;
      } catch (ExecutionException | TimeoutException e) {
        LOG.log(Level.WARNING, "releasing a task at shutdown failed", e);
      }
    }
    shutDownExecutors();
    synchronized (lifecycleLock) {
      lifecycle = Lifecycle.CLOSED;
    }
    terminated.countDown();
    if (!releases.isEmpty()) {
      LOG.log(Level.INFO, "worker {0} closed; released {1} running tasks", identity, releases.size());
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private void awaitTerminatedUninterruptibly() {
    boolean interrupted = false;
    while (true) {
      try {
        terminated.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private void shutDownExecutors() {
    timer.shutdownNow();
    calls.shutdown();
    if (ownsExecutor) {
      // Not shutdownNow: released handlers were interrupted one by one, and a result still being
      // reported may finish its call (it gets no retry after the hard stop).
      executor.shutdown();
    }
  }

  private boolean stopping() {
    return stopPolling.getCount() == 0;
  }

  private boolean hardStopped() {
    return hardStop.getCount() == 0;
  }

  /** Waits {@code nanos} unless {@code latch} opens first or the thread is interrupted; true then. */
  private static boolean pause(CountDownLatch latch, long nanos) {
    try {
      return latch.await(nanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return true;
    }
  }

  // --- polling ----------------------------------------------------------------------------

  private void pollLoop(String queue, TaskHandler handler) {
    Backoff backoff = new Backoff(backoffInitial, backoffMax);
    int share = Math.min(MAX_TASKS_PER_POLL, Math.max(1, (concurrency + handlers.size() - 1) / handlers.size()));
    boolean failing = false;
    while (!stopping()) {
      int permits;
      try {
        permits = acquireSlots(share);
      } catch (InterruptedException e) {
        break;
      }
      List<Task> tasks;
      try {
        tasks = client.pollTasks(queue, identity, permits, pollWait);
      } catch (RuntimeException e) {
        slots.release(permits);
        if (stopping()) {
          break;
        }
        // The first failure after success is worth a warning; the rest of an outage is not.
        Level level = failing ? Level.DEBUG : Level.WARNING;
        if (e instanceof StatewrightException) {
          LOG.log(level, "polling queue {0} failed, backing off: {1}", queue, e.getMessage());
        } else {
          LOG.log(level, "polling queue " + queue + " failed, backing off", e);
        }
        failing = true;
        long delay = Backoff.atLeastRetryDelay(backoff.delayNanos(), e);
        backoffListener.accept(delay);
        if (pause(stopPolling, delay)) {
          break;
        }
        client.resetConnectBackoff();
        continue;
      }
      if (failing) {
        LOG.log(Level.INFO, "polling queue {0} again", queue);
        failing = false;
      }
      backoff.reset();
      int used = 0;
      for (Task task : tasks) {
        if (task.getLeaseToken().isEmpty() || task.getStatus() == TaskStatus.TASK_STATUS_CANCELLED) {
          LOG.log(Level.DEBUG, "skipping {0}: not leased to this worker", task.getName());
        } else if (used < permits && !hardStopped()) {
          used++;
          begin(task, queue, handler);
        } else {
          // More than asked for, or the grace period already ended: never run what has no slot.
          LOG.log(Level.WARNING, "releasing {0}: no free slot for it", task.getName());
          releaseAsync(task, "the worker had no free slot for the task");
        }
      }
      slots.release(permits - used);
    }
  }

  /** Blocks for one free slot, then takes up to {@code share - 1} more that are free now. */
  private int acquireSlots(int share) throws InterruptedException {
    slots.acquire();
    int permits = 1;
    while (permits < share && slots.tryAcquire()) {
      permits++;
    }
    return permits;
  }

  private void begin(Task task, String queue, TaskHandler handler) {
    Running running = new Running(task, queue, handler);
    active.add(running);
    try {
      running.future = executor.submit(running::run);
    } catch (RejectedExecutionException e) {
      LOG.log(Level.WARNING, "the handler executor rejected " + task.getName() + "; releasing it", e);
      if (running.release()) {
        releaseAsync(task, "the worker's executor rejected the task");
      }
      running.finish();
      return;
    }
    running.startHeartbeats();
  }

  private void releaseAsync(Task task, String why) {
    try {
      calls.execute(() -> sendRelease(task, why));
    } catch (RejectedExecutionException e) {
      sendRelease(task, why);
    }
  }

  /** Hands a leased task back for another worker to take at once. */
  private void sendRelease(Task task, String why) {
    FailTaskRequest request =
        FailTaskRequest.newBuilder()
            .setName(task.getName())
            .setLeaseToken(task.getLeaseToken())
            .setError(TaskError.newBuilder().setType(SHUTDOWN_TYPE).setMessage(why))
            .setRetryDelay(StatewrightClient.toProto(Duration.ZERO))
            .setRequestId(task.getName() + "#" + task.getAttempt() + "#release")
            .build();
    try {
      client.failTask(request, RELEASE_TIMEOUT);
      LOG.log(Level.DEBUG, "released {0} attempt {1}", task.getName(), task.getAttempt());
    } catch (StatewrightException e) {
      LOG.log(lost(e) ? Level.DEBUG : Level.WARNING, "releasing {0} failed: {1}", task.getName(), e.getMessage());
    }
  }

  // --- error classes ------------------------------------------------------------------------

  /** The task is no longer this worker's: drop it without a word to the server. */
  static boolean lost(StatewrightException e) {
    return e.code() == Status.Code.NOT_FOUND
        || (e.code() == Status.Code.FAILED_PRECONDITION && (e.isReason("LEASE_SUPERSEDED") || e.isReason("TASK_CANCELLED")));
  }

  /** Worth another try with the same request id (a rate-limited call after its RetryInfo delay). */
  static boolean transientFailure(StatewrightException e) {
    return e.code() == Status.Code.UNAVAILABLE
        || e.code() == Status.Code.DEADLINE_EXCEEDED
        || e.isRateLimited()
        // The server lost the answer of its own commit: the same request id gets what became of it.
        || (e.code() == Status.Code.UNKNOWN && e.isReason("OUTCOME_UNKNOWN"));
  }


  /** The {@code error.type} of an exception that is not a {@link TaskFailure}. */
  static String typeOf(Throwable t) {
    String simple = t.getClass().getSimpleName();
    return simple.isEmpty() ? t.getClass().getName() : simple;
  }

  /** The {@code error.type} a handler's exception is reported with. */
  private static String failureType(Throwable t) {
    return t instanceof TaskFailure failure ? failure.type() : typeOf(t);
  }

  /** Handlers that wait on futures throw the failure wrapped; the worker reports the failure. */
  private static Throwable unwrap(Throwable t) {
    Throwable e = t;
    while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  // --- one leased task ----------------------------------------------------------------------

  private final class Running implements TaskContext {
    final Task task;
    final String queue;
    final TaskHandler handler;
    final Map<String, Object> input;
    final Map<String, Object> previousDetails;
    final AtomicBoolean finished = new AtomicBoolean();
    final Backoff heartbeatBackoff = new Backoff(backoffInitial, backoffMax);
    volatile Future<?> future;
    volatile boolean cancelled;
    // The attempt's span, from when the handler starts (the reports carry it).
    private Span span = Span.getInvalid();

    // Guarded by this.
    private Phase phase = Phase.RUNNING;
    private Instant leaseExpire;
    private long leaseDeadlineNanos;
    private Struct details;
    private boolean dirty;
    private boolean inFlight;
    private boolean everSent;
    private long lastSentNanos;
    private ScheduledFuture<?> nextBeat;
    private long nextBeatAtNanos;
    private final List<Runnable> callbacks = new ArrayList<>();

    Running(Task task, String queue, TaskHandler handler) {
      this.task = task;
      this.queue = queue;
      this.handler = handler;
      this.input = Collections.unmodifiableMap(Structs.toMap(task.getInput()));
      this.previousDetails = Collections.unmodifiableMap(Structs.toMap(task.getHeartbeatDetails()));
      // Until the handler reports progress, heartbeats keep what the last attempt reported.
      this.details = task.hasHeartbeatDetails() ? task.getHeartbeatDetails() : null;
      if (task.hasLeaseExpireTime()) {
        setLease(task.getLeaseExpireTime());
      } else {
        leaseExpire = Instant.now().plus(ASSUMED_LEASE);
        leaseDeadlineNanos = System.nanoTime() + ASSUMED_LEASE.toNanos();
      }
    }

    // TaskContext ------------------------------------------------------------------------

    @Override
    public String name() {
      return task.getName();
    }

    @Override
    public String workflow() {
      return task.getWorkflow();
    }

    @Override
    public String queue() {
      return queue;
    }

    @Override
    public String state() {
      return task.getState();
    }

    @Override
    public int attempt() {
      return task.getAttempt();
    }

    @Override
    public Map<String, Object> input() {
      return input;
    }

    @Override
    public Map<String, Object> heartbeatDetails() {
      return previousDetails;
    }

    @Override
    public synchronized Instant leaseExpireTime() {
      return leaseExpire;
    }

    @Override
    public Task task() {
      return task;
    }

    @Override
    public void heartbeat(Map<String, ?> progress) {
      Struct struct = Structs.toStruct(progress);
      synchronized (this) {
        details = struct;
        dirty = true;
        if (phase != Phase.RUNNING || inFlight) {
          // An answer in flight reschedules with the new details in mind.
          return;
        }
        long now = System.nanoTime();
        long at = everSent ? lastSentNanos + HEARTBEAT_THROTTLE_NANOS : now;
        scheduleBeat(Math.max(0, at - now));
      }
    }

    @Override
    public boolean isCancelled() {
      return cancelled;
    }

    @Override
    public void onCancel(Runnable callback) {
      Objects.requireNonNull(callback, "callback");
      synchronized (this) {
        if (!cancelled) {
          callbacks.add(callback);
          return;
        }
      }
      runCallback(callback);
    }

    @Override
    public String toString() {
      return task.getName() + "#" + task.getAttempt();
    }

    // Lifecycle ----------------------------------------------------------------------------

    void run() {
      boolean released;
      synchronized (this) {
        released = phase != Phase.RUNNING;
      }
      if (released) {
        finish();
        return;
      }
      Map<String, ?> result = null;
      Throwable error = null;
      // The attempt's span: the handler runs in it, and the report is its child and carries it.
      span = Tracing.startTaskSpan(task);
      try (Scope ignored = span.makeCurrent()) {
        result = handler.handle(this);
      } catch (Throwable t) {
        error = t;
      }
      Tracing.end(span, error == null ? null : failureType(unwrap(error)));
      try {
        synchronized (this) {
          if (phase != Phase.RUNNING) {
            LOG.log(Level.DEBUG, "{0} ended after it was {1}; nothing reported", this, phase.name().toLowerCase());
            return;
          }
          phase = Phase.REPORTING;
          cancelBeat();
        }
        // An interrupt meant for the handler must not cancel the report's own call.
        Thread.interrupted();
        if (error == null) {
          complete(result);
        } else {
          fail(unwrap(error));
        }
      } finally {
        finish();
      }
    }

    /** RUNNING to RELEASED: the caller hands the task back. False if it was past running. */
    boolean release() {
      return cancel(Phase.RELEASED, "released at shutdown");
    }

    /** Interrupts a handler that is no longer this worker's (released or cancelled) and still runs. */
    void interruptIfAbandoned() {
      Phase now;
      synchronized (this) {
        now = phase;
      }
      Future<?> f = future;
      if (f != null && (now == Phase.RELEASED || now == Phase.CANCELLED)) {
        f.cancel(true);
      }
    }

    /** Once: frees the slot and forgets the task. */
    void finish() {
      if (!finished.compareAndSet(false, true)) {
        return;
      }
      synchronized (this) {
        cancelBeat();
      }
      active.remove(this);
      slots.release();
      synchronized (activeChanged) {
        activeChanged.notifyAll();
      }
    }

    private boolean cancel(Phase to, String why) {
      List<Runnable> toRun;
      synchronized (this) {
        if (phase != Phase.RUNNING) {
          return false;
        }
        phase = to;
        cancelled = true;
        cancelBeat();
        toRun = List.copyOf(callbacks);
        callbacks.clear();
      }
      LOG.log(Level.DEBUG, "{0} cancelled: {1}", this, why);
      toRun.forEach(this::runCallback);
      return true;
    }

    private void runCallback(Runnable callback) {
      try {
        callback.run();
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "a cancellation callback of " + this + " threw", e);
      }
    }

    // Reporting ----------------------------------------------------------------------------

    private void complete(Map<String, ?> result) {
      Struct struct;
      try {
        struct = Structs.toStruct(result);
      } catch (IllegalArgumentException e) {
        fail(e);
        return;
      }
      Map<String, String> traced = Tracing.headers(span);
      CompleteTaskRequest request =
          CompleteTaskRequest.newBuilder()
              .setName(task.getName())
              .setLeaseToken(task.getLeaseToken())
              .setResult(struct)
              .setRequestId(task.getName() + "#" + task.getAttempt() + "#complete")
              .setTraceparent(traced.getOrDefault("traceparent", ""))
              .setTracestate(traced.getOrDefault("tracestate", ""))
              .build();
      report("CompleteTask", () -> client.completeTask(request));
    }

    private void fail(Throwable error) {
      TaskError.Builder taskError = TaskError.newBuilder();
      Map<String, String> traced = Tracing.headers(span);
      FailTaskRequest.Builder request =
          FailTaskRequest.newBuilder()
              .setName(task.getName())
              .setLeaseToken(task.getLeaseToken())
              .setRequestId(task.getName() + "#" + task.getAttempt() + "#fail")
              .setTraceparent(traced.getOrDefault("traceparent", ""))
              .setTracestate(traced.getOrDefault("tracestate", ""));
      if (error instanceof TaskFailure failure) {
        taskError.setType(failure.type()).setMessage(nonNull(failure.getMessage())).setDetails(failure.detailsStruct());
        request.setNonRetryable(failure.nonRetryable());
        failure.retryDelay().ifPresent(d -> request.setRetryDelay(StatewrightClient.toProto(d)));
        failure.closeKeyUntil().ifPresent(t -> request.setCloseKeyUntil(StatewrightClient.toProto(t)));
      } else {
        String message = error.getMessage() != null ? error.getMessage() : error.getClass().getName();
        taskError.setType(typeOf(error)).setMessage(message);
      }
      LOG.log(Level.DEBUG, "{0} failed: {1}", this, taskError.getType());
      FailTaskRequest built = request.setError(taskError).build();
      report("FailTask", () -> client.failTask(built));
    }

    private void report(String method, Runnable call) {
      Backoff backoff = new Backoff(backoffInitial, backoffMax);
      long giveUpAt;
      synchronized (this) {
        giveUpAt = leaseDeadlineNanos + REPORT_AFTER_LEASE_NANOS;
      }
      while (true) {
        try (Scope ignored = span.makeCurrent()) {
          call.run();
          LOG.log(Level.DEBUG, "{0}: {1} done", this, method);
          return;
        } catch (StatewrightException e) {
          if (lost(e)) {
            LOG.log(Level.DEBUG, "{0}: {1} dropped: {2}", this, method, e.getMessage());
            return;
          }
          if (!transientFailure(e)) {
            LOG.log(Level.WARNING, "{0}: {1} failed: {2}", this, method, e.getMessage());
            return;
          }
          if (hardStopped() || System.nanoTime() - giveUpAt > 0) {
            LOG.log(Level.WARNING, "{0}: {1} gave up: {2}", this, method, e.getMessage());
            return;
          }
          long delay = Backoff.atLeastRetryDelay(backoff.delayNanos(), e);
          backoffListener.accept(delay);
          if (pause(hardStop, delay)) {
            LOG.log(Level.WARNING, "{0}: {1} abandoned at shutdown: {2}", this, method, e.getMessage());
            return;
          }
          client.resetConnectBackoff();
        }
      }
    }

    // Heartbeats ---------------------------------------------------------------------------

    synchronized void startHeartbeats() {
      if (phase == Phase.RUNNING && nextBeat == null && !inFlight) {
        scheduleBeat(regularDelay(System.nanoTime()));
      }
    }

    /** A third of the time left on the lease, within [0.1 s, 10 s]; sooner for new details. */
    private long regularDelay(long now) {
      long delay = Math.min(MAX_HEARTBEAT_NANOS, Math.max(MIN_HEARTBEAT_NANOS, (leaseDeadlineNanos - now) / 3));
      if (dirty) {
        delay = Math.min(delay, Math.max(0, lastSentNanos + HEARTBEAT_THROTTLE_NANOS - now));
      }
      return delay;
    }

    /** Guarded by this: makes the next heartbeat happen no later than {@code delay} from now. */
    private void scheduleBeat(long delay) {
      long at = System.nanoTime() + delay;
      if (nextBeat != null) {
        if (nextBeatAtNanos - at <= 0) {
          return;
        }
        nextBeat.cancel(false);
      }
      try {
        nextBeatAtNanos = at;
        nextBeat = timer.schedule(this::dispatchBeat, delay, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        nextBeat = null; // shutting down
      }
    }

    private void cancelBeat() {
      if (nextBeat != null) {
        nextBeat.cancel(false);
        nextBeat = null;
      }
    }

    private void dispatchBeat() {
      try {
        calls.execute(this::beat);
      } catch (RejectedExecutionException e) {
        // Shutting down: released tasks need no more heartbeats.
      }
    }

    private void beat() {
      HeartbeatTaskRequest.Builder request = HeartbeatTaskRequest.newBuilder().setName(task.getName()).setLeaseToken(task.getLeaseToken());
      synchronized (this) {
        nextBeat = null;
        if (phase != Phase.RUNNING || inFlight) {
          return;
        }
        inFlight = true;
        dirty = false;
        if (details != null) {
          request.setDetails(details);
        }
        everSent = true;
        lastSentNanos = System.nanoTime();
      }
      HeartbeatTaskResponse answer = null;
      RuntimeException failure = null;
      try {
        answer = client.heartbeatTask(request.build());
      } catch (RuntimeException e) {
        failure = e;
      }
      String cancelWhy = null;
      synchronized (this) {
        inFlight = false;
        if (phase != Phase.RUNNING) {
          return;
        }
        long now = System.nanoTime();
        if (answer != null) {
          heartbeatBackoff.reset();
          if (answer.hasLeaseExpireTime()) {
            setLease(answer.getLeaseExpireTime());
          }
          if (answer.getCancelRequested()) {
            cancelWhy = "cancel_requested";
          } else {
            scheduleBeat(regularDelay(now));
          }
        } else if (failure instanceof StatewrightException e && lost(e)) {
          cancelWhy = e.getMessage();
        } else {
          if (failure instanceof StatewrightException e) {
            LOG.log(transientFailure(e) ? Level.DEBUG : Level.WARNING, "heartbeat of {0} failed: {1}", this, e.getMessage());
          } else {
            LOG.log(Level.WARNING, "heartbeat of " + this + " failed", failure);
          }
          // A heartbeat sooner than the server's RetryInfo allows is refused again.
          scheduleBeat(Backoff.atLeastRetryDelay(Math.min(heartbeatBackoff.delayNanos(), regularDelay(now)), failure));
        }
      }
      if (cancelWhy != null) {
        cancel(Phase.CANCELLED, cancelWhy);
      }
    }

    /** Guarded by this (or in the constructor). */
    private void setLease(Timestamp expire) {
      leaseExpire = Instant.ofEpochSecond(expire.getSeconds(), expire.getNanos());
      long left;
      try {
        left = Duration.between(Instant.now(), leaseExpire).toNanos();
      } catch (ArithmeticException e) {
        left = leaseExpire.isBefore(Instant.now()) ? 0 : Long.MAX_VALUE / 4;
      }
      leaseDeadlineNanos = System.nanoTime() + Math.min(left, Long.MAX_VALUE / 4);
    }
  }

  private static String nonNull(String s) {
    return s == null ? "" : s;
  }

  private static ThreadFactory threads(String prefix, boolean daemon) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
      thread.setDaemon(daemon);
      return thread;
    };
  }

  static String defaultIdentity() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException | SecurityException e) {
      host = System.getenv().getOrDefault("HOSTNAME", "localhost");
    }
    return ProcessHandle.current().pid() + "@" + host;
  }

  // --- builder ------------------------------------------------------------------------------

  /** Configures a {@link Worker}; {@link #register} at least one queue. */
  public static final class Builder {
    private final StatewrightClient client;
    private final Map<String, TaskHandler> handlers = new LinkedHashMap<>();
    private int concurrency = DEFAULT_CONCURRENCY;
    private String identity;
    private Duration pollWait = DEFAULT_POLL_WAIT;
    private Duration shutdownGrace = DEFAULT_SHUTDOWN_GRACE;
    private Duration backoffInitial = DEFAULT_BACKOFF_INITIAL;
    private Duration backoffMax = DEFAULT_BACKOFF_MAX;
    private ExecutorService executor;
    private LongConsumer backoffListener = delay -> {};

    private Builder(StatewrightClient client) {
      this.client = Objects.requireNonNull(client, "client");
    }

    /** Runs {@code handler} for the tasks of {@code queue} ({@code [a-z][a-z0-9-.]{0,62}}). */
    public Builder register(String queue, TaskHandler handler) {
      Objects.requireNonNull(queue, "queue");
      Objects.requireNonNull(handler, "handler");
      if (!QUEUE.matcher(queue).matches()) {
        throw new IllegalArgumentException("not a queue name ([a-z][a-z0-9-.]{0,62}): " + queue);
      }
      if (handlers.putIfAbsent(queue, handler) != null) {
        throw new IllegalArgumentException("queue " + queue + " already has a handler");
      }
      return this;
    }

    /** The most tasks run at once, across all queues (default {@value #DEFAULT_CONCURRENCY}). */
    public Builder concurrency(int concurrency) {
      if (concurrency < 1) {
        throw new IllegalArgumentException("concurrency must be at least 1: " + concurrency);
      }
      this.concurrency = concurrency;
      return this;
    }

    /** Who the worker says it is when it polls (default {@code pid@hostname}). */
    public Builder identity(String identity) {
      if (identity == null || identity.isBlank()) {
        throw new IllegalArgumentException("identity must not be blank");
      }
      this.identity = identity;
      return this;
    }

    /** How long one poll waits for a task (default 20 s, at most 60 s). */
    public Builder pollWait(Duration wait) {
      Objects.requireNonNull(wait, "wait");
      if (wait.isNegative() || wait.isZero() || wait.compareTo(MAX_POLL_WAIT) > 0) {
        throw new IllegalArgumentException("poll wait must be in (0, 60 s]: " + wait);
      }
      this.pollWait = wait;
      return this;
    }

    /** How long {@link Worker#close()} lets running tasks finish (default 20 s). */
    public Builder shutdownGrace(Duration grace) {
      Objects.requireNonNull(grace, "grace");
      if (grace.isNegative()) {
        throw new IllegalArgumentException("grace period cannot be negative: " + grace);
      }
      this.shutdownGrace = grace;
      return this;
    }

    /** The backoff after failed polls and reports: {@code initial} doubling to {@code maximum} (0.1 s, 5 s). */
    public Builder backoff(Duration initial, Duration maximum) {
      Objects.requireNonNull(initial, "initial");
      Objects.requireNonNull(maximum, "maximum");
      if (initial.isNegative() || initial.isZero() || maximum.compareTo(initial) < 0) {
        throw new IllegalArgumentException("backoff needs 0 < initial <= maximum: " + initial + ", " + maximum);
      }
      this.backoffInitial = initial;
      this.backoffMax = maximum;
      return this;
    }

    /**
     * Runs handlers on {@code executor} instead of a fixed pool of {@code concurrency} threads of
     * the worker's own. The worker never submits more than {@code concurrency} tasks at once and
     * does not shut it down.
     */
    public Builder executor(ExecutorService executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /** Sees every backoff delay (nanoseconds) the worker waits: for tests. */
    Builder backoffListener(LongConsumer listener) {
      this.backoffListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    public Worker build() {
      if (handlers.isEmpty()) {
        throw new IllegalStateException("register a handler for at least one queue");
      }
      return new Worker(this);
    }
  }
}
