package dev.statewright.client.example;

import dev.statewright.client.StatewrightClient;
import dev.statewright.client.TaskFailure;
import dev.statewright.client.Worker;
import java.util.Map;

/**
 * Serves the {@code payments} queue until interrupted: charges an order, and declines (for good: no
 * retry) an amount of 1000 or more.
 *
 * <p>Run against {@code $STATEWRIGHT_ADDRESS} (default 127.0.0.1:50051), with TLS and a token when
 * {@code STATEWRIGHT_TLS_CA} and {@code STATEWRIGHT_TOKEN} say so. Ctrl-C or SIGTERM closes the
 * worker gracefully.
 */
public final class PaymentsWorker {
  private PaymentsWorker() {}

  public static void main(String[] args) {
    try (StatewrightClient client = StatewrightClient.fromEnvironment()) {
      Worker worker = Worker.builder(client)
          .concurrency(8)
          .register("payments", task -> {
            Map<String, Object> input = task.input();
            Number amount = (Number) input.getOrDefault("amount", 0L);
            if (amount.doubleValue() >= 1000) {
              throw TaskFailure.nonRetryable("CARD_DECLINED", "amount " + amount + " is over the limit");
            }
            return Map.of("id", "ch-" + input.get("order"));
          })
          .build();
      // Stop polling, let running charges finish (20 s by default), release the rest.
      Runtime.getRuntime().addShutdownHook(new Thread(worker::close));
      worker.run(); // returns once the worker has closed
    }
  }
}
