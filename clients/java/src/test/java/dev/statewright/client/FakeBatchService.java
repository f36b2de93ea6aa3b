package dev.statewright.client;

import dev.statewright.v1.BatchServiceGrpc;
import dev.statewright.v1.CancelBatchOperationRequest;
import dev.statewright.v1.CancelBatchOperationResponse;
import dev.statewright.v1.GetBatchOperationRequest;
import dev.statewright.v1.GetBatchOperationResponse;
import dev.statewright.v1.ListBatchOperationsRequest;
import dev.statewright.v1.ListBatchOperationsResponse;
import dev.statewright.v1.StartBatchOperationRequest;
import dev.statewright.v1.StartBatchOperationResponse;
import io.grpc.Deadline;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/** A BatchService whose answers each test scripts, served beside {@link FakeService}; records what it received. */
final class FakeBatchService extends BatchServiceGrpc.BatchServiceImplBase {
  final List<Object> requests = new CopyOnWriteArrayList<>();
  final List<Deadline> deadlines = new CopyOnWriteArrayList<>();
  Function<StartBatchOperationRequest, StartBatchOperationResponse> startBatchOperation;
  Function<GetBatchOperationRequest, GetBatchOperationResponse> getBatchOperation;
  Function<ListBatchOperationsRequest, ListBatchOperationsResponse> listBatchOperations;
  Function<CancelBatchOperationRequest, CancelBatchOperationResponse> cancelBatchOperation;

  private <Q, R> void unary(Q request, Function<Q, R> behaviour, StreamObserver<R> observer) {
    FakeService.answer(requests, deadlines, request, behaviour, observer);
  }

  @Override
  public void startBatchOperation(StartBatchOperationRequest request, StreamObserver<StartBatchOperationResponse> observer) {
    unary(request, startBatchOperation, observer);
  }

  @Override
  public void getBatchOperation(GetBatchOperationRequest request, StreamObserver<GetBatchOperationResponse> observer) {
    unary(request, getBatchOperation, observer);
  }

  @Override
  public void listBatchOperations(ListBatchOperationsRequest request, StreamObserver<ListBatchOperationsResponse> observer) {
    unary(request, listBatchOperations, observer);
  }

  @Override
  public void cancelBatchOperation(CancelBatchOperationRequest request, StreamObserver<CancelBatchOperationResponse> observer) {
    unary(request, cancelBatchOperation, observer);
  }
}
