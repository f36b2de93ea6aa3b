package dev.statewright.client;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import dev.statewright.v1.GetWorkflowRequest;
import dev.statewright.v1.GetWorkflowResponse;
import dev.statewright.v1.ListWorkflowsRequest;
import dev.statewright.v1.ListWorkflowsResponse;
import dev.statewright.v1.MigrateWorkflowRequest;
import dev.statewright.v1.MigrateWorkflowResponse;
import dev.statewright.v1.ResumeWorkflowRequest;
import dev.statewright.v1.ResumeWorkflowResponse;
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
import dev.statewright.v1.StartWorkflowRequest;
import dev.statewright.v1.StartWorkflowResponse;
import dev.statewright.v1.WatchWorkflowRequest;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.WorkflowServiceGrpc;
import com.google.rpc.RetryInfo;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * An in-process WorkflowService whose answers each test scripts; records what it received. The same
 * server serves {@link #tasks}, a fake TaskService, and {@link #batches}, a fake BatchService.
 * {@link #onPort} serves them on 127.0.0.1 over
 * the network transport instead, with the server credentials given (TLS, mTLS, plaintext).
 */
final class FakeService extends WorkflowServiceGrpc.WorkflowServiceImplBase implements AutoCloseable {
  final List<Object> requests = new CopyOnWriteArrayList<>();
  final List<Deadline> deadlines = new CopyOnWriteArrayList<>();
  /** The deadline of each WatchWorkflow stream, null where it had none. */
  final List<Deadline> watchDeadlines = new CopyOnWriteArrayList<>();
  Function<GetWorkflowRequest, GetWorkflowResponse> getWorkflow;
  Function<StartWorkflowRequest, StartWorkflowResponse> startWorkflow;
  Function<ResumeWorkflowRequest, ResumeWorkflowResponse> resumeWorkflow;
  Function<ListWorkflowsRequest, ListWorkflowsResponse> listWorkflows;
  Function<SignalWithStartWorkflowRequest, SignalWithStartWorkflowResponse> signalWithStartWorkflow;
  Function<RetryWorkflowRequest, RetryWorkflowResponse> retryWorkflow;
  Function<ResetWorkflowRequest, ResetWorkflowResponse> resetWorkflow;
  Function<MigrateWorkflowRequest, MigrateWorkflowResponse> migrateWorkflow;
  Function<PauseWorkflowRequest, PauseWorkflowResponse> pauseWorkflow;
  Function<UnpauseWorkflowRequest, UnpauseWorkflowResponse> unpauseWorkflow;
  BiConsumer<WatchWorkflowRequest, StreamObserver<WatchWorkflowResponse>> watchWorkflow;
  final FakeTaskService tasks = new FakeTaskService();
  final FakeBatchService batches = new FakeBatchService();

  /** Every call received, as "Method authorization-header" ("Method -" without one), in order. */
  final List<String> calls = new CopyOnWriteArrayList<>();
  /** The attributes of every call's transport (the TLS session among them), in order. */
  final List<io.grpc.Attributes> callAttributes = new CopyOnWriteArrayList<>();
  /** Every call's traceparent header, as "Method traceparent" ("Method -" without one), in order. */
  final List<String> traceparents = new CopyOnWriteArrayList<>();

  private final Server server;
  /** A channel to the in-process server; null for one {@link #onPort}. */
  final ManagedChannel channel;

  private final ServerInterceptor recorder =
      new ServerInterceptor() {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
          String auth = headers.get(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER));
          calls.add(call.getMethodDescriptor().getBareMethodName() + " " + (auth == null ? "-" : auth));
          callAttributes.add(call.getAttributes());
          String traceparent = headers.get(Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER));
          traceparents.add(call.getMethodDescriptor().getBareMethodName() + " " + (traceparent == null ? "-" : traceparent));
          return next.startCall(call, headers);
        }
      };

  FakeService() throws IOException {
    String name = InProcessServerBuilder.generateName();
    server = InProcessServerBuilder.forName(name).directExecutor().addService(ServerInterceptors.intercept(this, recorder))
        .addService(ServerInterceptors.intercept(tasks, recorder))
        .addService(ServerInterceptors.intercept(batches, recorder)).build().start();
    // The same configuration a real client channel gets: service config plus retries.
    channel = ServiceConfig.apply(InProcessChannelBuilder.forName(name).directExecutor()).build();
  }

  private FakeService(ServerCredentials credentials) throws IOException {
    InetSocketAddress loopback = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    server = NettyServerBuilder.forAddress(loopback, credentials).addService(ServerInterceptors.intercept(this, recorder))
        .addService(ServerInterceptors.intercept(tasks, recorder))
        .addService(ServerInterceptors.intercept(batches, recorder)).build().start();
    channel = null;
  }

  /** Serves on a free port of 127.0.0.1 with {@code credentials}; see {@link #address()}. */
  static FakeService onPort(ServerCredentials credentials) throws IOException {
    return new FakeService(credentials);
  }

  /** {@code 127.0.0.1:port} of a server {@link #onPort}. */
  String address() {
    return "127.0.0.1:" + ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
  }

  /** RESOURCE_EXHAUSTED RATE_LIMITED with a RetryInfo of {@code delay}, as the real server sends. */
  static StatusRuntimeException rateLimited(Duration delay) {
    ErrorInfo info = ErrorInfo.newBuilder().setReason("RATE_LIMITED").setDomain(ErrorInfos.DOMAIN).putMetadata("limit", "5/s").build();
    RetryInfo retry = RetryInfo.newBuilder().setRetryDelay(StatewrightClient.toProto(delay)).build();
    com.google.rpc.Status status =
        com.google.rpc.Status.newBuilder()
            .setCode(Status.Code.RESOURCE_EXHAUSTED.value())
            .setMessage("key:test is over its rate of 5 requests per second")
            .addDetails(Any.pack(info))
            .addDetails(Any.pack(retry))
            .build();
    return StatusProto.toStatusRuntimeException(status);
  }

  /** A status carrying one ErrorInfo, as the real server sends. */
  static StatusRuntimeException error(Status.Code code, String reason, Map<String, String> metadata) {
    ErrorInfo info = ErrorInfo.newBuilder().setReason(reason).setDomain(ErrorInfos.DOMAIN).putAllMetadata(metadata).build();
    com.google.rpc.Status status =
        com.google.rpc.Status.newBuilder().setCode(code.value()).setMessage(reason.toLowerCase()).addDetails(Any.pack(info)).build();
    return StatusProto.toStatusRuntimeException(status);
  }

  private <Q, R> void unary(Q request, Function<Q, R> behaviour, StreamObserver<R> observer) {
    answer(requests, deadlines, request, behaviour, observer);
  }

  /** Records the request and its deadline, then answers it as {@code behaviour} says (a status it throws is the call's error). */
  static <Q, R> void answer(
      List<Object> requests, List<Deadline> deadlines, Q request, Function<Q, R> behaviour, StreamObserver<R> observer) {
    requests.add(request);
    deadlines.add(Context.current().getDeadline());
    try {
      observer.onNext(behaviour.apply(request));
      observer.onCompleted();
    } catch (StatusRuntimeException e) {
      observer.onError(e);
    }
  }

  @Override
  public void getWorkflow(GetWorkflowRequest request, StreamObserver<GetWorkflowResponse> observer) {
    unary(request, getWorkflow, observer);
  }

  @Override
  public void startWorkflow(StartWorkflowRequest request, StreamObserver<StartWorkflowResponse> observer) {
    unary(request, startWorkflow, observer);
  }

  @Override
  public void resumeWorkflow(ResumeWorkflowRequest request, StreamObserver<ResumeWorkflowResponse> observer) {
    unary(request, resumeWorkflow, observer);
  }

  @Override
  public void signalWithStartWorkflow(
      SignalWithStartWorkflowRequest request,
      StreamObserver<SignalWithStartWorkflowResponse> observer) {
    unary(request, signalWithStartWorkflow, observer);
  }

  @Override
  public void retryWorkflow(RetryWorkflowRequest request, StreamObserver<RetryWorkflowResponse> observer) {
    unary(request, retryWorkflow, observer);
  }

  @Override
  public void resetWorkflow(ResetWorkflowRequest request, StreamObserver<ResetWorkflowResponse> observer) {
    unary(request, resetWorkflow, observer);
  }

  @Override
  public void migrateWorkflow(MigrateWorkflowRequest request, StreamObserver<MigrateWorkflowResponse> observer) {
    unary(request, migrateWorkflow, observer);
  }

  @Override
  public void pauseWorkflow(PauseWorkflowRequest request, StreamObserver<PauseWorkflowResponse> observer) {
    unary(request, pauseWorkflow, observer);
  }

  @Override
  public void unpauseWorkflow(
      UnpauseWorkflowRequest request, StreamObserver<UnpauseWorkflowResponse> observer) {
    unary(request, unpauseWorkflow, observer);
  }

  @Override
  public void listWorkflows(ListWorkflowsRequest request, StreamObserver<ListWorkflowsResponse> observer) {
    unary(request, listWorkflows, observer);
  }

  @Override
  public void watchWorkflow(WatchWorkflowRequest request, StreamObserver<WatchWorkflowResponse> observer) {
    requests.add(request);
    watchDeadlines.add(Context.current().getDeadline());
    watchWorkflow.accept(request, observer);
  }

  @Override
  public void close() {
    if (channel != null) {
      channel.shutdownNow();
    }
    server.shutdownNow();
    tasks.close();
  }
}
