package dev.statewright.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * Serves workers: they poll a queue for tasks, heartbeat them, and complete or fail them.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class TaskServiceGrpc {

  private TaskServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "statewright.v1.TaskService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.PollTasksRequest,
      dev.statewright.v1.PollTasksResponse> getPollTasksMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "PollTasks",
      requestType = dev.statewright.v1.PollTasksRequest.class,
      responseType = dev.statewright.v1.PollTasksResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.PollTasksRequest,
      dev.statewright.v1.PollTasksResponse> getPollTasksMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.PollTasksRequest, dev.statewright.v1.PollTasksResponse> getPollTasksMethod;
    if ((getPollTasksMethod = TaskServiceGrpc.getPollTasksMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getPollTasksMethod = TaskServiceGrpc.getPollTasksMethod) == null) {
          TaskServiceGrpc.getPollTasksMethod = getPollTasksMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.PollTasksRequest, dev.statewright.v1.PollTasksResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "PollTasks"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.PollTasksRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.PollTasksResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("PollTasks"))
              .build();
        }
      }
    }
    return getPollTasksMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.HeartbeatTaskRequest,
      dev.statewright.v1.HeartbeatTaskResponse> getHeartbeatTaskMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "HeartbeatTask",
      requestType = dev.statewright.v1.HeartbeatTaskRequest.class,
      responseType = dev.statewright.v1.HeartbeatTaskResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.HeartbeatTaskRequest,
      dev.statewright.v1.HeartbeatTaskResponse> getHeartbeatTaskMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.HeartbeatTaskRequest, dev.statewright.v1.HeartbeatTaskResponse> getHeartbeatTaskMethod;
    if ((getHeartbeatTaskMethod = TaskServiceGrpc.getHeartbeatTaskMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getHeartbeatTaskMethod = TaskServiceGrpc.getHeartbeatTaskMethod) == null) {
          TaskServiceGrpc.getHeartbeatTaskMethod = getHeartbeatTaskMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.HeartbeatTaskRequest, dev.statewright.v1.HeartbeatTaskResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "HeartbeatTask"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.HeartbeatTaskRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.HeartbeatTaskResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("HeartbeatTask"))
              .build();
        }
      }
    }
    return getHeartbeatTaskMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.CompleteTaskRequest,
      dev.statewright.v1.CompleteTaskResponse> getCompleteTaskMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CompleteTask",
      requestType = dev.statewright.v1.CompleteTaskRequest.class,
      responseType = dev.statewright.v1.CompleteTaskResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.CompleteTaskRequest,
      dev.statewright.v1.CompleteTaskResponse> getCompleteTaskMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.CompleteTaskRequest, dev.statewright.v1.CompleteTaskResponse> getCompleteTaskMethod;
    if ((getCompleteTaskMethod = TaskServiceGrpc.getCompleteTaskMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getCompleteTaskMethod = TaskServiceGrpc.getCompleteTaskMethod) == null) {
          TaskServiceGrpc.getCompleteTaskMethod = getCompleteTaskMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.CompleteTaskRequest, dev.statewright.v1.CompleteTaskResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CompleteTask"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CompleteTaskRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CompleteTaskResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("CompleteTask"))
              .build();
        }
      }
    }
    return getCompleteTaskMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.FailTaskRequest,
      dev.statewright.v1.FailTaskResponse> getFailTaskMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "FailTask",
      requestType = dev.statewright.v1.FailTaskRequest.class,
      responseType = dev.statewright.v1.FailTaskResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.FailTaskRequest,
      dev.statewright.v1.FailTaskResponse> getFailTaskMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.FailTaskRequest, dev.statewright.v1.FailTaskResponse> getFailTaskMethod;
    if ((getFailTaskMethod = TaskServiceGrpc.getFailTaskMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getFailTaskMethod = TaskServiceGrpc.getFailTaskMethod) == null) {
          TaskServiceGrpc.getFailTaskMethod = getFailTaskMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.FailTaskRequest, dev.statewright.v1.FailTaskResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "FailTask"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.FailTaskRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.FailTaskResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("FailTask"))
              .build();
        }
      }
    }
    return getFailTaskMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetTaskRequest,
      dev.statewright.v1.GetTaskResponse> getGetTaskMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetTask",
      requestType = dev.statewright.v1.GetTaskRequest.class,
      responseType = dev.statewright.v1.GetTaskResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetTaskRequest,
      dev.statewright.v1.GetTaskResponse> getGetTaskMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetTaskRequest, dev.statewright.v1.GetTaskResponse> getGetTaskMethod;
    if ((getGetTaskMethod = TaskServiceGrpc.getGetTaskMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getGetTaskMethod = TaskServiceGrpc.getGetTaskMethod) == null) {
          TaskServiceGrpc.getGetTaskMethod = getGetTaskMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetTaskRequest, dev.statewright.v1.GetTaskResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetTask"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetTaskRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetTaskResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("GetTask"))
              .build();
        }
      }
    }
    return getGetTaskMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ListTasksRequest,
      dev.statewright.v1.ListTasksResponse> getListTasksMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListTasks",
      requestType = dev.statewright.v1.ListTasksRequest.class,
      responseType = dev.statewright.v1.ListTasksResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ListTasksRequest,
      dev.statewright.v1.ListTasksResponse> getListTasksMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ListTasksRequest, dev.statewright.v1.ListTasksResponse> getListTasksMethod;
    if ((getListTasksMethod = TaskServiceGrpc.getListTasksMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getListTasksMethod = TaskServiceGrpc.getListTasksMethod) == null) {
          TaskServiceGrpc.getListTasksMethod = getListTasksMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ListTasksRequest, dev.statewright.v1.ListTasksResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListTasks"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListTasksRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListTasksResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("ListTasks"))
              .build();
        }
      }
    }
    return getListTasksMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.SetQueueConfigRequest,
      dev.statewright.v1.SetQueueConfigResponse> getSetQueueConfigMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SetQueueConfig",
      requestType = dev.statewright.v1.SetQueueConfigRequest.class,
      responseType = dev.statewright.v1.SetQueueConfigResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.SetQueueConfigRequest,
      dev.statewright.v1.SetQueueConfigResponse> getSetQueueConfigMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.SetQueueConfigRequest, dev.statewright.v1.SetQueueConfigResponse> getSetQueueConfigMethod;
    if ((getSetQueueConfigMethod = TaskServiceGrpc.getSetQueueConfigMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getSetQueueConfigMethod = TaskServiceGrpc.getSetQueueConfigMethod) == null) {
          TaskServiceGrpc.getSetQueueConfigMethod = getSetQueueConfigMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.SetQueueConfigRequest, dev.statewright.v1.SetQueueConfigResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SetQueueConfig"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.SetQueueConfigRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.SetQueueConfigResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("SetQueueConfig"))
              .build();
        }
      }
    }
    return getSetQueueConfigMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetQueueConfigRequest,
      dev.statewright.v1.GetQueueConfigResponse> getGetQueueConfigMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetQueueConfig",
      requestType = dev.statewright.v1.GetQueueConfigRequest.class,
      responseType = dev.statewright.v1.GetQueueConfigResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetQueueConfigRequest,
      dev.statewright.v1.GetQueueConfigResponse> getGetQueueConfigMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetQueueConfigRequest, dev.statewright.v1.GetQueueConfigResponse> getGetQueueConfigMethod;
    if ((getGetQueueConfigMethod = TaskServiceGrpc.getGetQueueConfigMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getGetQueueConfigMethod = TaskServiceGrpc.getGetQueueConfigMethod) == null) {
          TaskServiceGrpc.getGetQueueConfigMethod = getGetQueueConfigMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetQueueConfigRequest, dev.statewright.v1.GetQueueConfigResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetQueueConfig"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetQueueConfigRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetQueueConfigResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("GetQueueConfig"))
              .build();
        }
      }
    }
    return getGetQueueConfigMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ListQueuesRequest,
      dev.statewright.v1.ListQueuesResponse> getListQueuesMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListQueues",
      requestType = dev.statewright.v1.ListQueuesRequest.class,
      responseType = dev.statewright.v1.ListQueuesResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ListQueuesRequest,
      dev.statewright.v1.ListQueuesResponse> getListQueuesMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ListQueuesRequest, dev.statewright.v1.ListQueuesResponse> getListQueuesMethod;
    if ((getListQueuesMethod = TaskServiceGrpc.getListQueuesMethod) == null) {
      synchronized (TaskServiceGrpc.class) {
        if ((getListQueuesMethod = TaskServiceGrpc.getListQueuesMethod) == null) {
          TaskServiceGrpc.getListQueuesMethod = getListQueuesMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ListQueuesRequest, dev.statewright.v1.ListQueuesResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListQueues"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListQueuesRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListQueuesResponse.getDefaultInstance()))
              .setSchemaDescriptor(new TaskServiceMethodDescriptorSupplier("ListQueues"))
              .build();
        }
      }
    }
    return getListQueuesMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static TaskServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TaskServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TaskServiceStub>() {
        @java.lang.Override
        public TaskServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TaskServiceStub(channel, callOptions);
        }
      };
    return TaskServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static TaskServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TaskServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TaskServiceBlockingV2Stub>() {
        @java.lang.Override
        public TaskServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TaskServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return TaskServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static TaskServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TaskServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TaskServiceBlockingStub>() {
        @java.lang.Override
        public TaskServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TaskServiceBlockingStub(channel, callOptions);
        }
      };
    return TaskServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static TaskServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<TaskServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<TaskServiceFutureStub>() {
        @java.lang.Override
        public TaskServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new TaskServiceFutureStub(channel, callOptions);
        }
      };
    return TaskServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * Serves workers: they poll a queue for tasks, heartbeat them, and complete or fail them.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Leases up to max_tasks tasks of a queue, waiting up to `wait` for one to be scheduled.
     * </pre>
     */
    default void pollTasks(dev.statewright.v1.PollTasksRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.PollTasksResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPollTasksMethod(), responseObserver);
    }

    /**
     * <pre>
     * Extends a leased task's lease; answers whether the task has been cancelled.
     * </pre>
     */
    default void heartbeatTask(dev.statewright.v1.HeartbeatTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.HeartbeatTaskResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getHeartbeatTaskMethod(), responseObserver);
    }

    /**
     * <pre>
     * Completes a leased task: its result is applied to the instance, once, durably.
     * </pre>
     */
    default void completeTask(dev.statewright.v1.CompleteTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CompleteTaskResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCompleteTaskMethod(), responseObserver);
    }

    /**
     * <pre>
     * Fails a leased attempt: the task is retried with backoff, or gives up.
     * </pre>
     */
    default void failTask(dev.statewright.v1.FailTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.FailTaskResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getFailTaskMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reads one task.
     * </pre>
     */
    default void getTask(dev.statewright.v1.GetTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetTaskResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetTaskMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists tasks, filtered and paged.
     * </pre>
     */
    default void listTasks(dev.statewright.v1.ListTasksRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListTasksResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListTasksMethod(), responseObserver);
    }

    /**
     * <pre>
     * Sets a queue's flow control (admin): limits every replica honours when it hands the
     * queue's tasks out. A config whose limits are all zero removes them.
     * </pre>
     */
    default void setQueueConfig(dev.statewright.v1.SetQueueConfigRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.SetQueueConfigResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSetQueueConfigMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reads a queue's flow control and the keys closed on it.
     * </pre>
     */
    default void getQueueConfig(dev.statewright.v1.GetQueueConfigRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetQueueConfigResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetQueueConfigMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the queues with open tasks or a config: backlog, leases, limits, busiest keys.
     * </pre>
     */
    default void listQueues(dev.statewright.v1.ListQueuesRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListQueuesResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListQueuesMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service TaskService.
   * <pre>
   * Serves workers: they poll a queue for tasks, heartbeat them, and complete or fail them.
   * </pre>
   */
  public static abstract class TaskServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return TaskServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service TaskService.
   * <pre>
   * Serves workers: they poll a queue for tasks, heartbeat them, and complete or fail them.
   * </pre>
   */
  public static final class TaskServiceStub
      extends io.grpc.stub.AbstractAsyncStub<TaskServiceStub> {
    private TaskServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TaskServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TaskServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Leases up to max_tasks tasks of a queue, waiting up to `wait` for one to be scheduled.
     * </pre>
     */
    public void pollTasks(dev.statewright.v1.PollTasksRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.PollTasksResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPollTasksMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Extends a leased task's lease; answers whether the task has been cancelled.
     * </pre>
     */
    public void heartbeatTask(dev.statewright.v1.HeartbeatTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.HeartbeatTaskResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getHeartbeatTaskMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Completes a leased task: its result is applied to the instance, once, durably.
     * </pre>
     */
    public void completeTask(dev.statewright.v1.CompleteTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CompleteTaskResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCompleteTaskMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Fails a leased attempt: the task is retried with backoff, or gives up.
     * </pre>
     */
    public void failTask(dev.statewright.v1.FailTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.FailTaskResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getFailTaskMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reads one task.
     * </pre>
     */
    public void getTask(dev.statewright.v1.GetTaskRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetTaskResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetTaskMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists tasks, filtered and paged.
     * </pre>
     */
    public void listTasks(dev.statewright.v1.ListTasksRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListTasksResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListTasksMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Sets a queue's flow control (admin): limits every replica honours when it hands the
     * queue's tasks out. A config whose limits are all zero removes them.
     * </pre>
     */
    public void setQueueConfig(dev.statewright.v1.SetQueueConfigRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.SetQueueConfigResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSetQueueConfigMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reads a queue's flow control and the keys closed on it.
     * </pre>
     */
    public void getQueueConfig(dev.statewright.v1.GetQueueConfigRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetQueueConfigResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetQueueConfigMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the queues with open tasks or a config: backlog, leases, limits, busiest keys.
     * </pre>
     */
    public void listQueues(dev.statewright.v1.ListQueuesRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListQueuesResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListQueuesMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service TaskService.
   * <pre>
   * Serves workers: they poll a queue for tasks, heartbeat them, and complete or fail them.
   * </pre>
   */
  public static final class TaskServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<TaskServiceBlockingV2Stub> {
    private TaskServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TaskServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TaskServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Leases up to max_tasks tasks of a queue, waiting up to `wait` for one to be scheduled.
     * </pre>
     */
    public dev.statewright.v1.PollTasksResponse pollTasks(dev.statewright.v1.PollTasksRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPollTasksMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Extends a leased task's lease; answers whether the task has been cancelled.
     * </pre>
     */
    public dev.statewright.v1.HeartbeatTaskResponse heartbeatTask(dev.statewright.v1.HeartbeatTaskRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getHeartbeatTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Completes a leased task: its result is applied to the instance, once, durably.
     * </pre>
     */
    public dev.statewright.v1.CompleteTaskResponse completeTask(dev.statewright.v1.CompleteTaskRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCompleteTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fails a leased attempt: the task is retried with backoff, or gives up.
     * </pre>
     */
    public dev.statewright.v1.FailTaskResponse failTask(dev.statewright.v1.FailTaskRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getFailTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one task.
     * </pre>
     */
    public dev.statewright.v1.GetTaskResponse getTask(dev.statewright.v1.GetTaskRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists tasks, filtered and paged.
     * </pre>
     */
    public dev.statewright.v1.ListTasksResponse listTasks(dev.statewright.v1.ListTasksRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListTasksMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Sets a queue's flow control (admin): limits every replica honours when it hands the
     * queue's tasks out. A config whose limits are all zero removes them.
     * </pre>
     */
    public dev.statewright.v1.SetQueueConfigResponse setQueueConfig(dev.statewright.v1.SetQueueConfigRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSetQueueConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads a queue's flow control and the keys closed on it.
     * </pre>
     */
    public dev.statewright.v1.GetQueueConfigResponse getQueueConfig(dev.statewright.v1.GetQueueConfigRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetQueueConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the queues with open tasks or a config: backlog, leases, limits, busiest keys.
     * </pre>
     */
    public dev.statewright.v1.ListQueuesResponse listQueues(dev.statewright.v1.ListQueuesRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListQueuesMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service TaskService.
   * <pre>
   * Serves workers: they poll a queue for tasks, heartbeat them, and complete or fail them.
   * </pre>
   */
  public static final class TaskServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<TaskServiceBlockingStub> {
    private TaskServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TaskServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TaskServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Leases up to max_tasks tasks of a queue, waiting up to `wait` for one to be scheduled.
     * </pre>
     */
    public dev.statewright.v1.PollTasksResponse pollTasks(dev.statewright.v1.PollTasksRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPollTasksMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Extends a leased task's lease; answers whether the task has been cancelled.
     * </pre>
     */
    public dev.statewright.v1.HeartbeatTaskResponse heartbeatTask(dev.statewright.v1.HeartbeatTaskRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getHeartbeatTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Completes a leased task: its result is applied to the instance, once, durably.
     * </pre>
     */
    public dev.statewright.v1.CompleteTaskResponse completeTask(dev.statewright.v1.CompleteTaskRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCompleteTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fails a leased attempt: the task is retried with backoff, or gives up.
     * </pre>
     */
    public dev.statewright.v1.FailTaskResponse failTask(dev.statewright.v1.FailTaskRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getFailTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one task.
     * </pre>
     */
    public dev.statewright.v1.GetTaskResponse getTask(dev.statewright.v1.GetTaskRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetTaskMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists tasks, filtered and paged.
     * </pre>
     */
    public dev.statewright.v1.ListTasksResponse listTasks(dev.statewright.v1.ListTasksRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListTasksMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Sets a queue's flow control (admin): limits every replica honours when it hands the
     * queue's tasks out. A config whose limits are all zero removes them.
     * </pre>
     */
    public dev.statewright.v1.SetQueueConfigResponse setQueueConfig(dev.statewright.v1.SetQueueConfigRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSetQueueConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads a queue's flow control and the keys closed on it.
     * </pre>
     */
    public dev.statewright.v1.GetQueueConfigResponse getQueueConfig(dev.statewright.v1.GetQueueConfigRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetQueueConfigMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the queues with open tasks or a config: backlog, leases, limits, busiest keys.
     * </pre>
     */
    public dev.statewright.v1.ListQueuesResponse listQueues(dev.statewright.v1.ListQueuesRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListQueuesMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service TaskService.
   * <pre>
   * Serves workers: they poll a queue for tasks, heartbeat them, and complete or fail them.
   * </pre>
   */
  public static final class TaskServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<TaskServiceFutureStub> {
    private TaskServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected TaskServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new TaskServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Leases up to max_tasks tasks of a queue, waiting up to `wait` for one to be scheduled.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.PollTasksResponse> pollTasks(
        dev.statewright.v1.PollTasksRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPollTasksMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Extends a leased task's lease; answers whether the task has been cancelled.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.HeartbeatTaskResponse> heartbeatTask(
        dev.statewright.v1.HeartbeatTaskRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getHeartbeatTaskMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Completes a leased task: its result is applied to the instance, once, durably.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.CompleteTaskResponse> completeTask(
        dev.statewright.v1.CompleteTaskRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCompleteTaskMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Fails a leased attempt: the task is retried with backoff, or gives up.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.FailTaskResponse> failTask(
        dev.statewright.v1.FailTaskRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getFailTaskMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reads one task.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetTaskResponse> getTask(
        dev.statewright.v1.GetTaskRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetTaskMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists tasks, filtered and paged.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ListTasksResponse> listTasks(
        dev.statewright.v1.ListTasksRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListTasksMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Sets a queue's flow control (admin): limits every replica honours when it hands the
     * queue's tasks out. A config whose limits are all zero removes them.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.SetQueueConfigResponse> setQueueConfig(
        dev.statewright.v1.SetQueueConfigRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSetQueueConfigMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reads a queue's flow control and the keys closed on it.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetQueueConfigResponse> getQueueConfig(
        dev.statewright.v1.GetQueueConfigRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetQueueConfigMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the queues with open tasks or a config: backlog, leases, limits, busiest keys.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ListQueuesResponse> listQueues(
        dev.statewright.v1.ListQueuesRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListQueuesMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_POLL_TASKS = 0;
  private static final int METHODID_HEARTBEAT_TASK = 1;
  private static final int METHODID_COMPLETE_TASK = 2;
  private static final int METHODID_FAIL_TASK = 3;
  private static final int METHODID_GET_TASK = 4;
  private static final int METHODID_LIST_TASKS = 5;
  private static final int METHODID_SET_QUEUE_CONFIG = 6;
  private static final int METHODID_GET_QUEUE_CONFIG = 7;
  private static final int METHODID_LIST_QUEUES = 8;

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
        case METHODID_POLL_TASKS:
          serviceImpl.pollTasks((dev.statewright.v1.PollTasksRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.PollTasksResponse>) responseObserver);
          break;
        case METHODID_HEARTBEAT_TASK:
          serviceImpl.heartbeatTask((dev.statewright.v1.HeartbeatTaskRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.HeartbeatTaskResponse>) responseObserver);
          break;
        case METHODID_COMPLETE_TASK:
          serviceImpl.completeTask((dev.statewright.v1.CompleteTaskRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.CompleteTaskResponse>) responseObserver);
          break;
        case METHODID_FAIL_TASK:
          serviceImpl.failTask((dev.statewright.v1.FailTaskRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.FailTaskResponse>) responseObserver);
          break;
        case METHODID_GET_TASK:
          serviceImpl.getTask((dev.statewright.v1.GetTaskRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetTaskResponse>) responseObserver);
          break;
        case METHODID_LIST_TASKS:
          serviceImpl.listTasks((dev.statewright.v1.ListTasksRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ListTasksResponse>) responseObserver);
          break;
        case METHODID_SET_QUEUE_CONFIG:
          serviceImpl.setQueueConfig((dev.statewright.v1.SetQueueConfigRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.SetQueueConfigResponse>) responseObserver);
          break;
        case METHODID_GET_QUEUE_CONFIG:
          serviceImpl.getQueueConfig((dev.statewright.v1.GetQueueConfigRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetQueueConfigResponse>) responseObserver);
          break;
        case METHODID_LIST_QUEUES:
          serviceImpl.listQueues((dev.statewright.v1.ListQueuesRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ListQueuesResponse>) responseObserver);
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
          getPollTasksMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.PollTasksRequest,
              dev.statewright.v1.PollTasksResponse>(
                service, METHODID_POLL_TASKS)))
        .addMethod(
          getHeartbeatTaskMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.HeartbeatTaskRequest,
              dev.statewright.v1.HeartbeatTaskResponse>(
                service, METHODID_HEARTBEAT_TASK)))
        .addMethod(
          getCompleteTaskMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.CompleteTaskRequest,
              dev.statewright.v1.CompleteTaskResponse>(
                service, METHODID_COMPLETE_TASK)))
        .addMethod(
          getFailTaskMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.FailTaskRequest,
              dev.statewright.v1.FailTaskResponse>(
                service, METHODID_FAIL_TASK)))
        .addMethod(
          getGetTaskMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetTaskRequest,
              dev.statewright.v1.GetTaskResponse>(
                service, METHODID_GET_TASK)))
        .addMethod(
          getListTasksMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ListTasksRequest,
              dev.statewright.v1.ListTasksResponse>(
                service, METHODID_LIST_TASKS)))
        .addMethod(
          getSetQueueConfigMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.SetQueueConfigRequest,
              dev.statewright.v1.SetQueueConfigResponse>(
                service, METHODID_SET_QUEUE_CONFIG)))
        .addMethod(
          getGetQueueConfigMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetQueueConfigRequest,
              dev.statewright.v1.GetQueueConfigResponse>(
                service, METHODID_GET_QUEUE_CONFIG)))
        .addMethod(
          getListQueuesMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ListQueuesRequest,
              dev.statewright.v1.ListQueuesResponse>(
                service, METHODID_LIST_QUEUES)))
        .build();
  }

  private static abstract class TaskServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    TaskServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.statewright.v1.TaskServiceOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("TaskService");
    }
  }

  private static final class TaskServiceFileDescriptorSupplier
      extends TaskServiceBaseDescriptorSupplier {
    TaskServiceFileDescriptorSupplier() {}
  }

  private static final class TaskServiceMethodDescriptorSupplier
      extends TaskServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    TaskServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (TaskServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new TaskServiceFileDescriptorSupplier())
              .addMethod(getPollTasksMethod())
              .addMethod(getHeartbeatTaskMethod())
              .addMethod(getCompleteTaskMethod())
              .addMethod(getFailTaskMethod())
              .addMethod(getGetTaskMethod())
              .addMethod(getListTasksMethod())
              .addMethod(getSetQueueConfigMethod())
              .addMethod(getGetQueueConfigMethod())
              .addMethod(getListQueuesMethod())
              .build();
        }
      }
    }
    return result;
  }
}
