package dev.statewright.client;

import dev.statewright.v1.CancelWorkflowRequest;
import dev.statewright.v1.CancelWorkflowResponse;
import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.CompleteTaskResponse;
import dev.statewright.v1.Definition;
import dev.statewright.v1.FailTaskRequest;
import dev.statewright.v1.FailTaskResponse;
import dev.statewright.v1.GetDiagnosticsRequest;
import dev.statewright.v1.GetDiagnosticsResponse;
import dev.statewright.v1.GetTaskRequest;
import dev.statewright.v1.GetWorkflowRequest;
import dev.statewright.v1.HeartbeatTaskRequest;
import dev.statewright.v1.HeartbeatTaskResponse;
import dev.statewright.v1.ListDefinitionsRequest;
import dev.statewright.v1.ListDefinitionsResponse;
import dev.statewright.v1.ListTasksRequest;
import dev.statewright.v1.ListTasksResponse;
import dev.statewright.v1.ListWorkflowsRequest;
import dev.statewright.v1.ListWorkflowsResponse;
import dev.statewright.v1.PollTasksRequest;
import dev.statewright.v1.PollTasksResponse;
import dev.statewright.v1.ResumeWorkflowRequest;
import dev.statewright.v1.ResumeWorkflowResponse;
import dev.statewright.v1.SignalWorkflowRequest;
import dev.statewright.v1.SignalWorkflowResponse;
import dev.statewright.v1.StartWorkflowRequest;
import dev.statewright.v1.StartWorkflowResponse;
import dev.statewright.v1.Task;
import dev.statewright.v1.TaskServiceGrpc;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowServiceGrpc;
import dev.statewright.v1.WorkflowStatus;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A small blocking client for {@code statewright.v1.WorkflowService} and {@code
 * statewright.v1.TaskService} (the calls a {@link Worker} makes, for workers of your own).
 *
 * <ul>
 *   <li>The channel carries the shared service config: gRPC retries a call, with backoff, only
 *       when it fails with UNAVAILABLE. Mutating calls get a generated {@code request_id} when the
 *       request has none, so such a retry is idempotent on the server.
 *   <li>Every unary call has a deadline: the service config's per-method timeout.
 *   <li>Failures are thrown as {@link StatewrightException} with the ErrorInfo reason.
 *   <li>{@link #watch(String, WatchOptions)} resumes with {@code after_revision} after a dropped
 *       stream, so every revision is delivered exactly once.
 * </ul>
 */
public final class StatewrightClient implements AutoCloseable {
  /** Default target when {@code STATEWRIGHT_TARGET} is not set. */
  public static final String DEFAULT_TARGET = "127.0.0.1:50051";

  private static final Duration FALLBACK_TIMEOUT = Duration.ofSeconds(30);
  /** How much longer than its {@code wait} a PollTasks call may take before it is abandoned. */
  static final Duration POLL_DEADLINE_MARGIN = Duration.ofSeconds(5);

  private final ManagedChannel channel;
  private final boolean ownsChannel;
  private final WorkflowServiceGrpc.WorkflowServiceBlockingStub stub;
  private final TaskServiceGrpc.TaskServiceBlockingStub taskStub;
  private final Map<String, Duration> timeouts = ServiceConfig.methodTimeouts();
  private final Map<String, Duration> taskTimeouts = ServiceConfig.methodTimeouts(ServiceConfig.TASK_SERVICE);

  /** Uses an existing channel (build it with {@link ServiceConfig#apply}); not closed by us. */
  public StatewrightClient(ManagedChannel channel) {
    this(channel, false);
  }

  private StatewrightClient(ManagedChannel channel, boolean ownsChannel) {
    this.channel = channel;
    this.ownsChannel = ownsChannel;
    this.stub = WorkflowServiceGrpc.newBlockingStub(channel);
    this.taskStub = TaskServiceGrpc.newBlockingStub(channel);
  }

  /** A plaintext connection to {@code host:port} with the service config and retries on. */
  public static StatewrightClient connect(String target) {
    ManagedChannelBuilder<?> builder = ManagedChannelBuilder.forTarget(target).usePlaintext();
    return new StatewrightClient(ServiceConfig.apply(builder).build(), true);
  }

  /** Connects to {@code $STATEWRIGHT_TARGET}, or {@value #DEFAULT_TARGET}. */
  public static StatewrightClient fromEnvironment() {
    String target = System.getenv("STATEWRIGHT_TARGET");
    return connect(target == null || target.isEmpty() ? DEFAULT_TARGET : target);
  }

  @Override
  public void close() {
    if (ownsChannel) {
      channel.shutdown();
      try {
        if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
          channel.shutdownNow();
        }
      } catch (InterruptedException e) {
        channel.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
  }

  private <T> T call(String method, Function<WorkflowServiceGrpc.WorkflowServiceBlockingStub, T> rpc) {
    Duration timeout = timeouts.getOrDefault(method, FALLBACK_TIMEOUT);
    try {
      return rpc.apply(stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS));
    } catch (StatusRuntimeException e) {
      throw StatewrightException.from(e);
    }
  }

  private <T> T taskCall(String method, Function<TaskServiceGrpc.TaskServiceBlockingStub, T> rpc) {
    return taskCall(taskTimeouts.getOrDefault(method, FALLBACK_TIMEOUT), rpc);
  }

  private <T> T taskCall(Duration timeout, Function<TaskServiceGrpc.TaskServiceBlockingStub, T> rpc) {
    try {
      return rpc.apply(taskStub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS));
    } catch (StatusRuntimeException e) {
      throw StatewrightException.from(e);
    }
  }

  /**
   * After a dropped connection the channel waits out its own reconnect backoff (1 s growing to
   * 120 s) and fails calls at once meanwhile; callers that back off themselves try again now.
   */
  void resetConnectBackoff() {
    channel.resetConnectBackoff();
  }

  private static String requestId(String given) {
    return given.isEmpty() ? UUID.randomUUID().toString() : given;
  }

  /** {@code workflows/{id}} for a bare id or a resource name. */
  public static String workflowName(String nameOrId) {
    return nameOrId.startsWith("workflows/") ? nameOrId : "workflows/" + nameOrId;
  }

  // --- raw requests (full control over every field) -------------------------------------

  public StartWorkflowResponse start(StartWorkflowRequest request) {
    StartWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("StartWorkflow", s -> s.startWorkflow(r));
  }

  public ResumeWorkflowResponse resume(ResumeWorkflowRequest request) {
    ResumeWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("ResumeWorkflow", s -> s.resumeWorkflow(r));
  }

  public SignalWorkflowResponse signal(SignalWorkflowRequest request) {
    SignalWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("SignalWorkflow", s -> s.signalWorkflow(r));
  }

  public CancelWorkflowResponse cancel(CancelWorkflowRequest request) {
    CancelWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("CancelWorkflow", s -> s.cancelWorkflow(r));
  }

  public ListWorkflowsResponse listPage(ListWorkflowsRequest request) {
    return call("ListWorkflows", s -> s.listWorkflows(request));
  }

  // --- conveniences -------------------------------------------------------------------

  /** Starts {@code definition} (latest version); {@code workflowId} may be empty. */
  public Workflow start(String definition, String workflowId, Map<String, ?> input) {
    return start(
            StartWorkflowRequest.newBuilder()
                .setDefinition(definition)
                .setWorkflowId(workflowId == null ? "" : workflowId)
                .setInput(Structs.toStruct(input))
                .build())
        .getWorkflow();
  }

  /** Resumes a WAITING instance; {@code expectedRevision} 0 means "any revision". */
  public Workflow resume(String name, String event, long expectedRevision) {
    return resume(
            ResumeWorkflowRequest.newBuilder()
                .setName(workflowName(name))
                .setEvent(event == null ? "" : event)
                .setExpectedRevision(expectedRevision)
                .build())
        .getWorkflow();
  }

  /** Signals a RUNNING instance; check {@code getAccepted()} on the answer. */
  public SignalWorkflowResponse signal(String name, String event, Map<String, ?> payload) {
    return signal(
        SignalWorkflowRequest.newBuilder()
            .setName(workflowName(name))
            .setEvent(event)
            .setPayload(Structs.toStruct(payload))
            .build());
  }

  public Workflow get(String name) {
    GetWorkflowRequest request = GetWorkflowRequest.newBuilder().setName(workflowName(name)).build();
    return call("GetWorkflow", s -> s.getWorkflow(request)).getWorkflow();
  }

  public Workflow cancel(String name, String reason) {
    return cancel(
            CancelWorkflowRequest.newBuilder()
                .setName(workflowName(name))
                .setReason(reason == null ? "" : reason)
                .build())
        .getWorkflow();
  }

  /** Every page of a listing, fetched lazily, following {@code next_page_token}. */
  public Iterable<ListWorkflowsResponse> listPages(ListWorkflowsRequest first) {
    return () ->
        new Iterator<>() {
          private String token = first.getPageToken();
          private boolean done;

          @Override
          public boolean hasNext() {
            return !done;
          }

          @Override
          public ListWorkflowsResponse next() {
            if (done) {
              throw new NoSuchElementException();
            }
            ListWorkflowsResponse page = listPage(first.toBuilder().setPageToken(token).build());
            token = page.getNextPageToken();
            done = token.isEmpty();
            return page;
          }
        };
  }

  /** Every instance of {@code definition} (all definitions when empty), across all pages. */
  public List<Workflow> list(String definition, int pageSize) {
    List<Workflow> all = new ArrayList<>();
    ListWorkflowsRequest request =
        ListWorkflowsRequest.newBuilder().setDefinition(definition).setPageSize(pageSize).build();
    for (ListWorkflowsResponse page : listPages(request)) {
      all.addAll(page.getWorkflowsList());
    }
    return all;
  }

  public GetDiagnosticsResponse diagnostics() {
    return call("GetDiagnostics", s -> s.getDiagnostics(GetDiagnosticsRequest.getDefaultInstance()));
  }

  /** Every definition version the server knows, across all pages. */
  public List<Definition> definitions() {
    List<Definition> all = new ArrayList<>();
    String token = "";
    do {
      ListDefinitionsRequest request = ListDefinitionsRequest.newBuilder().setPageToken(token).build();
      ListDefinitionsResponse page = call("ListDefinitions", s -> s.listDefinitions(request));
      all.addAll(page.getDefinitionsList());
      token = page.getNextPageToken();
    } while (!token.isEmpty());
    return all;
  }

  // --- TaskService ----------------------------------------------------------------------

  /**
   * Leases up to {@code max_tasks} tasks of a queue, waiting up to {@code wait} for one. The call's
   * deadline is {@code wait} plus 5 s, so a long poll is never cut short by the client; an empty
   * answer means the wait ran out.
   */
  public PollTasksResponse pollTasks(PollTasksRequest request) {
    Duration wait = Duration.ofSeconds(request.getWait().getSeconds(), request.getWait().getNanos());
    return taskCall(wait.plus(POLL_DEADLINE_MARGIN), s -> s.pollTasks(request));
  }

  /** {@link #pollTasks(PollTasksRequest)} for one queue: the tasks leased, each with its lease. */
  public List<Task> pollTasks(String queue, String identity, int maxTasks, Duration wait) {
    return pollTasks(
            PollTasksRequest.newBuilder()
                .setQueue(queue)
                .setIdentity(identity)
                .setMaxTasks(maxTasks)
                .setWait(toProto(wait))
                .build())
        .getTasksList();
  }

  /** Extends a lease; the answer says when it now expires and whether to stop ({@code cancel_requested}). */
  public HeartbeatTaskResponse heartbeatTask(HeartbeatTaskRequest request) {
    return taskCall("HeartbeatTask", s -> s.heartbeatTask(request));
  }

  /** {@link #heartbeatTask(HeartbeatTaskRequest)} with progress details (may be empty). */
  public HeartbeatTaskResponse heartbeatTask(String name, String leaseToken, Map<String, ?> details) {
    return heartbeatTask(
        HeartbeatTaskRequest.newBuilder()
            .setName(name)
            .setLeaseToken(leaseToken)
            .setDetails(Structs.toStruct(details))
            .build());
  }

  /**
   * Completes a leased task; answered once the step that applied the result is durably saved. A
   * request without {@code request_id} gets a random one, so gRPC's own retry is idempotent; to
   * retry across calls, set a stable one (a {@link Worker} uses {@code "{name}#{attempt}#complete"}).
   */
  public CompleteTaskResponse completeTask(CompleteTaskRequest request) {
    CompleteTaskRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return taskCall("CompleteTask", s -> s.completeTask(r));
  }

  /** {@link #completeTask(CompleteTaskRequest)} with a result map; returns the instance after the step. */
  public Workflow completeTask(String name, String leaseToken, Map<String, ?> result, String requestId) {
    return completeTask(
            CompleteTaskRequest.newBuilder()
                .setName(name)
                .setLeaseToken(leaseToken)
                .setResult(Structs.toStruct(result))
                .setRequestId(requestId == null ? "" : requestId)
                .build())
        .getWorkflow();
  }

  /**
   * Fails a leased attempt: the answer's task is BACKOFF when it will be retried, FAILED or
   * TIMED_OUT when it gave up. A request without {@code request_id} gets a random one.
   */
  public FailTaskResponse failTask(FailTaskRequest request) {
    FailTaskRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return taskCall("FailTask", s -> s.failTask(r));
  }

  /** {@link #failTask(FailTaskRequest)} with its own deadline: a worker that shuts down cannot wait long. */
  FailTaskResponse failTask(FailTaskRequest request, Duration timeout) {
    FailTaskRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return taskCall(timeout, s -> s.failTask(r));
  }

  /** One task by its resource name, {@code workflows/{workflow_id}/tasks/{task_id}} (without its lease). */
  public Task getTask(String name) {
    GetTaskRequest request = GetTaskRequest.newBuilder().setName(name).build();
    return taskCall("GetTask", s -> s.getTask(request)).getTask();
  }

  public ListTasksResponse listTasksPage(ListTasksRequest request) {
    return taskCall("ListTasks", s -> s.listTasks(request));
  }

  /** Every task matching the filters of {@code filter} (queue, workflow, status), across all pages. */
  public List<Task> listTasks(ListTasksRequest filter) {
    List<Task> all = new ArrayList<>();
    String token = filter.getPageToken();
    do {
      ListTasksResponse page = listTasksPage(filter.toBuilder().setPageToken(token).build());
      all.addAll(page.getTasksList());
      token = page.getNextPageToken();
    } while (!token.isEmpty());
    return all;
  }

  static com.google.protobuf.Duration toProto(Duration d) {
    return com.google.protobuf.Duration.newBuilder().setSeconds(d.getSeconds()).setNanos(d.getNano()).build();
  }

  /**
   * Every revision of an instance in order, each exactly once, ending after a terminal one.
   *
   * <p>Without {@link WatchOptions#withAfterRevision} the first message is CURRENT (the instance
   * now), then one STEP per new revision; with it, every revision after it is replayed first. When
   * the stream fails with UNAVAILABLE (a dropped connection, a restarting server) or with
   * CANCELLED, INTERNAL or UNKNOWN without an ErrorInfo reason, it is reopened after the last
   * revision delivered; it gives up, throwing the last error, after {@link
   * WatchOptions#withReconnectBudget the reconnect budget} passes without a new revision. Any other
   * failure throws {@link StatewrightException} at once. If the instance already ended at a
   * revision at or before {@code afterRevision}, the stream ends without messages.
   *
   * <p>By default the stream has no deadline: it lasts as long as the instance. It runs in the
   * {@link io.grpc.Context} current at this call, so cancelling that context ends it (with
   * CANCELLED) instead of reconnecting; so does interrupting the iterating thread, or shutting the
   * channel down (with the channel's UNAVAILABLE). {@link WatchStream#close} ends it quietly.
   */
  public WatchStream watch(String name, WatchOptions options) {
    return new ResumingWatch(stub, channel, this::get, workflowName(name), options);
  }

  /** {@link #watch(String, WatchOptions)} with {@link WatchOptions#defaults()}. */
  public WatchStream watch(String name) {
    return watch(name, WatchOptions.defaults());
  }

  /**
   * Hands every revision of an instance to {@code consumer}, in order and each exactly once, and
   * returns after the terminal one (or at once if the instance already ended at or before {@code
   * afterRevision}); see {@link #watch(String, WatchOptions)} for reconnects. Blocks the calling
   * thread; interrupting it or cancelling its {@link io.grpc.Context} ends the watch with
   * CANCELLED. An exception thrown by {@code consumer} ends the stream and propagates.
   *
   * @throws StatewrightException when the watch cannot go on: a final error, the reconnect budget
   *     spent, a stream deadline, or cancellation
   */
  public void watch(String name, WatchOptions options, Consumer<? super WatchWorkflowResponse> consumer) {
    try (WatchStream stream = watch(name, options)) {
      while (stream.hasNext()) {
        consumer.accept(stream.next());
      }
    }
  }

  static boolean terminal(WorkflowStatus status) {
    return status == WorkflowStatus.WORKFLOW_STATUS_COMPLETED
        || status == WorkflowStatus.WORKFLOW_STATUS_FAILED
        || status == WorkflowStatus.WORKFLOW_STATUS_CANCELLED;
  }

  /** Transport failures a reconnect can cure; errors with an ErrorInfo reason are final. */
  static boolean resumable(StatewrightException e) {
    if (e.code() == Status.Code.UNAVAILABLE) {
      return true;
    }
    boolean transport =
        e.code() == Status.Code.CANCELLED || e.code() == Status.Code.INTERNAL || e.code() == Status.Code.UNKNOWN;
    return transport && e.reason().isEmpty();
  }
}
