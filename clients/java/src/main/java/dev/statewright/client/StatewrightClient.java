package dev.statewright.client;

import dev.statewright.v1.BackfillScheduleRequest;
import dev.statewright.v1.BatchOperation;
import dev.statewright.v1.BatchServiceGrpc;
import dev.statewright.v1.BatchState;
import dev.statewright.v1.CancelBatchOperationRequest;
import dev.statewright.v1.GetBatchOperationRequest;
import dev.statewright.v1.GetBatchOperationResponse;
import dev.statewright.v1.ListBatchOperationsRequest;
import dev.statewright.v1.ListBatchOperationsResponse;
import dev.statewright.v1.StartBatchOperationRequest;
import dev.statewright.v1.StartBatchOperationResponse;
import dev.statewright.v1.CreateScheduleRequest;
import dev.statewright.v1.DeleteScheduleRequest;
import dev.statewright.v1.GetScheduleRequest;
import dev.statewright.v1.ListSchedulesRequest;
import dev.statewright.v1.ListSchedulesResponse;
import dev.statewright.v1.PauseScheduleRequest;
import dev.statewright.v1.Schedule;
import dev.statewright.v1.ScheduleActionResult;
import dev.statewright.v1.ScheduleServiceGrpc;
import dev.statewright.v1.TriggerScheduleRequest;
import dev.statewright.v1.UnpauseScheduleRequest;
import dev.statewright.v1.UpdateScheduleRequest;
import dev.statewright.v1.CancelWorkflowRequest;
import dev.statewright.v1.CancelWorkflowResponse;
import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.CompleteTaskResponse;
import dev.statewright.v1.CountWorkflowsRequest;
import dev.statewright.v1.CountWorkflowsResponse;
import dev.statewright.v1.Definition;
import dev.statewright.v1.FailTaskRequest;
import dev.statewright.v1.FailTaskResponse;
import dev.statewright.v1.GetDiagnosticsRequest;
import dev.statewright.v1.GetDiagnosticsResponse;
import dev.statewright.v1.GetQueueConfigRequest;
import dev.statewright.v1.GetQueueConfigResponse;
import dev.statewright.v1.GetTaskRequest;
import dev.statewright.v1.GetWorkflowRequest;
import dev.statewright.v1.HeartbeatTaskRequest;
import dev.statewright.v1.HeartbeatTaskResponse;
import dev.statewright.v1.ListDefinitionsRequest;
import dev.statewright.v1.ListDefinitionsResponse;
import dev.statewright.v1.ListQueuesRequest;
import dev.statewright.v1.ListTasksRequest;
import dev.statewright.v1.ListTasksResponse;
import dev.statewright.v1.ListWorkflowsRequest;
import dev.statewright.v1.ListWorkflowsResponse;
import dev.statewright.v1.PollTasksRequest;
import dev.statewright.v1.PollTasksResponse;
import dev.statewright.v1.QueueConfig;
import dev.statewright.v1.QueueStatus;
import dev.statewright.v1.MigrateWorkflowRequest;
import dev.statewright.v1.MigrateWorkflowResponse;
import dev.statewright.v1.ResumeWorkflowRequest;
import dev.statewright.v1.ResumeWorkflowResponse;
import dev.statewright.v1.SetQueueConfigRequest;
import dev.statewright.v1.SetQueueConfigResponse;
import dev.statewright.v1.PauseWorkflowRequest;
import dev.statewright.v1.PauseWorkflowResponse;
import dev.statewright.v1.ResetWorkflowRequest;
import dev.statewright.v1.ResetWorkflowResponse;
import dev.statewright.v1.RetryWorkflowRequest;
import dev.statewright.v1.RetryWorkflowResponse;
import dev.statewright.v1.UnpauseWorkflowRequest;
import dev.statewright.v1.UnpauseWorkflowResponse;
import dev.statewright.v1.SignalWithStartWorkflowRequest;
import dev.statewright.v1.SignalWithStartWorkflowResponse;
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
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptors;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A small blocking client for {@code statewright.v1.WorkflowService}, {@code
 * statewright.v1.TaskService} (the calls a {@link Worker} makes, for workers of your own), {@code
 * ScheduleService} and {@code BatchService}.
 *
 * <ul>
 *   <li>The channel carries the shared service config: gRPC retries a call, with backoff, only
 *       when it fails with UNAVAILABLE. Mutating calls get a generated {@code request_id} when the
 *       request has none, so such a retry is idempotent on the server.
 *   <li>Every unary call has a deadline: the service config's per-method timeout.
 *   <li>Failures are thrown as {@link StatewrightException} with the ErrorInfo reason.
 *   <li>{@link #watch(String, WatchOptions)} resumes with {@code after_revision} after a dropped
 *       stream, so every revision is delivered exactly once.
 *   <li>{@link #builder()} sets up TLS (a CA, a client certificate for mTLS) and a bearer token,
 *       static or from a {@link TokenProvider}, sent on every call; {@link #fromEnvironment()}
 *       takes them from {@code STATEWRIGHT_ADDRESS}, {@code STATEWRIGHT_TOKEN} and {@code
 *       STATEWRIGHT_TLS_CA}/{@code _CERT}/{@code _KEY}.
 * </ul>
 */
public final class StatewrightClient implements AutoCloseable {
  /** The address when none is given (nor {@code STATEWRIGHT_ADDRESS} or {@code STATEWRIGHT_TARGET} set). */
  public static final String DEFAULT_TARGET = "127.0.0.1:50051";

  /** The server's {@code host:port}. */
  public static final String ENV_ADDRESS = "STATEWRIGHT_ADDRESS";
  /** The older name of {@link #ENV_ADDRESS}, read when that is not set. */
  public static final String ENV_TARGET = "STATEWRIGHT_TARGET";
  /** A static bearer token. */
  public static final String ENV_TOKEN = "STATEWRIGHT_TOKEN";
  /** A PEM file of the CAs that sign the server's certificate; set, it means TLS. */
  public static final String ENV_TLS_CA = "STATEWRIGHT_TLS_CA";
  /** A PEM file of the client certificate (chain) for mTLS, with {@link #ENV_TLS_KEY}; set, it means TLS. */
  public static final String ENV_TLS_CERT = "STATEWRIGHT_TLS_CERT";
  /** A PEM (PKCS#8) file of the client certificate's private key, with {@link #ENV_TLS_CERT}. */
  public static final String ENV_TLS_KEY = "STATEWRIGHT_TLS_KEY";

  private static final Duration FALLBACK_TIMEOUT = Duration.ofSeconds(30);
  /** How much longer than its {@code wait} a PollTasks call may take before it is abandoned. */
  static final Duration POLL_DEADLINE_MARGIN = Duration.ofSeconds(5);
  /** What a poll's answer may take unless its request says otherwise: gRPC's default receive limit. */
  public static final int DEFAULT_MAX_RECEIVE_BYTES = 4 * 1024 * 1024;

  private final ManagedChannel channel;
  private final boolean ownsChannel;
  // The channel the stubs use: with the bearer token on every call when there is one.
  private final Channel calls;
  private final WorkflowServiceGrpc.WorkflowServiceBlockingStub stub;
  private final TaskServiceGrpc.TaskServiceBlockingStub taskStub;
  private final ScheduleServiceGrpc.ScheduleServiceBlockingStub scheduleStub;
  private final BatchServiceGrpc.BatchServiceBlockingStub batchStub;
  private final Map<String, Duration> timeouts = ServiceConfig.methodTimeouts();
  private final Map<String, Duration> taskTimeouts = ServiceConfig.methodTimeouts(ServiceConfig.TASK_SERVICE);
  private final Map<String, Duration> batchTimeouts = ServiceConfig.methodTimeouts(ServiceConfig.BATCH_SERVICE);

  /** Uses an existing channel (build it with {@link ServiceConfig#apply}); not closed by us. */
  public StatewrightClient(ManagedChannel channel) {
    this(channel, false);
  }

  private StatewrightClient(ManagedChannel channel, boolean ownsChannel) {
    this(channel, ownsChannel, null);
  }

  private StatewrightClient(ManagedChannel channel, boolean ownsChannel, BearerAuth auth) {
    this.channel = channel;
    this.ownsChannel = ownsChannel;
    Channel authed = auth == null ? channel : ClientInterceptors.intercept(channel, auth);
    // The caller's trace context goes with every call (a no-op without an OpenTelemetry SDK).
    this.calls = ClientInterceptors.intercept(authed, Tracing.INTERCEPTOR);
    this.stub = WorkflowServiceGrpc.newBlockingStub(calls);
    this.taskStub = TaskServiceGrpc.newBlockingStub(calls);
    this.scheduleStub = ScheduleServiceGrpc.newBlockingStub(calls);
    this.batchStub = BatchServiceGrpc.newBlockingStub(calls);
  }

  /** A plaintext connection to {@code host:port} with the service config and retries on, and no token. */
  public static StatewrightClient connect(String target) {
    return builder(target).tls(false).build();
  }

  /**
   * A client configured from the environment: {@code STATEWRIGHT_ADDRESS} (or the older {@code
   * STATEWRIGHT_TARGET}; default {@value #DEFAULT_TARGET}), {@code STATEWRIGHT_TOKEN}, {@code
   * STATEWRIGHT_TLS_CA}, {@code STATEWRIGHT_TLS_CERT} and {@code STATEWRIGHT_TLS_KEY}. Any TLS
   * variable set means TLS; see {@link Builder#fromEnvironment(Map)}.
   *
   * @throws IllegalArgumentException when a variable's file cannot be read or holds no PEM
   * @throws IllegalStateException when the token would go in plaintext to a remote address
   */
  public static StatewrightClient fromEnvironment() {
    return builder().fromEnvironment().build();
  }

  /** A builder for {@value #DEFAULT_TARGET}, plaintext, no token, until told otherwise. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder for the server at {@code address} ({@code host:port}, or any gRPC target). */
  public static Builder builder(String address) {
    return new Builder().address(address);
  }

  /**
   * The channel every call of this client goes through, with its bearer token (if it has one) on
   * each call: raw stubs built on it, such as {@code WorkflowServiceGrpc.newStub(client.channel())},
   * carry the token too.
   */
  public Channel channel() {
    return calls;
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

  private <T> T scheduleCall(Function<ScheduleServiceGrpc.ScheduleServiceBlockingStub, T> rpc) {
    try {
      long nanos = FALLBACK_TIMEOUT.toNanos();
      return rpc.apply(scheduleStub.withDeadlineAfter(nanos, TimeUnit.NANOSECONDS));
    } catch (StatusRuntimeException e) {
      throw StatewrightException.from(e);
    }
  }

  private <T> T batchCall(String method, Function<BatchServiceGrpc.BatchServiceBlockingStub, T> rpc) {
    try {
      long nanos = batchTimeouts.getOrDefault(method, FALLBACK_TIMEOUT).toNanos();
      return rpc.apply(batchStub.withDeadlineAfter(nanos, TimeUnit.NANOSECONDS));
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

  public SignalWithStartWorkflowResponse signalWithStart(SignalWithStartWorkflowRequest request) {
    SignalWithStartWorkflowRequest r =
        request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("SignalWithStartWorkflow", s -> s.signalWithStartWorkflow(r));
  }

  public CancelWorkflowResponse cancel(CancelWorkflowRequest request) {
    CancelWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("CancelWorkflow", s -> s.cancelWorkflow(r));
  }

  /**
   * Puts a FAILED instance back into the state it failed in (a task that gave up is scheduled
   * anew); with dry_run set, answers what would happen and saves nothing.
   */
  public RetryWorkflowResponse retry(RetryWorkflowRequest request) {
    RetryWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("RetryWorkflow", s -> s.retryWorkflow(r));
  }

  /**
   * Puts any instance back at a revision of its history (its state and context, timers armed
   * anew, its task scheduled anew); work done since is not undone.
   */
  public ResetWorkflowResponse reset(ResetWorkflowRequest request) {
    ResetWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("ResetWorkflow", s -> s.resetWorkflow(r));
  }

  /**
   * Moves a RUNNING or WAITING instance to another version of its definition (its state_map
   * renames states, its set gives context fields a CEL value over the old context); checked
   * against both versions first. With dry_run set, answers the plan and saves nothing.
   */
  public MigrateWorkflowResponse migrate(MigrateWorkflowRequest request) {
    MigrateWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("MigrateWorkflow", s -> s.migrateWorkflow(r));
  }

  /**
   * Pauses a RUNNING or WAITING instance: nothing steps it until {@link #unpause} (its due
   * timers wait, its task is not offered, resumes and signals are refused WORKFLOW_PAUSED).
   */
  public PauseWorkflowResponse pause(PauseWorkflowRequest request) {
    PauseWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("PauseWorkflow", s -> s.pauseWorkflow(r));
  }

  /** Unpauses a paused instance: its due timers fire and its task is offered again. */
  public UnpauseWorkflowResponse unpause(UnpauseWorkflowRequest request) {
    UnpauseWorkflowRequest r = request.toBuilder().setRequestId(requestId(request.getRequestId())).build();
    return call("UnpauseWorkflow", s -> s.unpauseWorkflow(r));
  }

  public ListWorkflowsResponse listPage(ListWorkflowsRequest request) {
    return call("ListWorkflows", s -> s.listWorkflows(request));
  }

  /** How many instances a filter (as ListWorkflowsRequest's takes it) matches, and by status. */
  public CountWorkflowsResponse count(CountWorkflowsRequest request) {
    return call("CountWorkflows", s -> s.countWorkflows(request));
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

  /**
   * Delivers {@code event} to instance {@code workflowId}, starting it from {@code definition}
   * (latest version) with {@code input} first when it does not exist, in one step; check
   * {@code getStarted()} and {@code getAccepted()} on the answer.
   */
  public SignalWithStartWorkflowResponse signalWithStart(
      String definition,
      String workflowId,
      String event,
      Map<String, ?> payload,
      Map<String, ?> input) {
    return signalWithStart(
        SignalWithStartWorkflowRequest.newBuilder()
            .setDefinition(definition)
            .setWorkflowId(workflowId)
            .setEvent(event)
            .setPayload(Structs.toStruct(payload))
            .setInput(Structs.toStruct(input))
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
    // The call receives as much as the request asks for, and the server sends no more: it
    // leases only the tasks whose answer fits in max_bytes.
    int maxBytes = request.getMaxBytes() > 0 ? request.getMaxBytes() : DEFAULT_MAX_RECEIVE_BYTES;
    PollTasksRequest sized = request.toBuilder().setMaxBytes(maxBytes).build();
    return taskCall(
        wait.plus(POLL_DEADLINE_MARGIN), s -> s.withMaxInboundMessageSize(maxBytes).pollTasks(sized));
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

  // --- schedules (ScheduleService) ---

  /** Creates a schedule (its spec, action, policies and state in {@code request.getSchedule()}). */
  public Schedule createSchedule(CreateScheduleRequest request) {
    return scheduleCall(s -> s.createSchedule(request)).getSchedule();
  }

  /** One schedule ({@code schedules/ID}): its next fire times, recent actions and counts. */
  public Schedule getSchedule(String name) {
    GetScheduleRequest request = GetScheduleRequest.newBuilder().setName(name).build();
    return scheduleCall(s -> s.getSchedule(request)).getSchedule();
  }

  /** Every schedule, by id, across all pages. */
  public List<Schedule> listSchedules() {
    List<Schedule> all = new ArrayList<>();
    String token = "";
    do {
      ListSchedulesRequest request = ListSchedulesRequest.newBuilder().setPageToken(token).build();
      ListSchedulesResponse page = scheduleCall(s -> s.listSchedules(request));
      all.addAll(page.getSchedulesList());
      token = page.getNextPageToken();
    } while (!token.isEmpty());
    return all;
  }

  /** Replaces the spec, action and policies of {@code request.getSchedule().getName()}. */
  public Schedule updateSchedule(UpdateScheduleRequest request) {
    return scheduleCall(s -> s.updateSchedule(request)).getSchedule();
  }

  /** Deletes a schedule; the instances it started stay. */
  public void deleteSchedule(String name) {
    DeleteScheduleRequest request = DeleteScheduleRequest.newBuilder().setName(name).build();
    scheduleCall(s -> s.deleteSchedule(request));
  }

  /** Stops a schedule's fires, with a note (who and why). */
  public Schedule pauseSchedule(String name, String note) {
    PauseScheduleRequest request = PauseScheduleRequest.newBuilder().setName(name).setNote(note).build();
    return scheduleCall(s -> s.pauseSchedule(request)).getSchedule();
  }

  /** Resumes a schedule's fires from now on. */
  public Schedule unpauseSchedule(String name, String note) {
    UnpauseScheduleRequest request =
        UnpauseScheduleRequest.newBuilder().setName(name).setNote(note).build();
    return scheduleCall(s -> s.unpauseSchedule(request)).getSchedule();
  }

  /** Fires a schedule once now (with its overlap policy unless {@code force}). */
  public ScheduleActionResult triggerSchedule(String name, boolean force) {
    TriggerScheduleRequest request =
        TriggerScheduleRequest.newBuilder().setName(name).setForce(force).build();
    return scheduleCall(s -> s.triggerSchedule(request)).getAction();
  }

  /** Runs every nominal time from {@code start} to {@code end}, paced; how many fires. */
  public long backfillSchedule(String name, Instant start, Instant end) {
    BackfillScheduleRequest request =
        BackfillScheduleRequest.newBuilder()
            .setName(name)
            .setStartTime(toProto(start))
            .setEndTime(toProto(end))
            .build();
    return scheduleCall(s -> s.backfillSchedule(request)).getFires();
  }

  // --- batch operations (BatchService) ---

  /**
   * Starts a batch: the request's operation applied to every instance its filter matches in its
   * definition, now, as a durable job that survives restarts, at its rate (zero: 50 a second). A
   * request without a {@code batch_id} (and not a dry run) gets a random one, so gRPC's retry of it
   * answers the same batch instead of starting a second one. With {@code dry_run} the instances
   * are counted and sampled, and nothing is saved.
   */
  public StartBatchOperationResponse startBatchOperation(StartBatchOperationRequest request) {
    StartBatchOperationRequest r =
        request.getBatchId().isEmpty() && !request.getDryRun()
            ? request.toBuilder().setBatchId(UUID.randomUUID().toString()).build()
            : request;
    return batchCall("StartBatchOperation", s -> s.startBatchOperation(r));
  }

  /** A batch and a page of the instances it failed on ({@code failures_page_size}, ..._token). */
  public GetBatchOperationResponse getBatchOperation(GetBatchOperationRequest request) {
    return batchCall("GetBatchOperation", s -> s.getBatchOperation(request));
  }

  /** One batch ({@code batches/ID} or {@code ID}): its state and counts. */
  public BatchOperation getBatchOperation(String name) {
    GetBatchOperationRequest request = GetBatchOperationRequest.newBuilder().setName(batchName(name)).setFailuresPageSize(1).build();
    return getBatchOperation(request).getBatch();
  }

  /** One page of batches, newest first. */
  public ListBatchOperationsResponse listBatchOperationsPage(ListBatchOperationsRequest request) {
    return batchCall("ListBatchOperations", s -> s.listBatchOperations(request));
  }

  /** Every batch in {@code state} ({@code BATCH_STATE_UNSPECIFIED}: any), newest first, across all pages. */
  public List<BatchOperation> listBatchOperations(BatchState state) {
    List<BatchOperation> all = new ArrayList<>();
    String token = "";
    do {
      ListBatchOperationsRequest request = ListBatchOperationsRequest.newBuilder().setState(state).setPageToken(token).build();
      ListBatchOperationsResponse page = listBatchOperationsPage(request);
      all.addAll(page.getBatchesList());
      token = page.getNextPageToken();
    } while (!token.isEmpty());
    return all;
  }

  /**
   * Stops a running batch: no instance is started on after the answer; the steps it applied stay.
   * A cancelled batch is answered as it is; a completed one is refused (FAILED_PRECONDITION,
   * {@code BATCH_FINISHED}).
   */
  public BatchOperation cancelBatchOperation(String name, String reason) {
    CancelBatchOperationRequest request = CancelBatchOperationRequest.newBuilder().setName(batchName(name)).setReason(reason).build();
    return batchCall("CancelBatchOperation", s -> s.cancelBatchOperation(request)).getBatch();
  }

  /**
   * Reads the batch every {@code interval} until it has finished and returns it as it ended
   * (COMPLETED or CANCELLED); {@code progress} (may be null) gets the batch as first read and again
   * each time its state or counts changed. A failed read throws {@link StatewrightException}.
   *
   * @throws InterruptedException when the thread is interrupted while it waits
   */
  public BatchOperation waitBatchOperation(String name, Duration interval, Consumer<? super BatchOperation> progress)
      throws InterruptedException {
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("interval must be positive, not " + interval);
    }
    BatchOperation seen = null;
    while (true) {
      BatchOperation batch = getBatchOperation(name);
      if (progress != null && (seen == null || progressed(seen, batch))) {
        progress.accept(batch);
      }
      seen = batch;
      if (batchFinished(batch)) {
        return batch;
      }
      Thread.sleep(interval.toMillis(), interval.toNanosPart() % 1_000_000);
    }
  }

  private static boolean progressed(BatchOperation before, BatchOperation after) {
    return before.getState() != after.getState()
        || before.getMatched() != after.getMatched()
        || before.getDone() != after.getDone()
        || before.getFailed() != after.getFailed();
  }

  /** Whether a batch has ended: COMPLETED or CANCELLED. */
  public static boolean batchFinished(BatchOperation batch) {
    return batch.getState() == BatchState.BATCH_STATE_COMPLETED || batch.getState() == BatchState.BATCH_STATE_CANCELLED;
  }

  /** {@code batches/{id}} for a bare id or a resource name. */
  public static String batchName(String nameOrId) {
    return nameOrId.startsWith("batches/") ? nameOrId : "batches/" + nameOrId;
  }

  /** Sets a queue's flow control (the admin role); every limit zero removes it. The config as stored (empty: none). */
  public SetQueueConfigResponse setQueueConfig(QueueConfig config) {
    SetQueueConfigRequest request = SetQueueConfigRequest.newBuilder().setConfig(config).build();
    return taskCall("SetQueueConfig", s -> s.setQueueConfig(request));
  }

  /** A queue's flow control (unset: no limits) and the keys closed on it now. */
  public GetQueueConfigResponse getQueueConfig(String queue) {
    GetQueueConfigRequest request = GetQueueConfigRequest.newBuilder().setQueue(queue).build();
    return taskCall("GetQueueConfig", s -> s.getQueueConfig(request));
  }

  /** Every queue with limits or open tasks: backlog, leases, tokens, busiest and closed keys. */
  public List<QueueStatus> listQueues(int keyCount) {
    ListQueuesRequest request = ListQueuesRequest.newBuilder().setKeyCount(keyCount).build();
    return taskCall("ListQueues", s -> s.listQueues(request)).getQueuesList();
  }

  static com.google.protobuf.Timestamp toProto(java.time.Instant t) {
    return com.google.protobuf.Timestamp.newBuilder().setSeconds(t.getEpochSecond()).setNanos(t.getNano()).build();
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
   * revision delivered (after RESOURCE_EXHAUSTED {@code RATE_LIMITED} too, no sooner than its
   * RetryInfo delay); it gives up, throwing the last error, after {@link
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

  /**
   * Starts an instance and returns it once it rests (WAITING, COMPLETED, FAILED or CANCELLED), or
   * with {@link Until#FINISH} once it finished. It follows the instance with {@link #watch}, so it
   * does not poll. A FAILED instance is returned, not thrown (its {@code error} says why). The start
   * carries a request id (one is made when the request has none), so a retried start never makes a
   * second instance.
   *
   * @param timeout bounds the whole call; {@code null}: no bound
   * @throws ExecutionTimedOutException when {@code timeout} passed first; the instance goes on
   */
  public Workflow execute(StartWorkflowRequest request, Until until, Duration timeout) {
    long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
    Workflow latest = start(request).getWorkflow();
    if (arrived(latest, until)) {
      return latest;
    }
    WatchOptions options = WatchOptions.defaults().withAfterRevision(latest.getRevision());
    if (timeout != null) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return timedOut(latest, until, timeout);
      }
      options = options.withStreamTimeout(Duration.ofNanos(left));
    }
    try (WatchStream stream = watch(latest.getName(), options)) {
      while (stream.hasNext()) {
        latest = stream.next().getWorkflow();
        if (arrived(latest, until)) {
          return latest;
        }
      }
    } catch (StatewrightException e) {
      if (timeout == null || e.code() != Status.Code.DEADLINE_EXCEEDED) {
        throw e;
      }
    }
    // The timeout passed, or the watch ended at a terminal revision it had already replayed.
    return timedOut(get(latest.getName()), until, timeout);
  }

  private static Workflow timedOut(Workflow current, Until until, Duration timeout) {
    if (arrived(current, until)) {
      return current;
    }
    throw new ExecutionTimedOutException(current, until, timeout);
  }

  private static boolean arrived(Workflow workflow, Until until) {
    return terminal(workflow.getStatus())
        || (until == Until.REST && workflow.getStatus() == WorkflowStatus.WORKFLOW_STATUS_WAITING);
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

  /**
   * Transport failures a reconnect can cure, and a rate limit (after its RetryInfo delay); other
   * errors with an ErrorInfo reason are final.
   */
  static boolean resumable(StatewrightException e) {
    if (e.code() == Status.Code.UNAVAILABLE || e.isRateLimited()) {
      return true;
    }
    boolean transport =
        e.code() == Status.Code.CANCELLED || e.code() == Status.Code.INTERNAL || e.code() == Status.Code.UNKNOWN;
    return transport && e.reason().isEmpty();
  }
  // --- configuration ----------------------------------------------------------------------

  /**
   * Configures a {@link StatewrightClient}: where the server is, TLS, and the bearer token.
   *
   * <pre>{@code
   * StatewrightClient client = StatewrightClient.builder("statewright.internal:50051")
   *     .caFile(Path.of("/etc/statewright/ca.pem"))                      // TLS, trusting this CA
   *     .clientCertificate(Path.of("tls.crt"), Path.of("tls.key"))       // mTLS
   *     .token(System.getenv("STATEWRIGHT_TOKEN"))                        // or tokenProvider(...)
   *     .build();
   * }</pre>
   *
   * <ul>
   *   <li><b>TLS</b> is on when {@link #tls(boolean) tls(true)} is called, or a CA or a client
   *       certificate is given; without a CA the system's trusted roots verify the server. The
   *       server's certificate must name the host of the address (or {@link #authority}).
   *   <li><b>The token</b> goes as {@code authorization: Bearer <token>} on every call of both
   *       services, streams included. {@link #build()} refuses to send it in plaintext to an
   *       address that is not this machine (localhost, a loopback address) unless {@link
   *       #allowInsecureToken(boolean) allowInsecureToken(true)} says so.
   *   <li>Files are read once, by {@link #build()}: a client made after a certificate was rotated
   *       uses the new one.
   * </ul>
   */
  public static final class Builder {
    private String address = DEFAULT_TARGET;
    private boolean addressGiven;
    private ManagedChannel channel;
    private Boolean tls;
    private Pem ca;
    private Pem certificate;
    private Pem key;
    private String authority;
    private String token;
    private TokenProvider tokenProvider;
    private boolean insecureToken;
    private java.util.function.Supplier<Instant> clock = Instant::now;

    private Builder() {}

    /** The server: {@code host:port}, or any target gRPC resolves (default {@value #DEFAULT_TARGET}). */
    public Builder address(String address) {
      if (Objects.requireNonNull(address, "address").isBlank()) {
        throw new IllegalArgumentException("the address must not be blank");
      }
      this.address = address.strip();
      this.addressGiven = true;
      return this;
    }

    /**
     * Uses {@code channel} as it is (not closed by the client) instead of building one, with the
     * token, if any, added to each call. It cannot be combined with an address or TLS options:
     * those belong to the channel. The plaintext rule still holds, checked on every call against
     * the connection's security level and authority.
     */
    public Builder channel(ManagedChannel channel) {
      this.channel = Objects.requireNonNull(channel, "channel");
      return this;
    }

    /** TLS on or off. Off is a conflict with a CA or a client certificate. */
    public Builder tls(boolean on) {
      this.tls = on;
      return this;
    }

    /** TLS, trusting the CA certificates in the PEM file {@code path} instead of the system's. */
    public Builder caFile(Path path) {
      this.ca = Pem.file(Objects.requireNonNull(path, "path"), "the CA file " + path);
      return this;
    }

    /** TLS, trusting the CA certificates in {@code pem} instead of the system's. */
    public Builder caPem(byte[] pem) {
      this.ca = Pem.bytes(Objects.requireNonNull(pem, "pem"), "the CA PEM");
      return this;
    }

    /**
     * mTLS: present the certificate (chain) in the PEM file {@code certificate}, whose private key
     * is the PKCS#8 PEM file {@code key}. Turns TLS on.
     */
    public Builder clientCertificate(Path certificate, Path key) {
      Objects.requireNonNull(certificate, "certificate");
      Objects.requireNonNull(key, "key");
      this.certificate = Pem.file(certificate, "the client certificate file " + certificate);
      this.key = Pem.file(key, "the client key file " + key);
      return this;
    }

    /** mTLS from PEM bytes: the certificate (chain) and its PKCS#8 private key. Turns TLS on. */
    public Builder clientCertificatePem(byte[] certificate, byte[] key) {
      Objects.requireNonNull(certificate, "certificate");
      Objects.requireNonNull(key, "key");
      this.certificate = Pem.bytes(certificate, "the client certificate PEM");
      this.key = Pem.bytes(key, "the client key PEM");
      return this;
    }

    /** The name the server's certificate is checked against, when it is not the address's host. */
    public Builder authority(String authority) {
      this.authority = Objects.requireNonNull(authority, "authority");
      return this;
    }

    /** A static bearer token, sent on every call; replaces a {@link #tokenProvider}. */
    public Builder token(String token) {
      this.token = BearerToken.of(Objects.requireNonNull(token, "token")).value();
      this.tokenProvider = null;
      return this;
    }

    /**
     * Bearer tokens from {@code provider}, asked before a call when the token held is used up (see
     * {@link TokenProvider}); replaces a static {@link #token}.
     */
    public Builder tokenProvider(TokenProvider provider) {
      this.tokenProvider = Objects.requireNonNull(provider, "provider");
      this.token = null;
      return this;
    }

    /**
     * Allows the token to go in plaintext to any address. Only for a network you trust end to end
     * (a service mesh that encrypts, say): anyone on the path can read and reuse the token.
     */
    public Builder allowInsecureToken(boolean allow) {
      this.insecureToken = allow;
      return this;
    }

    /** The clock tokens' expiry is compared with: for tests. */
    Builder clock(java.util.function.Supplier<Instant> clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** {@link #fromEnvironment(Map)} with this process's environment. */
    public Builder fromEnvironment() {
      return fromEnvironment(System.getenv());
    }

    /**
     * Takes the settings the variables in {@code env} give, leaving the others as they are (so
     * calls after this one override it): {@value StatewrightClient#ENV_ADDRESS} (or, when unset,
     * {@value StatewrightClient#ENV_TARGET}), {@value StatewrightClient#ENV_TOKEN}, {@value
     * StatewrightClient#ENV_TLS_CA}, and {@value StatewrightClient#ENV_TLS_CERT} with {@value
     * StatewrightClient#ENV_TLS_KEY}. Any of the TLS variables set means TLS. Empty values count as
     * unset.
     *
     * @throws IllegalArgumentException when only one of the certificate and key is set, or the
     *     token is not a header value
     */
    public Builder fromEnvironment(Map<String, String> env) {
      String addr = value(env, ENV_ADDRESS);
      if (addr == null) {
        addr = value(env, ENV_TARGET);
      }
      if (addr != null) {
        address(addr);
      }
      String bearer = value(env, ENV_TOKEN);
      if (bearer != null) {
        try {
          token(bearer);
        } catch (IllegalArgumentException e) {
          // The message must not quote the token.
          throw new IllegalArgumentException(ENV_TOKEN + " is not a usable token: " + e.getMessage());
        }
      }
      String caPath = value(env, ENV_TLS_CA);
      String certPath = value(env, ENV_TLS_CERT);
      String keyPath = value(env, ENV_TLS_KEY);
      if ((certPath == null) != (keyPath == null)) {
        throw new IllegalArgumentException(
            ENV_TLS_CERT + " and " + ENV_TLS_KEY + " go together, but only "
                + (certPath != null ? ENV_TLS_CERT : ENV_TLS_KEY) + " is set");
      }
      if (caPath != null) {
        ca = Pem.file(Path.of(caPath), ENV_TLS_CA + " (" + caPath + ")");
      }
      if (certPath != null) {
        certificate = Pem.file(Path.of(certPath), ENV_TLS_CERT + " (" + certPath + ")");
        key = Pem.file(Path.of(keyPath), ENV_TLS_KEY + " (" + keyPath + ")");
      }
      if (caPath != null || certPath != null) {
        tls = true;
      }
      return this;
    }

    private static String value(Map<String, String> env, String name) {
      String v = env.get(name);
      return v == null || v.strip().isEmpty() ? null : v.strip();
    }

    /** The address the client built now would use. */
    String address() {
      return address;
    }

    /** Whether a token is set (static or a provider). */
    boolean hasToken() {
      return token != null || tokenProvider != null;
    }

    /** Whether the client built now would use TLS. */
    boolean usesTls() {
      return tls != null ? tls : ca != null || certificate != null;
    }

    /**
     * Builds the client. Reads and checks the PEM files now.
     *
     * @throws IllegalArgumentException when a file cannot be read or holds no usable PEM
     * @throws IllegalStateException when the options contradict each other, or the token would go
     *     in plaintext to an address off this machine without {@link #allowInsecureToken}
     */
    public StatewrightClient build() {
      boolean hasToken = hasToken();
      if (channel != null) {
        if (addressGiven || tls != null || ca != null || certificate != null || authority != null) {
          throw new IllegalStateException(
              "channel(...) is used as it is: the address, TLS options and authority belong to it, do not set them too");
        }
        return new StatewrightClient(channel, false, hasToken ? auth() : null);
      }
      boolean useTls = usesTls();
      if (!useTls && (ca != null || certificate != null)) {
        throw new IllegalStateException("TLS is turned off, but " + (ca != null ? ca.label : certificate.label) + " is given");
      }
      if (hasToken && !useTls && !insecureToken && !Targets.isLoopback(address)) {
        throw new IllegalStateException(BearerAuth.plaintextRefusal(address));
      }
      ChannelCredentials credentials = useTls ? tlsCredentials() : InsecureChannelCredentials.create();
      ManagedChannelBuilder<?> builder = Grpc.newChannelBuilder(address, credentials);
      if (authority != null) {
        builder.overrideAuthority(authority);
      }
      return new StatewrightClient(ServiceConfig.apply(builder).build(), true, hasToken ? auth() : null);
    }

    private BearerAuth auth() {
      return token != null ? BearerAuth.fixed(token, insecureToken) : BearerAuth.provided(tokenProvider, insecureToken, clock);
    }

    private ChannelCredentials tlsCredentials() {
      TlsChannelCredentials.Builder builder = TlsChannelCredentials.newBuilder();
      try {
        if (ca != null) {
          builder.trustManager(new ByteArrayInputStream(ca.certificates()));
        }
        if (certificate != null) {
          builder.keyManager(new ByteArrayInputStream(certificate.certificates()), new ByteArrayInputStream(key.privateKey()));
        }
      } catch (IOException e) {
        throw new IllegalArgumentException("the TLS material could not be read: " + e.getMessage(), e);
      }
      return builder.build();
    }
  }

  /** PEM text from a file or from bytes, named for error messages. */
  private static final class Pem {
    final String label;
    private final Path path;
    private final byte[] bytes;

    private Pem(String label, Path path, byte[] bytes) {
      this.label = label;
      this.path = path;
      this.bytes = bytes;
    }

    static Pem file(Path path, String label) {
      return new Pem(label, path, null);
    }

    static Pem bytes(byte[] bytes, String label) {
      return new Pem(label, null, bytes.clone());
    }

    byte[] read() {
      if (bytes != null) {
        return bytes.clone();
      }
      try {
        return Files.readAllBytes(path);
      } catch (IOException e) {
        throw new IllegalArgumentException("cannot read " + label + ": " + e, e);
      }
    }

    /** The bytes, once they are known to hold at least one X.509 certificate. */
    byte[] certificates() {
      byte[] pem = read();
      try {
        if (CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem)).isEmpty()) {
          throw new IllegalArgumentException(label + " holds no PEM certificate");
        }
      } catch (CertificateException e) {
        throw new IllegalArgumentException(label + " holds no readable PEM certificate: " + e.getMessage(), e);
      }
      return pem;
    }

    /** The bytes, once they look like the one private key format gRPC Java reads: PKCS#8 PEM. */
    byte[] privateKey() {
      byte[] pem = read();
      String text = new String(pem, StandardCharsets.US_ASCII);
      if (text.contains("-----BEGIN PRIVATE KEY-----")) {
        return pem;
      }
      if (text.contains("-----BEGIN RSA PRIVATE KEY-----") || text.contains("-----BEGIN EC PRIVATE KEY-----")) {
        throw new IllegalArgumentException(
            label + " is not PKCS#8, the key format gRPC Java reads; convert it with"
                + " `openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pkcs8`");
      }
      if (text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")) {
        throw new IllegalArgumentException(label + " is encrypted; give the key unencrypted (PKCS#8)");
      }
      throw new IllegalArgumentException(label + " holds no PEM private key (-----BEGIN PRIVATE KEY-----)");
    }
  }
}
