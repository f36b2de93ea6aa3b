package dev.statewright.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * Starts workflows on a calendar: each fire of a schedule starts one instance named
 * `&lt;schedule_id&gt;-&lt;nominal fire time, RFC 3339 UTC&gt;`, exactly once across replicas,
 * retries and restarts, never before its time.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ScheduleServiceGrpc {

  private ScheduleServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "statewright.v1.ScheduleService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.CreateScheduleRequest,
      dev.statewright.v1.CreateScheduleResponse> getCreateScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CreateSchedule",
      requestType = dev.statewright.v1.CreateScheduleRequest.class,
      responseType = dev.statewright.v1.CreateScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.CreateScheduleRequest,
      dev.statewright.v1.CreateScheduleResponse> getCreateScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.CreateScheduleRequest, dev.statewright.v1.CreateScheduleResponse> getCreateScheduleMethod;
    if ((getCreateScheduleMethod = ScheduleServiceGrpc.getCreateScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getCreateScheduleMethod = ScheduleServiceGrpc.getCreateScheduleMethod) == null) {
          ScheduleServiceGrpc.getCreateScheduleMethod = getCreateScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.CreateScheduleRequest, dev.statewright.v1.CreateScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CreateSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CreateScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CreateScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("CreateSchedule"))
              .build();
        }
      }
    }
    return getCreateScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetScheduleRequest,
      dev.statewright.v1.GetScheduleResponse> getGetScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetSchedule",
      requestType = dev.statewright.v1.GetScheduleRequest.class,
      responseType = dev.statewright.v1.GetScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetScheduleRequest,
      dev.statewright.v1.GetScheduleResponse> getGetScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetScheduleRequest, dev.statewright.v1.GetScheduleResponse> getGetScheduleMethod;
    if ((getGetScheduleMethod = ScheduleServiceGrpc.getGetScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getGetScheduleMethod = ScheduleServiceGrpc.getGetScheduleMethod) == null) {
          ScheduleServiceGrpc.getGetScheduleMethod = getGetScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetScheduleRequest, dev.statewright.v1.GetScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("GetSchedule"))
              .build();
        }
      }
    }
    return getGetScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ListSchedulesRequest,
      dev.statewright.v1.ListSchedulesResponse> getListSchedulesMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListSchedules",
      requestType = dev.statewright.v1.ListSchedulesRequest.class,
      responseType = dev.statewright.v1.ListSchedulesResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ListSchedulesRequest,
      dev.statewright.v1.ListSchedulesResponse> getListSchedulesMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ListSchedulesRequest, dev.statewright.v1.ListSchedulesResponse> getListSchedulesMethod;
    if ((getListSchedulesMethod = ScheduleServiceGrpc.getListSchedulesMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getListSchedulesMethod = ScheduleServiceGrpc.getListSchedulesMethod) == null) {
          ScheduleServiceGrpc.getListSchedulesMethod = getListSchedulesMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ListSchedulesRequest, dev.statewright.v1.ListSchedulesResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListSchedules"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListSchedulesRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListSchedulesResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("ListSchedules"))
              .build();
        }
      }
    }
    return getListSchedulesMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.UpdateScheduleRequest,
      dev.statewright.v1.UpdateScheduleResponse> getUpdateScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UpdateSchedule",
      requestType = dev.statewright.v1.UpdateScheduleRequest.class,
      responseType = dev.statewright.v1.UpdateScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.UpdateScheduleRequest,
      dev.statewright.v1.UpdateScheduleResponse> getUpdateScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.UpdateScheduleRequest, dev.statewright.v1.UpdateScheduleResponse> getUpdateScheduleMethod;
    if ((getUpdateScheduleMethod = ScheduleServiceGrpc.getUpdateScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getUpdateScheduleMethod = ScheduleServiceGrpc.getUpdateScheduleMethod) == null) {
          ScheduleServiceGrpc.getUpdateScheduleMethod = getUpdateScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.UpdateScheduleRequest, dev.statewright.v1.UpdateScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UpdateSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.UpdateScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.UpdateScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("UpdateSchedule"))
              .build();
        }
      }
    }
    return getUpdateScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.DeleteScheduleRequest,
      dev.statewright.v1.DeleteScheduleResponse> getDeleteScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteSchedule",
      requestType = dev.statewright.v1.DeleteScheduleRequest.class,
      responseType = dev.statewright.v1.DeleteScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.DeleteScheduleRequest,
      dev.statewright.v1.DeleteScheduleResponse> getDeleteScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.DeleteScheduleRequest, dev.statewright.v1.DeleteScheduleResponse> getDeleteScheduleMethod;
    if ((getDeleteScheduleMethod = ScheduleServiceGrpc.getDeleteScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getDeleteScheduleMethod = ScheduleServiceGrpc.getDeleteScheduleMethod) == null) {
          ScheduleServiceGrpc.getDeleteScheduleMethod = getDeleteScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.DeleteScheduleRequest, dev.statewright.v1.DeleteScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.DeleteScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.DeleteScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("DeleteSchedule"))
              .build();
        }
      }
    }
    return getDeleteScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.PauseScheduleRequest,
      dev.statewright.v1.PauseScheduleResponse> getPauseScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "PauseSchedule",
      requestType = dev.statewright.v1.PauseScheduleRequest.class,
      responseType = dev.statewright.v1.PauseScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.PauseScheduleRequest,
      dev.statewright.v1.PauseScheduleResponse> getPauseScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.PauseScheduleRequest, dev.statewright.v1.PauseScheduleResponse> getPauseScheduleMethod;
    if ((getPauseScheduleMethod = ScheduleServiceGrpc.getPauseScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getPauseScheduleMethod = ScheduleServiceGrpc.getPauseScheduleMethod) == null) {
          ScheduleServiceGrpc.getPauseScheduleMethod = getPauseScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.PauseScheduleRequest, dev.statewright.v1.PauseScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "PauseSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.PauseScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.PauseScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("PauseSchedule"))
              .build();
        }
      }
    }
    return getPauseScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.UnpauseScheduleRequest,
      dev.statewright.v1.UnpauseScheduleResponse> getUnpauseScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UnpauseSchedule",
      requestType = dev.statewright.v1.UnpauseScheduleRequest.class,
      responseType = dev.statewright.v1.UnpauseScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.UnpauseScheduleRequest,
      dev.statewright.v1.UnpauseScheduleResponse> getUnpauseScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.UnpauseScheduleRequest, dev.statewright.v1.UnpauseScheduleResponse> getUnpauseScheduleMethod;
    if ((getUnpauseScheduleMethod = ScheduleServiceGrpc.getUnpauseScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getUnpauseScheduleMethod = ScheduleServiceGrpc.getUnpauseScheduleMethod) == null) {
          ScheduleServiceGrpc.getUnpauseScheduleMethod = getUnpauseScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.UnpauseScheduleRequest, dev.statewright.v1.UnpauseScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UnpauseSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.UnpauseScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.UnpauseScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("UnpauseSchedule"))
              .build();
        }
      }
    }
    return getUnpauseScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.TriggerScheduleRequest,
      dev.statewright.v1.TriggerScheduleResponse> getTriggerScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "TriggerSchedule",
      requestType = dev.statewright.v1.TriggerScheduleRequest.class,
      responseType = dev.statewright.v1.TriggerScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.TriggerScheduleRequest,
      dev.statewright.v1.TriggerScheduleResponse> getTriggerScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.TriggerScheduleRequest, dev.statewright.v1.TriggerScheduleResponse> getTriggerScheduleMethod;
    if ((getTriggerScheduleMethod = ScheduleServiceGrpc.getTriggerScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getTriggerScheduleMethod = ScheduleServiceGrpc.getTriggerScheduleMethod) == null) {
          ScheduleServiceGrpc.getTriggerScheduleMethod = getTriggerScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.TriggerScheduleRequest, dev.statewright.v1.TriggerScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "TriggerSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.TriggerScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.TriggerScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("TriggerSchedule"))
              .build();
        }
      }
    }
    return getTriggerScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.BackfillScheduleRequest,
      dev.statewright.v1.BackfillScheduleResponse> getBackfillScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "BackfillSchedule",
      requestType = dev.statewright.v1.BackfillScheduleRequest.class,
      responseType = dev.statewright.v1.BackfillScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.BackfillScheduleRequest,
      dev.statewright.v1.BackfillScheduleResponse> getBackfillScheduleMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.BackfillScheduleRequest, dev.statewright.v1.BackfillScheduleResponse> getBackfillScheduleMethod;
    if ((getBackfillScheduleMethod = ScheduleServiceGrpc.getBackfillScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getBackfillScheduleMethod = ScheduleServiceGrpc.getBackfillScheduleMethod) == null) {
          ScheduleServiceGrpc.getBackfillScheduleMethod = getBackfillScheduleMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.BackfillScheduleRequest, dev.statewright.v1.BackfillScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "BackfillSchedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.BackfillScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.BackfillScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("BackfillSchedule"))
              .build();
        }
      }
    }
    return getBackfillScheduleMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ScheduleServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceStub>() {
        @java.lang.Override
        public ScheduleServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceStub(channel, callOptions);
        }
      };
    return ScheduleServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ScheduleServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingV2Stub>() {
        @java.lang.Override
        public ScheduleServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ScheduleServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ScheduleServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingStub>() {
        @java.lang.Override
        public ScheduleServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceBlockingStub(channel, callOptions);
        }
      };
    return ScheduleServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ScheduleServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceFutureStub>() {
        @java.lang.Override
        public ScheduleServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceFutureStub(channel, callOptions);
        }
      };
    return ScheduleServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * Starts workflows on a calendar: each fire of a schedule starts one instance named
   * `&lt;schedule_id&gt;-&lt;nominal fire time, RFC 3339 UTC&gt;`, exactly once across replicas,
   * retries and restarts, never before its time.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Creates a schedule.
     * </pre>
     */
    default void createSchedule(dev.statewright.v1.CreateScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CreateScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCreateScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reads one schedule: its spec, state, next fire times and recent actions.
     * </pre>
     */
    default void getSchedule(dev.statewright.v1.GetScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists schedules by id, paged.
     * </pre>
     */
    default void listSchedules(dev.statewright.v1.ListSchedulesRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListSchedulesResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListSchedulesMethod(), responseObserver);
    }

    /**
     * <pre>
     * Replaces a schedule's spec, action and policies; its state and record stay.
     * </pre>
     */
    default void updateSchedule(dev.statewright.v1.UpdateScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.UpdateScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUpdateScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Deletes a schedule; the instances it started are left as they are.
     * </pre>
     */
    default void deleteSchedule(dev.statewright.v1.DeleteScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.DeleteScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Pauses a schedule: no fire until it is unpaused (fires due meanwhile are missed).
     * </pre>
     */
    default void pauseSchedule(dev.statewright.v1.PauseScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.PauseScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPauseScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Unpauses a schedule: it fires again from its next fire time on.
     * </pre>
     */
    default void unpauseSchedule(dev.statewright.v1.UnpauseScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.UnpauseScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUnpauseScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Fires a schedule now, once, with its overlap policy (or regardless of it).
     * </pre>
     */
    default void triggerSchedule(dev.statewright.v1.TriggerScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.TriggerScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getTriggerScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * Fires a schedule at every nominal time of a past range, as if it had run then, paced
     * (each starts whatever the overlap policy: a backfill asks for every run).
     * </pre>
     */
    default void backfillSchedule(dev.statewright.v1.BackfillScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.BackfillScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getBackfillScheduleMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ScheduleService.
   * <pre>
   * Starts workflows on a calendar: each fire of a schedule starts one instance named
   * `&lt;schedule_id&gt;-&lt;nominal fire time, RFC 3339 UTC&gt;`, exactly once across replicas,
   * retries and restarts, never before its time.
   * </pre>
   */
  public static abstract class ScheduleServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ScheduleServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ScheduleService.
   * <pre>
   * Starts workflows on a calendar: each fire of a schedule starts one instance named
   * `&lt;schedule_id&gt;-&lt;nominal fire time, RFC 3339 UTC&gt;`, exactly once across replicas,
   * retries and restarts, never before its time.
   * </pre>
   */
  public static final class ScheduleServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ScheduleServiceStub> {
    private ScheduleServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a schedule.
     * </pre>
     */
    public void createSchedule(dev.statewright.v1.CreateScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CreateScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCreateScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reads one schedule: its spec, state, next fire times and recent actions.
     * </pre>
     */
    public void getSchedule(dev.statewright.v1.GetScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists schedules by id, paged.
     * </pre>
     */
    public void listSchedules(dev.statewright.v1.ListSchedulesRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListSchedulesResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListSchedulesMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Replaces a schedule's spec, action and policies; its state and record stay.
     * </pre>
     */
    public void updateSchedule(dev.statewright.v1.UpdateScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.UpdateScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUpdateScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Deletes a schedule; the instances it started are left as they are.
     * </pre>
     */
    public void deleteSchedule(dev.statewright.v1.DeleteScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.DeleteScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Pauses a schedule: no fire until it is unpaused (fires due meanwhile are missed).
     * </pre>
     */
    public void pauseSchedule(dev.statewright.v1.PauseScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.PauseScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPauseScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Unpauses a schedule: it fires again from its next fire time on.
     * </pre>
     */
    public void unpauseSchedule(dev.statewright.v1.UnpauseScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.UnpauseScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUnpauseScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Fires a schedule now, once, with its overlap policy (or regardless of it).
     * </pre>
     */
    public void triggerSchedule(dev.statewright.v1.TriggerScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.TriggerScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getTriggerScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Fires a schedule at every nominal time of a past range, as if it had run then, paced
     * (each starts whatever the overlap policy: a backfill asks for every run).
     * </pre>
     */
    public void backfillSchedule(dev.statewright.v1.BackfillScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.BackfillScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getBackfillScheduleMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ScheduleService.
   * <pre>
   * Starts workflows on a calendar: each fire of a schedule starts one instance named
   * `&lt;schedule_id&gt;-&lt;nominal fire time, RFC 3339 UTC&gt;`, exactly once across replicas,
   * retries and restarts, never before its time.
   * </pre>
   */
  public static final class ScheduleServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ScheduleServiceBlockingV2Stub> {
    private ScheduleServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a schedule.
     * </pre>
     */
    public dev.statewright.v1.CreateScheduleResponse createSchedule(dev.statewright.v1.CreateScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCreateScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one schedule: its spec, state, next fire times and recent actions.
     * </pre>
     */
    public dev.statewright.v1.GetScheduleResponse getSchedule(dev.statewright.v1.GetScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists schedules by id, paged.
     * </pre>
     */
    public dev.statewright.v1.ListSchedulesResponse listSchedules(dev.statewright.v1.ListSchedulesRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListSchedulesMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Replaces a schedule's spec, action and policies; its state and record stay.
     * </pre>
     */
    public dev.statewright.v1.UpdateScheduleResponse updateSchedule(dev.statewright.v1.UpdateScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUpdateScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Deletes a schedule; the instances it started are left as they are.
     * </pre>
     */
    public dev.statewright.v1.DeleteScheduleResponse deleteSchedule(dev.statewright.v1.DeleteScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses a schedule: no fire until it is unpaused (fires due meanwhile are missed).
     * </pre>
     */
    public dev.statewright.v1.PauseScheduleResponse pauseSchedule(dev.statewright.v1.PauseScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPauseScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Unpauses a schedule: it fires again from its next fire time on.
     * </pre>
     */
    public dev.statewright.v1.UnpauseScheduleResponse unpauseSchedule(dev.statewright.v1.UnpauseScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUnpauseScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fires a schedule now, once, with its overlap policy (or regardless of it).
     * </pre>
     */
    public dev.statewright.v1.TriggerScheduleResponse triggerSchedule(dev.statewright.v1.TriggerScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getTriggerScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fires a schedule at every nominal time of a past range, as if it had run then, paced
     * (each starts whatever the overlap policy: a backfill asks for every run).
     * </pre>
     */
    public dev.statewright.v1.BackfillScheduleResponse backfillSchedule(dev.statewright.v1.BackfillScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getBackfillScheduleMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ScheduleService.
   * <pre>
   * Starts workflows on a calendar: each fire of a schedule starts one instance named
   * `&lt;schedule_id&gt;-&lt;nominal fire time, RFC 3339 UTC&gt;`, exactly once across replicas,
   * retries and restarts, never before its time.
   * </pre>
   */
  public static final class ScheduleServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ScheduleServiceBlockingStub> {
    private ScheduleServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a schedule.
     * </pre>
     */
    public dev.statewright.v1.CreateScheduleResponse createSchedule(dev.statewright.v1.CreateScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCreateScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one schedule: its spec, state, next fire times and recent actions.
     * </pre>
     */
    public dev.statewright.v1.GetScheduleResponse getSchedule(dev.statewright.v1.GetScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists schedules by id, paged.
     * </pre>
     */
    public dev.statewright.v1.ListSchedulesResponse listSchedules(dev.statewright.v1.ListSchedulesRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListSchedulesMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Replaces a schedule's spec, action and policies; its state and record stay.
     * </pre>
     */
    public dev.statewright.v1.UpdateScheduleResponse updateSchedule(dev.statewright.v1.UpdateScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUpdateScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Deletes a schedule; the instances it started are left as they are.
     * </pre>
     */
    public dev.statewright.v1.DeleteScheduleResponse deleteSchedule(dev.statewright.v1.DeleteScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses a schedule: no fire until it is unpaused (fires due meanwhile are missed).
     * </pre>
     */
    public dev.statewright.v1.PauseScheduleResponse pauseSchedule(dev.statewright.v1.PauseScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPauseScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Unpauses a schedule: it fires again from its next fire time on.
     * </pre>
     */
    public dev.statewright.v1.UnpauseScheduleResponse unpauseSchedule(dev.statewright.v1.UnpauseScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUnpauseScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fires a schedule now, once, with its overlap policy (or regardless of it).
     * </pre>
     */
    public dev.statewright.v1.TriggerScheduleResponse triggerSchedule(dev.statewright.v1.TriggerScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getTriggerScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fires a schedule at every nominal time of a past range, as if it had run then, paced
     * (each starts whatever the overlap policy: a backfill asks for every run).
     * </pre>
     */
    public dev.statewright.v1.BackfillScheduleResponse backfillSchedule(dev.statewright.v1.BackfillScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getBackfillScheduleMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ScheduleService.
   * <pre>
   * Starts workflows on a calendar: each fire of a schedule starts one instance named
   * `&lt;schedule_id&gt;-&lt;nominal fire time, RFC 3339 UTC&gt;`, exactly once across replicas,
   * retries and restarts, never before its time.
   * </pre>
   */
  public static final class ScheduleServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ScheduleServiceFutureStub> {
    private ScheduleServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates a schedule.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.CreateScheduleResponse> createSchedule(
        dev.statewright.v1.CreateScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCreateScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reads one schedule: its spec, state, next fire times and recent actions.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetScheduleResponse> getSchedule(
        dev.statewright.v1.GetScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists schedules by id, paged.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ListSchedulesResponse> listSchedules(
        dev.statewright.v1.ListSchedulesRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListSchedulesMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Replaces a schedule's spec, action and policies; its state and record stay.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.UpdateScheduleResponse> updateSchedule(
        dev.statewright.v1.UpdateScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUpdateScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Deletes a schedule; the instances it started are left as they are.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.DeleteScheduleResponse> deleteSchedule(
        dev.statewright.v1.DeleteScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Pauses a schedule: no fire until it is unpaused (fires due meanwhile are missed).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.PauseScheduleResponse> pauseSchedule(
        dev.statewright.v1.PauseScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPauseScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Unpauses a schedule: it fires again from its next fire time on.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.UnpauseScheduleResponse> unpauseSchedule(
        dev.statewright.v1.UnpauseScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUnpauseScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Fires a schedule now, once, with its overlap policy (or regardless of it).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.TriggerScheduleResponse> triggerSchedule(
        dev.statewright.v1.TriggerScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getTriggerScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Fires a schedule at every nominal time of a past range, as if it had run then, paced
     * (each starts whatever the overlap policy: a backfill asks for every run).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.BackfillScheduleResponse> backfillSchedule(
        dev.statewright.v1.BackfillScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getBackfillScheduleMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_CREATE_SCHEDULE = 0;
  private static final int METHODID_GET_SCHEDULE = 1;
  private static final int METHODID_LIST_SCHEDULES = 2;
  private static final int METHODID_UPDATE_SCHEDULE = 3;
  private static final int METHODID_DELETE_SCHEDULE = 4;
  private static final int METHODID_PAUSE_SCHEDULE = 5;
  private static final int METHODID_UNPAUSE_SCHEDULE = 6;
  private static final int METHODID_TRIGGER_SCHEDULE = 7;
  private static final int METHODID_BACKFILL_SCHEDULE = 8;

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
        case METHODID_CREATE_SCHEDULE:
          serviceImpl.createSchedule((dev.statewright.v1.CreateScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.CreateScheduleResponse>) responseObserver);
          break;
        case METHODID_GET_SCHEDULE:
          serviceImpl.getSchedule((dev.statewright.v1.GetScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetScheduleResponse>) responseObserver);
          break;
        case METHODID_LIST_SCHEDULES:
          serviceImpl.listSchedules((dev.statewright.v1.ListSchedulesRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ListSchedulesResponse>) responseObserver);
          break;
        case METHODID_UPDATE_SCHEDULE:
          serviceImpl.updateSchedule((dev.statewright.v1.UpdateScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.UpdateScheduleResponse>) responseObserver);
          break;
        case METHODID_DELETE_SCHEDULE:
          serviceImpl.deleteSchedule((dev.statewright.v1.DeleteScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.DeleteScheduleResponse>) responseObserver);
          break;
        case METHODID_PAUSE_SCHEDULE:
          serviceImpl.pauseSchedule((dev.statewright.v1.PauseScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.PauseScheduleResponse>) responseObserver);
          break;
        case METHODID_UNPAUSE_SCHEDULE:
          serviceImpl.unpauseSchedule((dev.statewright.v1.UnpauseScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.UnpauseScheduleResponse>) responseObserver);
          break;
        case METHODID_TRIGGER_SCHEDULE:
          serviceImpl.triggerSchedule((dev.statewright.v1.TriggerScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.TriggerScheduleResponse>) responseObserver);
          break;
        case METHODID_BACKFILL_SCHEDULE:
          serviceImpl.backfillSchedule((dev.statewright.v1.BackfillScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.BackfillScheduleResponse>) responseObserver);
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
          getCreateScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.CreateScheduleRequest,
              dev.statewright.v1.CreateScheduleResponse>(
                service, METHODID_CREATE_SCHEDULE)))
        .addMethod(
          getGetScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetScheduleRequest,
              dev.statewright.v1.GetScheduleResponse>(
                service, METHODID_GET_SCHEDULE)))
        .addMethod(
          getListSchedulesMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ListSchedulesRequest,
              dev.statewright.v1.ListSchedulesResponse>(
                service, METHODID_LIST_SCHEDULES)))
        .addMethod(
          getUpdateScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.UpdateScheduleRequest,
              dev.statewright.v1.UpdateScheduleResponse>(
                service, METHODID_UPDATE_SCHEDULE)))
        .addMethod(
          getDeleteScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.DeleteScheduleRequest,
              dev.statewright.v1.DeleteScheduleResponse>(
                service, METHODID_DELETE_SCHEDULE)))
        .addMethod(
          getPauseScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.PauseScheduleRequest,
              dev.statewright.v1.PauseScheduleResponse>(
                service, METHODID_PAUSE_SCHEDULE)))
        .addMethod(
          getUnpauseScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.UnpauseScheduleRequest,
              dev.statewright.v1.UnpauseScheduleResponse>(
                service, METHODID_UNPAUSE_SCHEDULE)))
        .addMethod(
          getTriggerScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.TriggerScheduleRequest,
              dev.statewright.v1.TriggerScheduleResponse>(
                service, METHODID_TRIGGER_SCHEDULE)))
        .addMethod(
          getBackfillScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.BackfillScheduleRequest,
              dev.statewright.v1.BackfillScheduleResponse>(
                service, METHODID_BACKFILL_SCHEDULE)))
        .build();
  }

  private static abstract class ScheduleServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ScheduleServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.statewright.v1.ScheduleServiceOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ScheduleService");
    }
  }

  private static final class ScheduleServiceFileDescriptorSupplier
      extends ScheduleServiceBaseDescriptorSupplier {
    ScheduleServiceFileDescriptorSupplier() {}
  }

  private static final class ScheduleServiceMethodDescriptorSupplier
      extends ScheduleServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ScheduleServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (ScheduleServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ScheduleServiceFileDescriptorSupplier())
              .addMethod(getCreateScheduleMethod())
              .addMethod(getGetScheduleMethod())
              .addMethod(getListSchedulesMethod())
              .addMethod(getUpdateScheduleMethod())
              .addMethod(getDeleteScheduleMethod())
              .addMethod(getPauseScheduleMethod())
              .addMethod(getUnpauseScheduleMethod())
              .addMethod(getTriggerScheduleMethod())
              .addMethod(getBackfillScheduleMethod())
              .build();
        }
      }
    }
    return result;
  }
}
