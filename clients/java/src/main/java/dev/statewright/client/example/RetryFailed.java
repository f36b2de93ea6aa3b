package dev.statewright.client.example;

import dev.statewright.client.StatewrightClient;
import dev.statewright.v1.BatchItemFailure;
import dev.statewright.v1.BatchOperation;
import dev.statewright.v1.BatchRetry;
import dev.statewright.v1.GetBatchOperationRequest;
import dev.statewright.v1.StartBatchOperationRequest;
import java.time.Duration;

/**
 * Retries every FAILED instance of a definition (the first argument; default order-fulfilment) as
 * one durable batch on the server, prints its progress until it ends, then the instances it could
 * not retry.
 *
 * <p>Run against {@code $STATEWRIGHT_ADDRESS} like {@link MailApproval}; starting the batch needs
 * the {@code operator} role.
 */
public final class RetryFailed {
  private RetryFailed() {}

  public static void main(String[] args) throws InterruptedException {
    String definition = args.length > 0 ? args[0] : "order-fulfilment";
    try (StatewrightClient client = StatewrightClient.fromEnvironment()) {
      BatchOperation started =
          client
              .startBatchOperation(
                  StartBatchOperationRequest.newBuilder()
                      .setDefinition(definition)
                      .setFilter("status = FAILED")
                      .setRetry(BatchRetry.getDefaultInstance())
                      .setReason("the payments API is back")
                      .setRate(20) // instances a second
                      .build())
              .getBatch();
      BatchOperation ended =
          client.waitBatchOperation(
              started.getName(),
              Duration.ofSeconds(1),
              b -> System.out.println(b.getState() + ": " + b.getDone() + " of " + b.getMatched() + " done, " + b.getFailed() + " failed"));
      GetBatchOperationRequest failures = GetBatchOperationRequest.newBuilder().setName(ended.getName()).build();
      for (BatchItemFailure f : client.getBatchOperation(failures).getFailuresList()) {
        System.out.println(f.getWorkflow() + ": " + f.getCode() + " " + f.getReason() + ": " + f.getMessage());
      }
    }
  }
}
