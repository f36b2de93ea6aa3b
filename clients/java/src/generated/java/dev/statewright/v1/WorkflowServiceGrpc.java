package dev.statewright.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * Runs durable finite-state-machine workflows.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class WorkflowServiceGrpc {

  private WorkflowServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "statewright.v1.WorkflowService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.StartWorkflowRequest,
      dev.statewright.v1.StartWorkflowResponse> getStartWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "StartWorkflow",
      requestType = dev.statewright.v1.StartWorkflowRequest.class,
      responseType = dev.statewright.v1.StartWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.StartWorkflowRequest,
      dev.statewright.v1.StartWorkflowResponse> getStartWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.StartWorkflowRequest, dev.statewright.v1.StartWorkflowResponse> getStartWorkflowMethod;
    if ((getStartWorkflowMethod = WorkflowServiceGrpc.getStartWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getStartWorkflowMethod = WorkflowServiceGrpc.getStartWorkflowMethod) == null) {
          WorkflowServiceGrpc.getStartWorkflowMethod = getStartWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.StartWorkflowRequest, dev.statewright.v1.StartWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "StartWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.StartWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.StartWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("StartWorkflow"))
              .build();
        }
      }
    }
    return getStartWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ResumeWorkflowRequest,
      dev.statewright.v1.ResumeWorkflowResponse> getResumeWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ResumeWorkflow",
      requestType = dev.statewright.v1.ResumeWorkflowRequest.class,
      responseType = dev.statewright.v1.ResumeWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ResumeWorkflowRequest,
      dev.statewright.v1.ResumeWorkflowResponse> getResumeWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ResumeWorkflowRequest, dev.statewright.v1.ResumeWorkflowResponse> getResumeWorkflowMethod;
    if ((getResumeWorkflowMethod = WorkflowServiceGrpc.getResumeWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getResumeWorkflowMethod = WorkflowServiceGrpc.getResumeWorkflowMethod) == null) {
          WorkflowServiceGrpc.getResumeWorkflowMethod = getResumeWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ResumeWorkflowRequest, dev.statewright.v1.ResumeWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ResumeWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ResumeWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ResumeWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("ResumeWorkflow"))
              .build();
        }
      }
    }
    return getResumeWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.SignalWorkflowRequest,
      dev.statewright.v1.SignalWorkflowResponse> getSignalWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SignalWorkflow",
      requestType = dev.statewright.v1.SignalWorkflowRequest.class,
      responseType = dev.statewright.v1.SignalWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.SignalWorkflowRequest,
      dev.statewright.v1.SignalWorkflowResponse> getSignalWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.SignalWorkflowRequest, dev.statewright.v1.SignalWorkflowResponse> getSignalWorkflowMethod;
    if ((getSignalWorkflowMethod = WorkflowServiceGrpc.getSignalWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getSignalWorkflowMethod = WorkflowServiceGrpc.getSignalWorkflowMethod) == null) {
          WorkflowServiceGrpc.getSignalWorkflowMethod = getSignalWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.SignalWorkflowRequest, dev.statewright.v1.SignalWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SignalWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.SignalWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.SignalWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("SignalWorkflow"))
              .build();
        }
      }
    }
    return getSignalWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetWorkflowRequest,
      dev.statewright.v1.GetWorkflowResponse> getGetWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetWorkflow",
      requestType = dev.statewright.v1.GetWorkflowRequest.class,
      responseType = dev.statewright.v1.GetWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetWorkflowRequest,
      dev.statewright.v1.GetWorkflowResponse> getGetWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetWorkflowRequest, dev.statewright.v1.GetWorkflowResponse> getGetWorkflowMethod;
    if ((getGetWorkflowMethod = WorkflowServiceGrpc.getGetWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getGetWorkflowMethod = WorkflowServiceGrpc.getGetWorkflowMethod) == null) {
          WorkflowServiceGrpc.getGetWorkflowMethod = getGetWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetWorkflowRequest, dev.statewright.v1.GetWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("GetWorkflow"))
              .build();
        }
      }
    }
    return getGetWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ListWorkflowsRequest,
      dev.statewright.v1.ListWorkflowsResponse> getListWorkflowsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListWorkflows",
      requestType = dev.statewright.v1.ListWorkflowsRequest.class,
      responseType = dev.statewright.v1.ListWorkflowsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ListWorkflowsRequest,
      dev.statewright.v1.ListWorkflowsResponse> getListWorkflowsMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ListWorkflowsRequest, dev.statewright.v1.ListWorkflowsResponse> getListWorkflowsMethod;
    if ((getListWorkflowsMethod = WorkflowServiceGrpc.getListWorkflowsMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getListWorkflowsMethod = WorkflowServiceGrpc.getListWorkflowsMethod) == null) {
          WorkflowServiceGrpc.getListWorkflowsMethod = getListWorkflowsMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ListWorkflowsRequest, dev.statewright.v1.ListWorkflowsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListWorkflows"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListWorkflowsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListWorkflowsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("ListWorkflows"))
              .build();
        }
      }
    }
    return getListWorkflowsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.CancelWorkflowRequest,
      dev.statewright.v1.CancelWorkflowResponse> getCancelWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CancelWorkflow",
      requestType = dev.statewright.v1.CancelWorkflowRequest.class,
      responseType = dev.statewright.v1.CancelWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.CancelWorkflowRequest,
      dev.statewright.v1.CancelWorkflowResponse> getCancelWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.CancelWorkflowRequest, dev.statewright.v1.CancelWorkflowResponse> getCancelWorkflowMethod;
    if ((getCancelWorkflowMethod = WorkflowServiceGrpc.getCancelWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getCancelWorkflowMethod = WorkflowServiceGrpc.getCancelWorkflowMethod) == null) {
          WorkflowServiceGrpc.getCancelWorkflowMethod = getCancelWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.CancelWorkflowRequest, dev.statewright.v1.CancelWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CancelWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CancelWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CancelWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("CancelWorkflow"))
              .build();
        }
      }
    }
    return getCancelWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.DeleteWorkflowRequest,
      dev.statewright.v1.DeleteWorkflowResponse> getDeleteWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteWorkflow",
      requestType = dev.statewright.v1.DeleteWorkflowRequest.class,
      responseType = dev.statewright.v1.DeleteWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.DeleteWorkflowRequest,
      dev.statewright.v1.DeleteWorkflowResponse> getDeleteWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.DeleteWorkflowRequest, dev.statewright.v1.DeleteWorkflowResponse> getDeleteWorkflowMethod;
    if ((getDeleteWorkflowMethod = WorkflowServiceGrpc.getDeleteWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getDeleteWorkflowMethod = WorkflowServiceGrpc.getDeleteWorkflowMethod) == null) {
          WorkflowServiceGrpc.getDeleteWorkflowMethod = getDeleteWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.DeleteWorkflowRequest, dev.statewright.v1.DeleteWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.DeleteWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.DeleteWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("DeleteWorkflow"))
              .build();
        }
      }
    }
    return getDeleteWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.WatchWorkflowRequest,
      dev.statewright.v1.WatchWorkflowResponse> getWatchWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchWorkflow",
      requestType = dev.statewright.v1.WatchWorkflowRequest.class,
      responseType = dev.statewright.v1.WatchWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.WatchWorkflowRequest,
      dev.statewright.v1.WatchWorkflowResponse> getWatchWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.WatchWorkflowRequest, dev.statewright.v1.WatchWorkflowResponse> getWatchWorkflowMethod;
    if ((getWatchWorkflowMethod = WorkflowServiceGrpc.getWatchWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getWatchWorkflowMethod = WorkflowServiceGrpc.getWatchWorkflowMethod) == null) {
          WorkflowServiceGrpc.getWatchWorkflowMethod = getWatchWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.WatchWorkflowRequest, dev.statewright.v1.WatchWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.WatchWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.WatchWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("WatchWorkflow"))
              .build();
        }
      }
    }
    return getWatchWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetDiagnosticsRequest,
      dev.statewright.v1.GetDiagnosticsResponse> getGetDiagnosticsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetDiagnostics",
      requestType = dev.statewright.v1.GetDiagnosticsRequest.class,
      responseType = dev.statewright.v1.GetDiagnosticsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetDiagnosticsRequest,
      dev.statewright.v1.GetDiagnosticsResponse> getGetDiagnosticsMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetDiagnosticsRequest, dev.statewright.v1.GetDiagnosticsResponse> getGetDiagnosticsMethod;
    if ((getGetDiagnosticsMethod = WorkflowServiceGrpc.getGetDiagnosticsMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getGetDiagnosticsMethod = WorkflowServiceGrpc.getGetDiagnosticsMethod) == null) {
          WorkflowServiceGrpc.getGetDiagnosticsMethod = getGetDiagnosticsMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetDiagnosticsRequest, dev.statewright.v1.GetDiagnosticsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetDiagnostics"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetDiagnosticsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetDiagnosticsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("GetDiagnostics"))
              .build();
        }
      }
    }
    return getGetDiagnosticsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetWorkflowDiagnosticsRequest,
      dev.statewright.v1.GetWorkflowDiagnosticsResponse> getGetWorkflowDiagnosticsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetWorkflowDiagnostics",
      requestType = dev.statewright.v1.GetWorkflowDiagnosticsRequest.class,
      responseType = dev.statewright.v1.GetWorkflowDiagnosticsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetWorkflowDiagnosticsRequest,
      dev.statewright.v1.GetWorkflowDiagnosticsResponse> getGetWorkflowDiagnosticsMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetWorkflowDiagnosticsRequest, dev.statewright.v1.GetWorkflowDiagnosticsResponse> getGetWorkflowDiagnosticsMethod;
    if ((getGetWorkflowDiagnosticsMethod = WorkflowServiceGrpc.getGetWorkflowDiagnosticsMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getGetWorkflowDiagnosticsMethod = WorkflowServiceGrpc.getGetWorkflowDiagnosticsMethod) == null) {
          WorkflowServiceGrpc.getGetWorkflowDiagnosticsMethod = getGetWorkflowDiagnosticsMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetWorkflowDiagnosticsRequest, dev.statewright.v1.GetWorkflowDiagnosticsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetWorkflowDiagnostics"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetWorkflowDiagnosticsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetWorkflowDiagnosticsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("GetWorkflowDiagnostics"))
              .build();
        }
      }
    }
    return getGetWorkflowDiagnosticsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ListDefinitionsRequest,
      dev.statewright.v1.ListDefinitionsResponse> getListDefinitionsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListDefinitions",
      requestType = dev.statewright.v1.ListDefinitionsRequest.class,
      responseType = dev.statewright.v1.ListDefinitionsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ListDefinitionsRequest,
      dev.statewright.v1.ListDefinitionsResponse> getListDefinitionsMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ListDefinitionsRequest, dev.statewright.v1.ListDefinitionsResponse> getListDefinitionsMethod;
    if ((getListDefinitionsMethod = WorkflowServiceGrpc.getListDefinitionsMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getListDefinitionsMethod = WorkflowServiceGrpc.getListDefinitionsMethod) == null) {
          WorkflowServiceGrpc.getListDefinitionsMethod = getListDefinitionsMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ListDefinitionsRequest, dev.statewright.v1.ListDefinitionsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListDefinitions"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListDefinitionsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ListDefinitionsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("ListDefinitions"))
              .build();
        }
      }
    }
    return getListDefinitionsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.GetDefinitionRequest,
      dev.statewright.v1.GetDefinitionResponse> getGetDefinitionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetDefinition",
      requestType = dev.statewright.v1.GetDefinitionRequest.class,
      responseType = dev.statewright.v1.GetDefinitionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.GetDefinitionRequest,
      dev.statewright.v1.GetDefinitionResponse> getGetDefinitionMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.GetDefinitionRequest, dev.statewright.v1.GetDefinitionResponse> getGetDefinitionMethod;
    if ((getGetDefinitionMethod = WorkflowServiceGrpc.getGetDefinitionMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getGetDefinitionMethod = WorkflowServiceGrpc.getGetDefinitionMethod) == null) {
          WorkflowServiceGrpc.getGetDefinitionMethod = getGetDefinitionMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.GetDefinitionRequest, dev.statewright.v1.GetDefinitionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetDefinition"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetDefinitionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.GetDefinitionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("GetDefinition"))
              .build();
        }
      }
    }
    return getGetDefinitionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.CountWorkflowsRequest,
      dev.statewright.v1.CountWorkflowsResponse> getCountWorkflowsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CountWorkflows",
      requestType = dev.statewright.v1.CountWorkflowsRequest.class,
      responseType = dev.statewright.v1.CountWorkflowsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.CountWorkflowsRequest,
      dev.statewright.v1.CountWorkflowsResponse> getCountWorkflowsMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.CountWorkflowsRequest, dev.statewright.v1.CountWorkflowsResponse> getCountWorkflowsMethod;
    if ((getCountWorkflowsMethod = WorkflowServiceGrpc.getCountWorkflowsMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getCountWorkflowsMethod = WorkflowServiceGrpc.getCountWorkflowsMethod) == null) {
          WorkflowServiceGrpc.getCountWorkflowsMethod = getCountWorkflowsMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.CountWorkflowsRequest, dev.statewright.v1.CountWorkflowsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CountWorkflows"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CountWorkflowsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.CountWorkflowsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("CountWorkflows"))
              .build();
        }
      }
    }
    return getCountWorkflowsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.SignalWithStartWorkflowRequest,
      dev.statewright.v1.SignalWithStartWorkflowResponse> getSignalWithStartWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SignalWithStartWorkflow",
      requestType = dev.statewright.v1.SignalWithStartWorkflowRequest.class,
      responseType = dev.statewright.v1.SignalWithStartWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.SignalWithStartWorkflowRequest,
      dev.statewright.v1.SignalWithStartWorkflowResponse> getSignalWithStartWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.SignalWithStartWorkflowRequest, dev.statewright.v1.SignalWithStartWorkflowResponse> getSignalWithStartWorkflowMethod;
    if ((getSignalWithStartWorkflowMethod = WorkflowServiceGrpc.getSignalWithStartWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getSignalWithStartWorkflowMethod = WorkflowServiceGrpc.getSignalWithStartWorkflowMethod) == null) {
          WorkflowServiceGrpc.getSignalWithStartWorkflowMethod = getSignalWithStartWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.SignalWithStartWorkflowRequest, dev.statewright.v1.SignalWithStartWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SignalWithStartWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.SignalWithStartWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.SignalWithStartWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("SignalWithStartWorkflow"))
              .build();
        }
      }
    }
    return getSignalWithStartWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.RetryWorkflowRequest,
      dev.statewright.v1.RetryWorkflowResponse> getRetryWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RetryWorkflow",
      requestType = dev.statewright.v1.RetryWorkflowRequest.class,
      responseType = dev.statewright.v1.RetryWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.RetryWorkflowRequest,
      dev.statewright.v1.RetryWorkflowResponse> getRetryWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.RetryWorkflowRequest, dev.statewright.v1.RetryWorkflowResponse> getRetryWorkflowMethod;
    if ((getRetryWorkflowMethod = WorkflowServiceGrpc.getRetryWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getRetryWorkflowMethod = WorkflowServiceGrpc.getRetryWorkflowMethod) == null) {
          WorkflowServiceGrpc.getRetryWorkflowMethod = getRetryWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.RetryWorkflowRequest, dev.statewright.v1.RetryWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RetryWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.RetryWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.RetryWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("RetryWorkflow"))
              .build();
        }
      }
    }
    return getRetryWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.ResetWorkflowRequest,
      dev.statewright.v1.ResetWorkflowResponse> getResetWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ResetWorkflow",
      requestType = dev.statewright.v1.ResetWorkflowRequest.class,
      responseType = dev.statewright.v1.ResetWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.ResetWorkflowRequest,
      dev.statewright.v1.ResetWorkflowResponse> getResetWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.ResetWorkflowRequest, dev.statewright.v1.ResetWorkflowResponse> getResetWorkflowMethod;
    if ((getResetWorkflowMethod = WorkflowServiceGrpc.getResetWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getResetWorkflowMethod = WorkflowServiceGrpc.getResetWorkflowMethod) == null) {
          WorkflowServiceGrpc.getResetWorkflowMethod = getResetWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.ResetWorkflowRequest, dev.statewright.v1.ResetWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ResetWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ResetWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.ResetWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("ResetWorkflow"))
              .build();
        }
      }
    }
    return getResetWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.PauseWorkflowRequest,
      dev.statewright.v1.PauseWorkflowResponse> getPauseWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "PauseWorkflow",
      requestType = dev.statewright.v1.PauseWorkflowRequest.class,
      responseType = dev.statewright.v1.PauseWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.PauseWorkflowRequest,
      dev.statewright.v1.PauseWorkflowResponse> getPauseWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.PauseWorkflowRequest, dev.statewright.v1.PauseWorkflowResponse> getPauseWorkflowMethod;
    if ((getPauseWorkflowMethod = WorkflowServiceGrpc.getPauseWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getPauseWorkflowMethod = WorkflowServiceGrpc.getPauseWorkflowMethod) == null) {
          WorkflowServiceGrpc.getPauseWorkflowMethod = getPauseWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.PauseWorkflowRequest, dev.statewright.v1.PauseWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "PauseWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.PauseWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.PauseWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("PauseWorkflow"))
              .build();
        }
      }
    }
    return getPauseWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.UnpauseWorkflowRequest,
      dev.statewright.v1.UnpauseWorkflowResponse> getUnpauseWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "UnpauseWorkflow",
      requestType = dev.statewright.v1.UnpauseWorkflowRequest.class,
      responseType = dev.statewright.v1.UnpauseWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.UnpauseWorkflowRequest,
      dev.statewright.v1.UnpauseWorkflowResponse> getUnpauseWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.UnpauseWorkflowRequest, dev.statewright.v1.UnpauseWorkflowResponse> getUnpauseWorkflowMethod;
    if ((getUnpauseWorkflowMethod = WorkflowServiceGrpc.getUnpauseWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getUnpauseWorkflowMethod = WorkflowServiceGrpc.getUnpauseWorkflowMethod) == null) {
          WorkflowServiceGrpc.getUnpauseWorkflowMethod = getUnpauseWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.UnpauseWorkflowRequest, dev.statewright.v1.UnpauseWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "UnpauseWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.UnpauseWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.UnpauseWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("UnpauseWorkflow"))
              .build();
        }
      }
    }
    return getUnpauseWorkflowMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.statewright.v1.MigrateWorkflowRequest,
      dev.statewright.v1.MigrateWorkflowResponse> getMigrateWorkflowMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "MigrateWorkflow",
      requestType = dev.statewright.v1.MigrateWorkflowRequest.class,
      responseType = dev.statewright.v1.MigrateWorkflowResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.statewright.v1.MigrateWorkflowRequest,
      dev.statewright.v1.MigrateWorkflowResponse> getMigrateWorkflowMethod() {
    io.grpc.MethodDescriptor<dev.statewright.v1.MigrateWorkflowRequest, dev.statewright.v1.MigrateWorkflowResponse> getMigrateWorkflowMethod;
    if ((getMigrateWorkflowMethod = WorkflowServiceGrpc.getMigrateWorkflowMethod) == null) {
      synchronized (WorkflowServiceGrpc.class) {
        if ((getMigrateWorkflowMethod = WorkflowServiceGrpc.getMigrateWorkflowMethod) == null) {
          WorkflowServiceGrpc.getMigrateWorkflowMethod = getMigrateWorkflowMethod =
              io.grpc.MethodDescriptor.<dev.statewright.v1.MigrateWorkflowRequest, dev.statewright.v1.MigrateWorkflowResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "MigrateWorkflow"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.MigrateWorkflowRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.statewright.v1.MigrateWorkflowResponse.getDefaultInstance()))
              .setSchemaDescriptor(new WorkflowServiceMethodDescriptorSupplier("MigrateWorkflow"))
              .build();
        }
      }
    }
    return getMigrateWorkflowMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static WorkflowServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceStub>() {
        @java.lang.Override
        public WorkflowServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkflowServiceStub(channel, callOptions);
        }
      };
    return WorkflowServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static WorkflowServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceBlockingV2Stub>() {
        @java.lang.Override
        public WorkflowServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkflowServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return WorkflowServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static WorkflowServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceBlockingStub>() {
        @java.lang.Override
        public WorkflowServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkflowServiceBlockingStub(channel, callOptions);
        }
      };
    return WorkflowServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static WorkflowServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<WorkflowServiceFutureStub>() {
        @java.lang.Override
        public WorkflowServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new WorkflowServiceFutureStub(channel, callOptions);
        }
      };
    return WorkflowServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * Runs durable finite-state-machine workflows.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Starts an instance of a definition and runs its first step.
     * </pre>
     */
    default void startWorkflow(dev.statewright.v1.StartWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.StartWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getStartWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Fires an event on a WAITING instance and runs the step.
     * </pre>
     */
    default void resumeWorkflow(dev.statewright.v1.ResumeWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ResumeWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getResumeWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Delivers an event to a RUNNING instance; accepted only once the step is durably saved.
     * </pre>
     */
    default void signalWorkflow(dev.statewright.v1.SignalWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.SignalWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSignalWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reads one instance.
     * </pre>
     */
    default void getWorkflow(dev.statewright.v1.GetWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists instances, filtered and paged.
     * </pre>
     */
    default void listWorkflows(dev.statewright.v1.ListWorkflowsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListWorkflowsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListWorkflowsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Cancels an instance that has not ended.
     * </pre>
     */
    default void cancelWorkflow(dev.statewright.v1.CancelWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CancelWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Removes one finished instance and everything of it (history, timers, tasks, request
     * records) at once; with force, cancels a live instance first. For erasure requests:
     * finished instances are otherwise removed when their retention passes.
     * </pre>
     */
    default void deleteWorkflow(dev.statewright.v1.DeleteWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.DeleteWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Streams every revision of an instance in order, from history and then live.
     * </pre>
     */
    default void watchWorkflow(dev.statewright.v1.WatchWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.WatchWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reports the runtime's health measurements.
     * </pre>
     */
    default void getDiagnostics(dev.statewright.v1.GetDiagnosticsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetDiagnosticsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetDiagnosticsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reports the runtime's view of one instance.
     * </pre>
     */
    default void getWorkflowDiagnostics(dev.statewright.v1.GetWorkflowDiagnosticsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetWorkflowDiagnosticsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetWorkflowDiagnosticsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the definition versions the service knows.
     * </pre>
     */
    default void listDefinitions(dev.statewright.v1.ListDefinitionsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListDefinitionsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListDefinitionsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Reads one definition version, with its source and a Mermaid graph.
     * </pre>
     */
    default void getDefinition(dev.statewright.v1.GetDefinitionRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetDefinitionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetDefinitionMethod(), responseObserver);
    }

    /**
     * <pre>
     * Counts the instances a filter (as ListWorkflows takes it) matches, by status too.
     * </pre>
     */
    default void countWorkflows(dev.statewright.v1.CountWorkflowsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CountWorkflowsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCountWorkflowsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Starts the instance if it does not exist and delivers an event to it, in one saved
     * step; delivers the event as SignalWorkflow does when it exists.
     * </pre>
     */
    default void signalWithStartWorkflow(dev.statewright.v1.SignalWithStartWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.SignalWithStartWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSignalWithStartWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Puts a FAILED instance back into the state it failed in, as one saved step: a task
     * that gave up is scheduled anew with a fresh set of attempts; any other failure re-runs
     * the state's entry actions. With dry_run, returns what would happen and saves nothing.
     * </pre>
     */
    default void retryWorkflow(dev.statewright.v1.RetryWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.RetryWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRetryWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Puts any instance (FAILED, CANCELLED and COMPLETED too) back at a saved revision, as
     * one saved step: that revision's state and context, its timers armed anew, its task
     * scheduled anew; what the instance has open is cancelled in the same step. Work done
     * since that revision (by tasks, outside the instance) is not undone.
     * </pre>
     */
    default void resetWorkflow(dev.statewright.v1.ResetWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ResetWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getResetWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Pauses a RUNNING or WAITING instance, as one saved step: until UnpauseWorkflow nothing
     * steps it. Its timers that come due wait and fire after the unpause, in due order; its
     * tasks are not offered to workers (a leased one's completion is refused with
     * WORKFLOW_PAUSED and offered again after the unpause); resumes are refused and signals
     * answered accepted=false, each with reason WORKFLOW_PAUSED. A finished instance is
     * refused (ALREADY_TERMINAL), a paused one too (ALREADY_PAUSED).
     * </pre>
     */
    default void pauseWorkflow(dev.statewright.v1.PauseWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.PauseWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPauseWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Unpauses a paused instance, as one saved step: its due timers fire and its tasks are
     * offered again. An instance that is not paused is refused (NOT_PAUSED).
     * </pre>
     */
    default void unpauseWorkflow(dev.statewright.v1.UnpauseWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.UnpauseWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUnpauseWorkflowMethod(), responseObserver);
    }

    /**
     * <pre>
     * Moves a RUNNING or WAITING instance to another version of its definition, as one
     * saved step. Checked against both versions first: a refusal (FAILED_PRECONDITION,
     * MIGRATION_INVALID) names every problem with its path. The response gives the plan:
     * the state from and to, the context fields added, set and dropped, the timers and the
     * open task's fate. With dry_run, returns the plan and saves nothing.
     * </pre>
     */
    default void migrateWorkflow(dev.statewright.v1.MigrateWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.MigrateWorkflowResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getMigrateWorkflowMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service WorkflowService.
   * <pre>
   * Runs durable finite-state-machine workflows.
   * </pre>
   */
  public static abstract class WorkflowServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return WorkflowServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service WorkflowService.
   * <pre>
   * Runs durable finite-state-machine workflows.
   * </pre>
   */
  public static final class WorkflowServiceStub
      extends io.grpc.stub.AbstractAsyncStub<WorkflowServiceStub> {
    private WorkflowServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkflowServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkflowServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts an instance of a definition and runs its first step.
     * </pre>
     */
    public void startWorkflow(dev.statewright.v1.StartWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.StartWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getStartWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Fires an event on a WAITING instance and runs the step.
     * </pre>
     */
    public void resumeWorkflow(dev.statewright.v1.ResumeWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ResumeWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getResumeWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Delivers an event to a RUNNING instance; accepted only once the step is durably saved.
     * </pre>
     */
    public void signalWorkflow(dev.statewright.v1.SignalWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.SignalWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSignalWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reads one instance.
     * </pre>
     */
    public void getWorkflow(dev.statewright.v1.GetWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists instances, filtered and paged.
     * </pre>
     */
    public void listWorkflows(dev.statewright.v1.ListWorkflowsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListWorkflowsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListWorkflowsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Cancels an instance that has not ended.
     * </pre>
     */
    public void cancelWorkflow(dev.statewright.v1.CancelWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CancelWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Removes one finished instance and everything of it (history, timers, tasks, request
     * records) at once; with force, cancels a live instance first. For erasure requests:
     * finished instances are otherwise removed when their retention passes.
     * </pre>
     */
    public void deleteWorkflow(dev.statewright.v1.DeleteWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.DeleteWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Streams every revision of an instance in order, from history and then live.
     * </pre>
     */
    public void watchWorkflow(dev.statewright.v1.WatchWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.WatchWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reports the runtime's health measurements.
     * </pre>
     */
    public void getDiagnostics(dev.statewright.v1.GetDiagnosticsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetDiagnosticsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetDiagnosticsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reports the runtime's view of one instance.
     * </pre>
     */
    public void getWorkflowDiagnostics(dev.statewright.v1.GetWorkflowDiagnosticsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetWorkflowDiagnosticsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetWorkflowDiagnosticsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the definition versions the service knows.
     * </pre>
     */
    public void listDefinitions(dev.statewright.v1.ListDefinitionsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ListDefinitionsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListDefinitionsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Reads one definition version, with its source and a Mermaid graph.
     * </pre>
     */
    public void getDefinition(dev.statewright.v1.GetDefinitionRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.GetDefinitionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetDefinitionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Counts the instances a filter (as ListWorkflows takes it) matches, by status too.
     * </pre>
     */
    public void countWorkflows(dev.statewright.v1.CountWorkflowsRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.CountWorkflowsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCountWorkflowsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Starts the instance if it does not exist and delivers an event to it, in one saved
     * step; delivers the event as SignalWorkflow does when it exists.
     * </pre>
     */
    public void signalWithStartWorkflow(dev.statewright.v1.SignalWithStartWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.SignalWithStartWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSignalWithStartWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Puts a FAILED instance back into the state it failed in, as one saved step: a task
     * that gave up is scheduled anew with a fresh set of attempts; any other failure re-runs
     * the state's entry actions. With dry_run, returns what would happen and saves nothing.
     * </pre>
     */
    public void retryWorkflow(dev.statewright.v1.RetryWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.RetryWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRetryWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Puts any instance (FAILED, CANCELLED and COMPLETED too) back at a saved revision, as
     * one saved step: that revision's state and context, its timers armed anew, its task
     * scheduled anew; what the instance has open is cancelled in the same step. Work done
     * since that revision (by tasks, outside the instance) is not undone.
     * </pre>
     */
    public void resetWorkflow(dev.statewright.v1.ResetWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.ResetWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getResetWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Pauses a RUNNING or WAITING instance, as one saved step: until UnpauseWorkflow nothing
     * steps it. Its timers that come due wait and fire after the unpause, in due order; its
     * tasks are not offered to workers (a leased one's completion is refused with
     * WORKFLOW_PAUSED and offered again after the unpause); resumes are refused and signals
     * answered accepted=false, each with reason WORKFLOW_PAUSED. A finished instance is
     * refused (ALREADY_TERMINAL), a paused one too (ALREADY_PAUSED).
     * </pre>
     */
    public void pauseWorkflow(dev.statewright.v1.PauseWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.PauseWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPauseWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Unpauses a paused instance, as one saved step: its due timers fire and its tasks are
     * offered again. An instance that is not paused is refused (NOT_PAUSED).
     * </pre>
     */
    public void unpauseWorkflow(dev.statewright.v1.UnpauseWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.UnpauseWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUnpauseWorkflowMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Moves a RUNNING or WAITING instance to another version of its definition, as one
     * saved step. Checked against both versions first: a refusal (FAILED_PRECONDITION,
     * MIGRATION_INVALID) names every problem with its path. The response gives the plan:
     * the state from and to, the context fields added, set and dropped, the timers and the
     * open task's fate. With dry_run, returns the plan and saves nothing.
     * </pre>
     */
    public void migrateWorkflow(dev.statewright.v1.MigrateWorkflowRequest request,
        io.grpc.stub.StreamObserver<dev.statewright.v1.MigrateWorkflowResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getMigrateWorkflowMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service WorkflowService.
   * <pre>
   * Runs durable finite-state-machine workflows.
   * </pre>
   */
  public static final class WorkflowServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<WorkflowServiceBlockingV2Stub> {
    private WorkflowServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkflowServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkflowServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts an instance of a definition and runs its first step.
     * </pre>
     */
    public dev.statewright.v1.StartWorkflowResponse startWorkflow(dev.statewright.v1.StartWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getStartWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fires an event on a WAITING instance and runs the step.
     * </pre>
     */
    public dev.statewright.v1.ResumeWorkflowResponse resumeWorkflow(dev.statewright.v1.ResumeWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getResumeWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Delivers an event to a RUNNING instance; accepted only once the step is durably saved.
     * </pre>
     */
    public dev.statewright.v1.SignalWorkflowResponse signalWorkflow(dev.statewright.v1.SignalWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSignalWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one instance.
     * </pre>
     */
    public dev.statewright.v1.GetWorkflowResponse getWorkflow(dev.statewright.v1.GetWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists instances, filtered and paged.
     * </pre>
     */
    public dev.statewright.v1.ListWorkflowsResponse listWorkflows(dev.statewright.v1.ListWorkflowsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListWorkflowsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancels an instance that has not ended.
     * </pre>
     */
    public dev.statewright.v1.CancelWorkflowResponse cancelWorkflow(dev.statewright.v1.CancelWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Removes one finished instance and everything of it (history, timers, tasks, request
     * records) at once; with force, cancels a live instance first. For erasure requests:
     * finished instances are otherwise removed when their retention passes.
     * </pre>
     */
    public dev.statewright.v1.DeleteWorkflowResponse deleteWorkflow(dev.statewright.v1.DeleteWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams every revision of an instance in order, from history and then live.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, dev.statewright.v1.WatchWorkflowResponse>
        watchWorkflow(dev.statewright.v1.WatchWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reports the runtime's health measurements.
     * </pre>
     */
    public dev.statewright.v1.GetDiagnosticsResponse getDiagnostics(dev.statewright.v1.GetDiagnosticsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetDiagnosticsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reports the runtime's view of one instance.
     * </pre>
     */
    public dev.statewright.v1.GetWorkflowDiagnosticsResponse getWorkflowDiagnostics(dev.statewright.v1.GetWorkflowDiagnosticsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetWorkflowDiagnosticsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the definition versions the service knows.
     * </pre>
     */
    public dev.statewright.v1.ListDefinitionsResponse listDefinitions(dev.statewright.v1.ListDefinitionsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListDefinitionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one definition version, with its source and a Mermaid graph.
     * </pre>
     */
    public dev.statewright.v1.GetDefinitionResponse getDefinition(dev.statewright.v1.GetDefinitionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetDefinitionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Counts the instances a filter (as ListWorkflows takes it) matches, by status too.
     * </pre>
     */
    public dev.statewright.v1.CountWorkflowsResponse countWorkflows(dev.statewright.v1.CountWorkflowsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCountWorkflowsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Starts the instance if it does not exist and delivers an event to it, in one saved
     * step; delivers the event as SignalWorkflow does when it exists.
     * </pre>
     */
    public dev.statewright.v1.SignalWithStartWorkflowResponse signalWithStartWorkflow(dev.statewright.v1.SignalWithStartWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSignalWithStartWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Puts a FAILED instance back into the state it failed in, as one saved step: a task
     * that gave up is scheduled anew with a fresh set of attempts; any other failure re-runs
     * the state's entry actions. With dry_run, returns what would happen and saves nothing.
     * </pre>
     */
    public dev.statewright.v1.RetryWorkflowResponse retryWorkflow(dev.statewright.v1.RetryWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRetryWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Puts any instance (FAILED, CANCELLED and COMPLETED too) back at a saved revision, as
     * one saved step: that revision's state and context, its timers armed anew, its task
     * scheduled anew; what the instance has open is cancelled in the same step. Work done
     * since that revision (by tasks, outside the instance) is not undone.
     * </pre>
     */
    public dev.statewright.v1.ResetWorkflowResponse resetWorkflow(dev.statewright.v1.ResetWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getResetWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses a RUNNING or WAITING instance, as one saved step: until UnpauseWorkflow nothing
     * steps it. Its timers that come due wait and fire after the unpause, in due order; its
     * tasks are not offered to workers (a leased one's completion is refused with
     * WORKFLOW_PAUSED and offered again after the unpause); resumes are refused and signals
     * answered accepted=false, each with reason WORKFLOW_PAUSED. A finished instance is
     * refused (ALREADY_TERMINAL), a paused one too (ALREADY_PAUSED).
     * </pre>
     */
    public dev.statewright.v1.PauseWorkflowResponse pauseWorkflow(dev.statewright.v1.PauseWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPauseWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Unpauses a paused instance, as one saved step: its due timers fire and its tasks are
     * offered again. An instance that is not paused is refused (NOT_PAUSED).
     * </pre>
     */
    public dev.statewright.v1.UnpauseWorkflowResponse unpauseWorkflow(dev.statewright.v1.UnpauseWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUnpauseWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Moves a RUNNING or WAITING instance to another version of its definition, as one
     * saved step. Checked against both versions first: a refusal (FAILED_PRECONDITION,
     * MIGRATION_INVALID) names every problem with its path. The response gives the plan:
     * the state from and to, the context fields added, set and dropped, the timers and the
     * open task's fate. With dry_run, returns the plan and saves nothing.
     * </pre>
     */
    public dev.statewright.v1.MigrateWorkflowResponse migrateWorkflow(dev.statewright.v1.MigrateWorkflowRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getMigrateWorkflowMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service WorkflowService.
   * <pre>
   * Runs durable finite-state-machine workflows.
   * </pre>
   */
  public static final class WorkflowServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<WorkflowServiceBlockingStub> {
    private WorkflowServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkflowServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkflowServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts an instance of a definition and runs its first step.
     * </pre>
     */
    public dev.statewright.v1.StartWorkflowResponse startWorkflow(dev.statewright.v1.StartWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getStartWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fires an event on a WAITING instance and runs the step.
     * </pre>
     */
    public dev.statewright.v1.ResumeWorkflowResponse resumeWorkflow(dev.statewright.v1.ResumeWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getResumeWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Delivers an event to a RUNNING instance; accepted only once the step is durably saved.
     * </pre>
     */
    public dev.statewright.v1.SignalWorkflowResponse signalWorkflow(dev.statewright.v1.SignalWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSignalWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one instance.
     * </pre>
     */
    public dev.statewright.v1.GetWorkflowResponse getWorkflow(dev.statewright.v1.GetWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists instances, filtered and paged.
     * </pre>
     */
    public dev.statewright.v1.ListWorkflowsResponse listWorkflows(dev.statewright.v1.ListWorkflowsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListWorkflowsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancels an instance that has not ended.
     * </pre>
     */
    public dev.statewright.v1.CancelWorkflowResponse cancelWorkflow(dev.statewright.v1.CancelWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Removes one finished instance and everything of it (history, timers, tasks, request
     * records) at once; with force, cancels a live instance first. For erasure requests:
     * finished instances are otherwise removed when their retention passes.
     * </pre>
     */
    public dev.statewright.v1.DeleteWorkflowResponse deleteWorkflow(dev.statewright.v1.DeleteWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams every revision of an instance in order, from history and then live.
     * </pre>
     */
    public java.util.Iterator<dev.statewright.v1.WatchWorkflowResponse> watchWorkflow(
        dev.statewright.v1.WatchWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reports the runtime's health measurements.
     * </pre>
     */
    public dev.statewright.v1.GetDiagnosticsResponse getDiagnostics(dev.statewright.v1.GetDiagnosticsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetDiagnosticsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reports the runtime's view of one instance.
     * </pre>
     */
    public dev.statewright.v1.GetWorkflowDiagnosticsResponse getWorkflowDiagnostics(dev.statewright.v1.GetWorkflowDiagnosticsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetWorkflowDiagnosticsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the definition versions the service knows.
     * </pre>
     */
    public dev.statewright.v1.ListDefinitionsResponse listDefinitions(dev.statewright.v1.ListDefinitionsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListDefinitionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Reads one definition version, with its source and a Mermaid graph.
     * </pre>
     */
    public dev.statewright.v1.GetDefinitionResponse getDefinition(dev.statewright.v1.GetDefinitionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetDefinitionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Counts the instances a filter (as ListWorkflows takes it) matches, by status too.
     * </pre>
     */
    public dev.statewright.v1.CountWorkflowsResponse countWorkflows(dev.statewright.v1.CountWorkflowsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCountWorkflowsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Starts the instance if it does not exist and delivers an event to it, in one saved
     * step; delivers the event as SignalWorkflow does when it exists.
     * </pre>
     */
    public dev.statewright.v1.SignalWithStartWorkflowResponse signalWithStartWorkflow(dev.statewright.v1.SignalWithStartWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSignalWithStartWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Puts a FAILED instance back into the state it failed in, as one saved step: a task
     * that gave up is scheduled anew with a fresh set of attempts; any other failure re-runs
     * the state's entry actions. With dry_run, returns what would happen and saves nothing.
     * </pre>
     */
    public dev.statewright.v1.RetryWorkflowResponse retryWorkflow(dev.statewright.v1.RetryWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRetryWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Puts any instance (FAILED, CANCELLED and COMPLETED too) back at a saved revision, as
     * one saved step: that revision's state and context, its timers armed anew, its task
     * scheduled anew; what the instance has open is cancelled in the same step. Work done
     * since that revision (by tasks, outside the instance) is not undone.
     * </pre>
     */
    public dev.statewright.v1.ResetWorkflowResponse resetWorkflow(dev.statewright.v1.ResetWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getResetWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pauses a RUNNING or WAITING instance, as one saved step: until UnpauseWorkflow nothing
     * steps it. Its timers that come due wait and fire after the unpause, in due order; its
     * tasks are not offered to workers (a leased one's completion is refused with
     * WORKFLOW_PAUSED and offered again after the unpause); resumes are refused and signals
     * answered accepted=false, each with reason WORKFLOW_PAUSED. A finished instance is
     * refused (ALREADY_TERMINAL), a paused one too (ALREADY_PAUSED).
     * </pre>
     */
    public dev.statewright.v1.PauseWorkflowResponse pauseWorkflow(dev.statewright.v1.PauseWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPauseWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Unpauses a paused instance, as one saved step: its due timers fire and its tasks are
     * offered again. An instance that is not paused is refused (NOT_PAUSED).
     * </pre>
     */
    public dev.statewright.v1.UnpauseWorkflowResponse unpauseWorkflow(dev.statewright.v1.UnpauseWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUnpauseWorkflowMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Moves a RUNNING or WAITING instance to another version of its definition, as one
     * saved step. Checked against both versions first: a refusal (FAILED_PRECONDITION,
     * MIGRATION_INVALID) names every problem with its path. The response gives the plan:
     * the state from and to, the context fields added, set and dropped, the timers and the
     * open task's fate. With dry_run, returns the plan and saves nothing.
     * </pre>
     */
    public dev.statewright.v1.MigrateWorkflowResponse migrateWorkflow(dev.statewright.v1.MigrateWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getMigrateWorkflowMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service WorkflowService.
   * <pre>
   * Runs durable finite-state-machine workflows.
   * </pre>
   */
  public static final class WorkflowServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<WorkflowServiceFutureStub> {
    private WorkflowServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected WorkflowServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new WorkflowServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts an instance of a definition and runs its first step.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.StartWorkflowResponse> startWorkflow(
        dev.statewright.v1.StartWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getStartWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Fires an event on a WAITING instance and runs the step.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ResumeWorkflowResponse> resumeWorkflow(
        dev.statewright.v1.ResumeWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getResumeWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Delivers an event to a RUNNING instance; accepted only once the step is durably saved.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.SignalWorkflowResponse> signalWorkflow(
        dev.statewright.v1.SignalWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSignalWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reads one instance.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetWorkflowResponse> getWorkflow(
        dev.statewright.v1.GetWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists instances, filtered and paged.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ListWorkflowsResponse> listWorkflows(
        dev.statewright.v1.ListWorkflowsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListWorkflowsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Cancels an instance that has not ended.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.CancelWorkflowResponse> cancelWorkflow(
        dev.statewright.v1.CancelWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Removes one finished instance and everything of it (history, timers, tasks, request
     * records) at once; with force, cancels a live instance first. For erasure requests:
     * finished instances are otherwise removed when their retention passes.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.DeleteWorkflowResponse> deleteWorkflow(
        dev.statewright.v1.DeleteWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reports the runtime's health measurements.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetDiagnosticsResponse> getDiagnostics(
        dev.statewright.v1.GetDiagnosticsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetDiagnosticsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reports the runtime's view of one instance.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetWorkflowDiagnosticsResponse> getWorkflowDiagnostics(
        dev.statewright.v1.GetWorkflowDiagnosticsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetWorkflowDiagnosticsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the definition versions the service knows.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ListDefinitionsResponse> listDefinitions(
        dev.statewright.v1.ListDefinitionsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListDefinitionsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Reads one definition version, with its source and a Mermaid graph.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.GetDefinitionResponse> getDefinition(
        dev.statewright.v1.GetDefinitionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetDefinitionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Counts the instances a filter (as ListWorkflows takes it) matches, by status too.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.CountWorkflowsResponse> countWorkflows(
        dev.statewright.v1.CountWorkflowsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCountWorkflowsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Starts the instance if it does not exist and delivers an event to it, in one saved
     * step; delivers the event as SignalWorkflow does when it exists.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.SignalWithStartWorkflowResponse> signalWithStartWorkflow(
        dev.statewright.v1.SignalWithStartWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSignalWithStartWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Puts a FAILED instance back into the state it failed in, as one saved step: a task
     * that gave up is scheduled anew with a fresh set of attempts; any other failure re-runs
     * the state's entry actions. With dry_run, returns what would happen and saves nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.RetryWorkflowResponse> retryWorkflow(
        dev.statewright.v1.RetryWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRetryWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Puts any instance (FAILED, CANCELLED and COMPLETED too) back at a saved revision, as
     * one saved step: that revision's state and context, its timers armed anew, its task
     * scheduled anew; what the instance has open is cancelled in the same step. Work done
     * since that revision (by tasks, outside the instance) is not undone.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.ResetWorkflowResponse> resetWorkflow(
        dev.statewright.v1.ResetWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getResetWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Pauses a RUNNING or WAITING instance, as one saved step: until UnpauseWorkflow nothing
     * steps it. Its timers that come due wait and fire after the unpause, in due order; its
     * tasks are not offered to workers (a leased one's completion is refused with
     * WORKFLOW_PAUSED and offered again after the unpause); resumes are refused and signals
     * answered accepted=false, each with reason WORKFLOW_PAUSED. A finished instance is
     * refused (ALREADY_TERMINAL), a paused one too (ALREADY_PAUSED).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.PauseWorkflowResponse> pauseWorkflow(
        dev.statewright.v1.PauseWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPauseWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Unpauses a paused instance, as one saved step: its due timers fire and its tasks are
     * offered again. An instance that is not paused is refused (NOT_PAUSED).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.UnpauseWorkflowResponse> unpauseWorkflow(
        dev.statewright.v1.UnpauseWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUnpauseWorkflowMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Moves a RUNNING or WAITING instance to another version of its definition, as one
     * saved step. Checked against both versions first: a refusal (FAILED_PRECONDITION,
     * MIGRATION_INVALID) names every problem with its path. The response gives the plan:
     * the state from and to, the context fields added, set and dropped, the timers and the
     * open task's fate. With dry_run, returns the plan and saves nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.statewright.v1.MigrateWorkflowResponse> migrateWorkflow(
        dev.statewright.v1.MigrateWorkflowRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getMigrateWorkflowMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_START_WORKFLOW = 0;
  private static final int METHODID_RESUME_WORKFLOW = 1;
  private static final int METHODID_SIGNAL_WORKFLOW = 2;
  private static final int METHODID_GET_WORKFLOW = 3;
  private static final int METHODID_LIST_WORKFLOWS = 4;
  private static final int METHODID_CANCEL_WORKFLOW = 5;
  private static final int METHODID_DELETE_WORKFLOW = 6;
  private static final int METHODID_WATCH_WORKFLOW = 7;
  private static final int METHODID_GET_DIAGNOSTICS = 8;
  private static final int METHODID_GET_WORKFLOW_DIAGNOSTICS = 9;
  private static final int METHODID_LIST_DEFINITIONS = 10;
  private static final int METHODID_GET_DEFINITION = 11;
  private static final int METHODID_COUNT_WORKFLOWS = 12;
  private static final int METHODID_SIGNAL_WITH_START_WORKFLOW = 13;
  private static final int METHODID_RETRY_WORKFLOW = 14;
  private static final int METHODID_RESET_WORKFLOW = 15;
  private static final int METHODID_PAUSE_WORKFLOW = 16;
  private static final int METHODID_UNPAUSE_WORKFLOW = 17;
  private static final int METHODID_MIGRATE_WORKFLOW = 18;

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
        case METHODID_START_WORKFLOW:
          serviceImpl.startWorkflow((dev.statewright.v1.StartWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.StartWorkflowResponse>) responseObserver);
          break;
        case METHODID_RESUME_WORKFLOW:
          serviceImpl.resumeWorkflow((dev.statewright.v1.ResumeWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ResumeWorkflowResponse>) responseObserver);
          break;
        case METHODID_SIGNAL_WORKFLOW:
          serviceImpl.signalWorkflow((dev.statewright.v1.SignalWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.SignalWorkflowResponse>) responseObserver);
          break;
        case METHODID_GET_WORKFLOW:
          serviceImpl.getWorkflow((dev.statewright.v1.GetWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetWorkflowResponse>) responseObserver);
          break;
        case METHODID_LIST_WORKFLOWS:
          serviceImpl.listWorkflows((dev.statewright.v1.ListWorkflowsRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ListWorkflowsResponse>) responseObserver);
          break;
        case METHODID_CANCEL_WORKFLOW:
          serviceImpl.cancelWorkflow((dev.statewright.v1.CancelWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.CancelWorkflowResponse>) responseObserver);
          break;
        case METHODID_DELETE_WORKFLOW:
          serviceImpl.deleteWorkflow((dev.statewright.v1.DeleteWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.DeleteWorkflowResponse>) responseObserver);
          break;
        case METHODID_WATCH_WORKFLOW:
          serviceImpl.watchWorkflow((dev.statewright.v1.WatchWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.WatchWorkflowResponse>) responseObserver);
          break;
        case METHODID_GET_DIAGNOSTICS:
          serviceImpl.getDiagnostics((dev.statewright.v1.GetDiagnosticsRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetDiagnosticsResponse>) responseObserver);
          break;
        case METHODID_GET_WORKFLOW_DIAGNOSTICS:
          serviceImpl.getWorkflowDiagnostics((dev.statewright.v1.GetWorkflowDiagnosticsRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetWorkflowDiagnosticsResponse>) responseObserver);
          break;
        case METHODID_LIST_DEFINITIONS:
          serviceImpl.listDefinitions((dev.statewright.v1.ListDefinitionsRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ListDefinitionsResponse>) responseObserver);
          break;
        case METHODID_GET_DEFINITION:
          serviceImpl.getDefinition((dev.statewright.v1.GetDefinitionRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.GetDefinitionResponse>) responseObserver);
          break;
        case METHODID_COUNT_WORKFLOWS:
          serviceImpl.countWorkflows((dev.statewright.v1.CountWorkflowsRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.CountWorkflowsResponse>) responseObserver);
          break;
        case METHODID_SIGNAL_WITH_START_WORKFLOW:
          serviceImpl.signalWithStartWorkflow((dev.statewright.v1.SignalWithStartWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.SignalWithStartWorkflowResponse>) responseObserver);
          break;
        case METHODID_RETRY_WORKFLOW:
          serviceImpl.retryWorkflow((dev.statewright.v1.RetryWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.RetryWorkflowResponse>) responseObserver);
          break;
        case METHODID_RESET_WORKFLOW:
          serviceImpl.resetWorkflow((dev.statewright.v1.ResetWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.ResetWorkflowResponse>) responseObserver);
          break;
        case METHODID_PAUSE_WORKFLOW:
          serviceImpl.pauseWorkflow((dev.statewright.v1.PauseWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.PauseWorkflowResponse>) responseObserver);
          break;
        case METHODID_UNPAUSE_WORKFLOW:
          serviceImpl.unpauseWorkflow((dev.statewright.v1.UnpauseWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.UnpauseWorkflowResponse>) responseObserver);
          break;
        case METHODID_MIGRATE_WORKFLOW:
          serviceImpl.migrateWorkflow((dev.statewright.v1.MigrateWorkflowRequest) request,
              (io.grpc.stub.StreamObserver<dev.statewright.v1.MigrateWorkflowResponse>) responseObserver);
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
          getStartWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.StartWorkflowRequest,
              dev.statewright.v1.StartWorkflowResponse>(
                service, METHODID_START_WORKFLOW)))
        .addMethod(
          getResumeWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ResumeWorkflowRequest,
              dev.statewright.v1.ResumeWorkflowResponse>(
                service, METHODID_RESUME_WORKFLOW)))
        .addMethod(
          getSignalWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.SignalWorkflowRequest,
              dev.statewright.v1.SignalWorkflowResponse>(
                service, METHODID_SIGNAL_WORKFLOW)))
        .addMethod(
          getGetWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetWorkflowRequest,
              dev.statewright.v1.GetWorkflowResponse>(
                service, METHODID_GET_WORKFLOW)))
        .addMethod(
          getListWorkflowsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ListWorkflowsRequest,
              dev.statewright.v1.ListWorkflowsResponse>(
                service, METHODID_LIST_WORKFLOWS)))
        .addMethod(
          getCancelWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.CancelWorkflowRequest,
              dev.statewright.v1.CancelWorkflowResponse>(
                service, METHODID_CANCEL_WORKFLOW)))
        .addMethod(
          getDeleteWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.DeleteWorkflowRequest,
              dev.statewright.v1.DeleteWorkflowResponse>(
                service, METHODID_DELETE_WORKFLOW)))
        .addMethod(
          getWatchWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              dev.statewright.v1.WatchWorkflowRequest,
              dev.statewright.v1.WatchWorkflowResponse>(
                service, METHODID_WATCH_WORKFLOW)))
        .addMethod(
          getGetDiagnosticsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetDiagnosticsRequest,
              dev.statewright.v1.GetDiagnosticsResponse>(
                service, METHODID_GET_DIAGNOSTICS)))
        .addMethod(
          getGetWorkflowDiagnosticsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetWorkflowDiagnosticsRequest,
              dev.statewright.v1.GetWorkflowDiagnosticsResponse>(
                service, METHODID_GET_WORKFLOW_DIAGNOSTICS)))
        .addMethod(
          getListDefinitionsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ListDefinitionsRequest,
              dev.statewright.v1.ListDefinitionsResponse>(
                service, METHODID_LIST_DEFINITIONS)))
        .addMethod(
          getGetDefinitionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.GetDefinitionRequest,
              dev.statewright.v1.GetDefinitionResponse>(
                service, METHODID_GET_DEFINITION)))
        .addMethod(
          getCountWorkflowsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.CountWorkflowsRequest,
              dev.statewright.v1.CountWorkflowsResponse>(
                service, METHODID_COUNT_WORKFLOWS)))
        .addMethod(
          getSignalWithStartWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.SignalWithStartWorkflowRequest,
              dev.statewright.v1.SignalWithStartWorkflowResponse>(
                service, METHODID_SIGNAL_WITH_START_WORKFLOW)))
        .addMethod(
          getRetryWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.RetryWorkflowRequest,
              dev.statewright.v1.RetryWorkflowResponse>(
                service, METHODID_RETRY_WORKFLOW)))
        .addMethod(
          getResetWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.ResetWorkflowRequest,
              dev.statewright.v1.ResetWorkflowResponse>(
                service, METHODID_RESET_WORKFLOW)))
        .addMethod(
          getPauseWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.PauseWorkflowRequest,
              dev.statewright.v1.PauseWorkflowResponse>(
                service, METHODID_PAUSE_WORKFLOW)))
        .addMethod(
          getUnpauseWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.UnpauseWorkflowRequest,
              dev.statewright.v1.UnpauseWorkflowResponse>(
                service, METHODID_UNPAUSE_WORKFLOW)))
        .addMethod(
          getMigrateWorkflowMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.statewright.v1.MigrateWorkflowRequest,
              dev.statewright.v1.MigrateWorkflowResponse>(
                service, METHODID_MIGRATE_WORKFLOW)))
        .build();
  }

  private static abstract class WorkflowServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    WorkflowServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.statewright.v1.WorkflowServiceOuterClass.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("WorkflowService");
    }
  }

  private static final class WorkflowServiceFileDescriptorSupplier
      extends WorkflowServiceBaseDescriptorSupplier {
    WorkflowServiceFileDescriptorSupplier() {}
  }

  private static final class WorkflowServiceMethodDescriptorSupplier
      extends WorkflowServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    WorkflowServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (WorkflowServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new WorkflowServiceFileDescriptorSupplier())
              .addMethod(getStartWorkflowMethod())
              .addMethod(getResumeWorkflowMethod())
              .addMethod(getSignalWorkflowMethod())
              .addMethod(getGetWorkflowMethod())
              .addMethod(getListWorkflowsMethod())
              .addMethod(getCancelWorkflowMethod())
              .addMethod(getDeleteWorkflowMethod())
              .addMethod(getWatchWorkflowMethod())
              .addMethod(getGetDiagnosticsMethod())
              .addMethod(getGetWorkflowDiagnosticsMethod())
              .addMethod(getListDefinitionsMethod())
              .addMethod(getGetDefinitionMethod())
              .addMethod(getCountWorkflowsMethod())
              .addMethod(getSignalWithStartWorkflowMethod())
              .addMethod(getRetryWorkflowMethod())
              .addMethod(getResetWorkflowMethod())
              .addMethod(getPauseWorkflowMethod())
              .addMethod(getUnpauseWorkflowMethod())
              .addMethod(getMigrateWorkflowMethod())
              .build();
        }
      }
    }
    return result;
  }
}
