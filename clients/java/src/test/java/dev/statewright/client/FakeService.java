package dev.statewright.client;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import dev.statewright.v1.GetWorkflowRequest;
import dev.statewright.v1.GetWorkflowResponse;
import dev.statewright.v1.ListWorkflowsRequest;
import dev.statewright.v1.ListWorkflowsResponse;
import dev.statewright.v1.ResumeWorkflowRequest;
import dev.statewright.v1.ResumeWorkflowResponse;
import dev.statewright.v1.StartWorkflowRequest;
import dev.statewright.v1.StartWorkflowResponse;
import dev.statewright.v1.WatchWorkflowRequest;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.WorkflowServiceGrpc;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * An in-process WorkflowService whose answers each test scripts; records what it received. The same
 * server serves {@link #tasks}, a fake TaskService.
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
  BiConsumer<WatchWorkflowRequest, StreamObserver<WatchWorkflowResponse>> watchWorkflow;
  final FakeTaskService tasks = new FakeTaskService();

  private final String name = InProcessServerBuilder.generateName();
  private final Server server;
  final ManagedChannel channel;

  FakeService() throws IOException {
    server = InProcessServerBuilder.forName(name).directExecutor().addService(this).addService(tasks).build().start();
    // The same configuration a real client channel gets: service config plus retries.
    channel = ServiceConfig.apply(InProcessChannelBuilder.forName(name).directExecutor()).build();
  }

  /** A status carrying one ErrorInfo, as the real server sends. */
  static StatusRuntimeException error(Status.Code code, String reason, Map<String, String> metadata) {
    ErrorInfo info = ErrorInfo.newBuilder().setReason(reason).setDomain(ErrorInfos.DOMAIN).putAllMetadata(metadata).build();
    com.google.rpc.Status status =
        com.google.rpc.Status.newBuilder().setCode(code.value()).setMessage(reason.toLowerCase()).addDetails(Any.pack(info)).build();
    return StatusProto.toStatusRuntimeException(status);
  }

  private <Q, R> void unary(Q request, Function<Q, R> behaviour, StreamObserver<R> observer) {
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
    channel.shutdownNow();
    server.shutdownNow();
    tasks.close();
  }
}
