package dev.statewright.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * Applies one operation (cancel, signal, reset, retry, migrate, pause, unpause or delete)
 * to every instance a filter matches, as a durable job named `batches/{batch_id}`. The
 * instances are matched once, when the batch starts: an instance that matches later is
 * not in it. Whichever replica holds the batch's lease works through its instances in
 * workflow id order at the batch's rate; a batch survives restarts and replicas that die.
 * Each instance's operation is an ordinary step with the request id `batch-&lt;batch_id&gt;`,
 * so it is applied at most once however often it is tried.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class BatchServiceGrpc {

  private BatchServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "statewright.v1.BatchService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.StartBatchOperationRequest,
      dev.statewright.v1.StartBatchOperationResponse> getStartBatchOperationMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "StartBatchOperation",
      requestType = dev.statewright.v1.StartBatchOperationRequest.class,
      responseType = dev.statewright.v1.StartBatchOperationResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.StartBatchOperationRequest,
      dev.statewright.v1.StartBatchOperationResponse> getStartBatchOperationMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.StartBatchOperationRequest, dev.statewright.v1.StartBatchOperationResponse> getStartBatchOperationMethod;
    if ((getStartBatchOperationMethod = BatchServiceGrpc.getStartBatchOperationMethod) == null) {
      synchronized (BatchServiceGrpc.class) {
        if ((getStartBatchOperationMethod = BatchServiceGrpc.getStartBatchOperationMethod) == null) {
          BatchServiceGrpc.getStartBatchOperationMethod = getStartBatchOperationMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.StartBatchOperationRequest, dev.statewright.v1.StartBatchOperationResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "StartBatchOperation"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.StartBatchOperationRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.StartBatchOperationResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BatchServiceMethodDescriptorSupplier("StartBatchOperation"))
              .build();
        }
      }
    }
    return getStartBatchOperationMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetBatchOperationRequest,
      dev.statewright.v1.GetBatchOperationResponse> getGetBatchOperationMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetBatchOperation",
      requestType = dev.statewright.v1.GetBatchOperationRequest.class,
      responseType = dev.statewright.v1.GetBatchOperationResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetBatchOperationRequest,
      dev.statewright.v1.GetBatchOperationResponse> getGetBatchOperationMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetBatchOperationRequest, dev.statewright.v1.GetBatchOperationResponse> getGetBatchOperationMethod;
    if ((getGetBatchOperationMethod = BatchServiceGrpc.getGetBatchOperationMethod) == null) {
      synchronized (BatchServiceGrpc.class) {
        if ((getGetBatchOperationMethod = BatchServiceGrpc.getGetBatchOperationMethod) == null) {
          BatchServiceGrpc.getGetBatchOperationMethod = getGetBatchOperationMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetBatchOperationRequest, dev.statewright.v1.GetBatchOperationResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetBatchOperation"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetBatchOperationRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetBatchOperationResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BatchServiceMethodDescriptorSupplier("GetBatchOperation"))
              .build();
        }
      }
    }
    return getGetBatchOperationMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ListBatchOperationsRequest,
      dev.statewright.v1.ListBatchOperationsResponse> getListBatchOperationsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListBatchOperations",
      requestType = dev.statewright.v1.ListBatchOperationsRequest.class,
      responseType = dev.statewright.v1.ListBatchOperationsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ListBatchOperationsRequest,
      dev.statewright.v1.ListBatchOperationsResponse> getListBatchOperationsMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ListBatchOperationsRequest, dev.statewright.v1.ListBatchOperationsResponse> getListBatchOperationsMethod;
    if ((getListBatchOperationsMethod = BatchServiceGrpc.getListBatchOperationsMethod) == null) {
      synchronized (BatchServiceGrpc.class) {
        if ((getListBatchOperationsMethod = BatchServiceGrpc.getListBatchOperationsMethod) == null) {
          BatchServiceGrpc.getListBatchOperationsMethod = getListBatchOperationsMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ListBatchOperationsRequest, dev.statewright.v1.ListBatchOperationsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListBatchOperations"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListBatchOperationsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListBatchOperationsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BatchServiceMethodDescriptorSupplier("ListBatchOperations"))
              .build();
        }
      }
    }
    return getListBatchOperationsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.CancelBatchOperationRequest,
      dev.statewright.v1.CancelBatchOperationResponse> getCancelBatchOperationMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CancelBatchOperation",
      requestType = dev.statewright.v1.CancelBatchOperationRequest.class,
      responseType = dev.statewright.v1.CancelBatchOperationResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.CancelBatchOperationRequest,
      dev.statewright.v1.CancelBatchOperationResponse> getCancelBatchOperationMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.CancelBatchOperationRequest, dev.statewright.v1.CancelBatchOperationResponse> getCancelBatchOperationMethod;
    if ((getCancelBatchOperationMethod = BatchServiceGrpc.getCancelBatchOperationMethod) == null) {
      synchronized (BatchServiceGrpc.class) {
        if ((getCancelBatchOperationMethod = BatchServiceGrpc.getCancelBatchOperationMethod) == null) {
          BatchServiceGrpc.getCancelBatchOperationMethod = getCancelBatchOperationMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.CancelBatchOperationRequest, dev.statewright.v1.CancelBatchOperationResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CancelBatchOperation"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CancelBatchOperationRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CancelBatchOperationResponse.getDefaultInstance()))
              .setSchemaDescriptor(new BatchServiceMethodDescriptorSupplier("CancelBatchOperation"))
              .build();
        }
      }
    }
    return getCancelBatchOperationMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static BatchServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BatchServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BatchServiceStub>() {
        @java.lang.Override
        public BatchServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BatchServiceStub(channel, callOptions);
        }
      };
    return BatchServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static BatchServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BatchServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BatchServiceBlockingV2Stub>() {
        @java.lang.Override
        public BatchServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BatchServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return BatchServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static BatchServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BatchServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BatchServiceBlockingStub>() {
        @java.lang.Override
        public BatchServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BatchServiceBlockingStub(channel, callOptions);
        }
      };
    return BatchServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static BatchServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<BatchServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<BatchServiceFutureStub>() {
        @java.lang.Override
        public BatchServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new BatchServiceFutureStub(channel, callOptions);
        }
      };
    return BatchServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * Applies one operation (cancel, signal, reset, retry, migrate, pause, unpause or delete)
   * to every instance a filter matches, as a durable job named `batches/{batch_id}`. The
   * instances are matched once, when the batch starts: an instance that matches later is
   * not in it. Whichever replica holds the batch's lease works through its instances in
   * workflow id order at the batch's rate; a batch survives restarts and replicas that die.
   * Each instance's operation is an ordinary step with the request id `batch-&lt;batch_id&gt;`,
   * so it is applied at most once however often it is tried.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Matches the instances and starts the batch (with dry_run, counts and samples them and
     * saves nothing).
     * </pre>
     */
    default void startBatchOperation(dev.statewright.v1.StartBatchOperationRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.StartBatchOperationResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getStartBatchOperationMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reads one batch: its progress, and the instances it failed on, paged.
     * </pre>
     */
    default void getBatchOperation(dev.statewright.v1.GetBatchOperationRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetBatchOperationResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetBatchOperationMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists batches, newest first, paged.
     * </pre>
     */
    default void listBatchOperations(dev.statewright.v1.ListBatchOperationsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListBatchOperationsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListBatchOperationsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Stops a running batch: no instance is started on after the answer; the steps already
     * applied stay. Cancelling a cancelled batch answers it as it is; a completed one is
     * refused (FAILED_PRECONDITION, BATCH_FINISHED).
     * </pre>
     */
    default void cancelBatchOperation(dev.statewright.v1.CancelBatchOperationRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CancelBatchOperationResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelBatchOperationMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service BatchService.
   * <pre>
   * Applies one operation (cancel, signal, reset, retry, migrate, pause, unpause or delete)
   * to every instance a filter matches, as a durable job named `batches/{batch_id}`. The
   * instances are matched once, when the batch starts: an instance that matches later is
   * not in it. Whichever replica holds the batch's lease works through its instances in
   * workflow id order at the batch's rate; a batch survives restarts and replicas that die.
   * Each instance's operation is an ordinary step with the request id `batch-&lt;batch_id&gt;`,
   * so it is applied at most once however often it is tried.
   * </pre>
   */
  public static abstract class BatchServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return BatchServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service BatchService.
   * <pre>
   * Applies one operation (cancel, signal, reset, retry, migrate, pause, unpause or delete)
   * to every instance a filter matches, as a durable job named `batches/{batch_id}`. The
   * instances are matched once, when the batch starts: an instance that matches later is
   * not in it. Whichever replica holds the batch's lease works through its instances in
   * workflow id order at the batch's rate; a batch survives restarts and replicas that die.
   * Each instance's operation is an ordinary step with the request id `batch-&lt;batch_id&gt;`,
   * so it is applied at most once however often it is tried.
   * </pre>
   */
  public static final class BatchServiceStub
      extends io.grpc.stub.AbstractAsyncStub<BatchServiceStub> {
    private BatchServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BatchServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BatchServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Matches the instances and starts the batch (with dry_run, counts and samples them and
     * saves nothing).
     * </pre>
     */
    public void startBatchOperation(dev.statewright.v1.StartBatchOperationRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.StartBatchOperationResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getStartBatchOperationMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reads one batch: its progress, and the instances it failed on, paged.
     * </pre>
     */
    public void getBatchOperation(dev.statewright.v1.GetBatchOperationRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetBatchOperationResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetBatchOperationMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists batches, newest first, paged.
     * </pre>
     */
    public void listBatchOperations(dev.statewright.v1.ListBatchOperationsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListBatchOperationsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListBatchOperationsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Stops a running batch: no instance is started on after the answer; the steps already
     * applied stay. Cancelling a cancelled batch answers it as it is; a completed one is
     * refused (FAILED_PRECONDITION, BATCH_FINISHED).
     * </pre>
     */
    public void cancelBatchOperation(dev.statewright.v1.CancelBatchOperationRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CancelBatchOperationResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelBatchOperationMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service BatchService.
   * <pre>
   * Applies one operation (cancel, signal, reset, retry, migrate, pause, unpause or delete)
   * to every instance a filter matches, as a durable job named `batches/{batch_id}`. The
   * instances are matched once, when the batch starts: an instance that matches later is
   * not in it. Whichever replica holds the batch's lease works through its instances in
   * workflow id order at the batch's rate; a batch survives restarts and replicas that die.
   * Each instance's operation is an ordinary step with the request id `batch-&lt;batch_id&gt;`,
   * so it is applied at most once however often it is tried.
   * </pre>
   */
  public static final class BatchServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<BatchServiceBlockingV2Stub> {
    private BatchServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BatchServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BatchServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Matches the instances and starts the batch (with dry_run, counts and samples them and
     * saves nothing).
     * </pre>
     */
    public dev.statewright.v1.StartBatchOperationResponse startBatchOperation(dev.statewright.v1.StartBatchOperationRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getStartBatchOperationMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one batch: its progress, and the instances it failed on, paged.
     * </pre>
     */
    public dev.statewright.v1.GetBatchOperationResponse getBatchOperation(dev.statewright.v1.GetBatchOperationRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetBatchOperationMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists batches, newest first, paged.
     * </pre>
     */
    public dev.statewright.v1.ListBatchOperationsResponse listBatchOperations(dev.statewright.v1.ListBatchOperationsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListBatchOperationsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Stops a running batch: no instance is started on after the answer; the steps already
     * applied stay. Cancelling a cancelled batch answers it as it is; a completed one is
     * refused (FAILED_PRECONDITION, BATCH_FINISHED).
     * </pre>
     */
    public dev.statewright.v1.CancelBatchOperationResponse cancelBatchOperation(dev.statewright.v1.CancelBatchOperationRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelBatchOperationMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service BatchService.
   * <pre>
   * Applies one operation (cancel, signal, reset, retry, migrate, pause, unpause or delete)
   * to every instance a filter matches, as a durable job named `batches/{batch_id}`. The
   * instances are matched once, when the batch starts: an instance that matches later is
   * not in it. Whichever replica holds the batch's lease works through its instances in
   * workflow id order at the batch's rate; a batch survives restarts and replicas that die.
   * Each instance's operation is an ordinary step with the request id `batch-&lt;batch_id&gt;`,
   * so it is applied at most once however often it is tried.
   * </pre>
   */
  public static final class BatchServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<BatchServiceBlockingStub> {
    private BatchServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BatchServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BatchServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Matches the instances and starts the batch (with dry_run, counts and samples them and
     * saves nothing).
     * </pre>
     */
    public dev.statewright.v1.StartBatchOperationResponse startBatchOperation(dev.statewright.v1.StartBatchOperationRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getStartBatchOperationMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one batch: its progress, and the instances it failed on, paged.
     * </pre>
     */
    public dev.statewright.v1.GetBatchOperationResponse getBatchOperation(dev.statewright.v1.GetBatchOperationRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetBatchOperationMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists batches, newest first, paged.
     * </pre>
     */
    public dev.statewright.v1.ListBatchOperationsResponse listBatchOperations(dev.statewright.v1.ListBatchOperationsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListBatchOperationsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Stops a running batch: no instance is started on after the answer; the steps already
     * applied stay. Cancelling a cancelled batch answers it as it is; a completed one is
     * refused (FAILED_PRECONDITION, BATCH_FINISHED).
     * </pre>
     */
    public dev.statewright.v1.CancelBatchOperationResponse cancelBatchOperation(dev.statewright.v1.CancelBatchOperationRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelBatchOperationMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service BatchService.
   * <pre>
   * Applies one operation (cancel, signal, reset, retry, migrate, pause, unpause or delete)
   * to every instance a filter matches, as a durable job named `batches/{batch_id}`. The
   * instances are matched once, when the batch starts: an instance that matches later is
   * not in it. Whichever replica holds the batch's lease works through its instances in
   * workflow id order at the batch's rate; a batch survives restarts and replicas that die.
   * Each instance's operation is an ordinary step with the request id `batch-&lt;batch_id&gt;`,
   * so it is applied at most once however often it is tried.
   * </pre>
   */
  public static final class BatchServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<BatchServiceFutureStub> {
    private BatchServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected BatchServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new BatchServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Matches the instances and starts the batch (with dry_run, counts and samples them and
     * saves nothing).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.StartBatchOperationResponse> startBatchOperation(
        dev.statewright.v1.StartBatchOperationRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getStartBatchOperationMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reads one batch: its progress, and the instances it failed on, paged.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetBatchOperationResponse> getBatchOperation(
        dev.statewright.v1.GetBatchOperationRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetBatchOperationMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists batches, newest first, paged.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ListBatchOperationsResponse> listBatchOperations(
        dev.statewright.v1.ListBatchOperationsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListBatchOperationsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Stops a running batch: no instance is started on after the answer; the steps already
     * applied stay. Cancelling a cancelled batch answers it as it is; a completed one is
     * refused (FAILED_PRECONDITION, BATCH_FINISHED).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.CancelBatchOperationResponse> cancelBatchOperation(
        dev.statewright.v1.CancelBatchOperationRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelBatchOperationMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_START_BATCH_OPERATION = 0;
  private static final int METHODID_GET_BATCH_OPERATION = 1;
  private static final int METHODID_LIST_BATCH_OPERATIONS = 2;
  private static final int METHODID_CANCEL_BATCH_OPERATION = 3;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_START_BATCH_OPERATION:
          serviceImpl.startBatchOperation((dev.statewright.v1.StartBatchOperationRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.StartBatchOperationResponse>) responseObserver);
          break;
        case METHODID_GET_BATCH_OPERATION:
          serviceImpl.getBatchOperation((dev.statewright.v1.GetBatchOperationRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetBatchOperationResponse>) responseObserver);
          break;
        case METHODID_LIST_BATCH_OPERATIONS:
          serviceImpl.listBatchOperations((dev.statewright.v1.ListBatchOperationsRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ListBatchOperationsResponse>) responseObserver);
          break;
        case METHODID_CANCEL_BATCH_OPERATION:
          serviceImpl.cancelBatchOperation((dev.statewright.v1.CancelBatchOperationRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.CancelBatchOperationResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getStartBatchOperationMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.StartBatchOperationRequest,
              dev.statewright.v1.StartBatchOperationResponse>(
                service, METHODID_START_BATCH_OPERATION)))
        .addMethod(
          getGetBatchOperationMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetBatchOperationRequest,
              dev.statewright.v1.GetBatchOperationResponse>(
                service, METHODID_GET_BATCH_OPERATION)))
        .addMethod(
          getListBatchOperationsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ListBatchOperationsRequest,
              dev.statewright.v1.ListBatchOperationsResponse>(
                service, METHODID_LIST_BATCH_OPERATIONS)))
        .addMethod(
          getCancelBatchOperationMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.CancelBatchOperationRequest,
              dev.statewright.v1.CancelBatchOperationResponse>(
                service, METHODID_CANCEL_BATCH_OPERATION)))
        .build();
  }

  private static abstract class BatchServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    BatchServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.statewright.v1.BatchServiceOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("BatchService");
    }
  }

  private static final class BatchServiceFileDescriptorSupplier
      extends BatchServiceBaseDescriptorSupplier {
    BatchServiceFileDescriptorSupplier() {}
  }

  private static final class BatchServiceMethodDescriptorSupplier
      extends BatchServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    BatchServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (BatchServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new BatchServiceFileDescriptorSupplier())
              .addMethod(getStartBatchOperationMethod())
              .addMethod(getGetBatchOperationMethod())
              .addMethod(getListBatchOperationsMethod())
              .addMethod(getCancelBatchOperationMethod())
              .build();
        }
      }
    }
    return result;
  }
}
