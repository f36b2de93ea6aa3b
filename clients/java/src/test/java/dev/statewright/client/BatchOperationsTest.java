package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.v1.BatchOperation;
import dev.statewright.v1.BatchRetry;
import dev.statewright.v1.BatchState;
import dev.statewright.v1.CancelBatchOperationRequest;
import dev.statewright.v1.GetBatchOperationRequest;
import dev.statewright.v1.GetBatchOperationResponse;
import dev.statewright.v1.ListBatchOperationsRequest;
import dev.statewright.v1.ListBatchOperationsResponse;
import dev.statewright.v1.StartBatchOperationRequest;
import dev.statewright.v1.StartBatchOperationResponse;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class BatchOperationsTest {
  private FakeService fake;
  private StatewrightClient client;

  @BeforeEach
  void setUp() throws Exception {
    fake = new FakeService();
    client = new StatewrightClient(fake.channel);
  }

  @AfterEach
  void tearDown() {
    client.close();
    fake.close();
  }

  private static BatchOperation batch(BatchState state, long done, long failed) {
    return BatchOperation.newBuilder().setName("batches/b1").setState(state).setMatched(4).setDone(done).setFailed(failed).build();
  }

  @Test
  void startMakesABatchIdOnlyWhenNoneIsGivenAndItIsNoDryRun() {
    fake.batches.startBatchOperation =
        request ->
            StartBatchOperationResponse.newBuilder()
                .setBatch(BatchOperation.newBuilder().setName(request.getDryRun() ? "" : "batches/" + request.getBatchId()).setMatched(2))
                .addSample("workflows/a")
                .build();
    StartBatchOperationRequest request =
        StartBatchOperationRequest.newBuilder().setFilter("status = FAILED").setIdPrefix("order-").setRetry(BatchRetry.getDefaultInstance()).setReason("bank is back").build();
    StartBatchOperationResponse made = client.startBatchOperation(request);
    StartBatchOperationResponse given = client.startBatchOperation(request.toBuilder().setBatchId("b-7").build());
    StartBatchOperationResponse dry = client.startBatchOperation(request.toBuilder().setDryRun(true).build());

    StartBatchOperationRequest first = (StartBatchOperationRequest) fake.batches.requests.get(0);
    assertEquals(36, first.getBatchId().length());
    assertEquals("batches/" + first.getBatchId(), made.getBatch().getName());
    assertTrue(first.hasRetry());
    assertEquals("status = FAILED", first.getFilter());
    assertEquals("order-", first.getIdPrefix());
    assertEquals("batches/b-7", given.getBatch().getName());
    assertEquals("", ((StartBatchOperationRequest) fake.batches.requests.get(2)).getBatchId());
    assertEquals("", dry.getBatch().getName());
    assertEquals(List.of("workflows/a"), dry.getSampleList());
    // The service config's write deadline (30 s) applies.
    long left = fake.batches.deadlines.get(0).timeRemaining(TimeUnit.SECONDS);
    assertTrue(left > 20 && left <= 30, "deadline " + left + " s");
  }

  @Test
  void waitReportsEachChangeUntilTheBatchEnds() throws InterruptedException {
    List<BatchOperation> answers =
        List.of(
            batch(BatchState.BATCH_STATE_RUNNING, 1, 0),
            batch(BatchState.BATCH_STATE_RUNNING, 1, 0),
            batch(BatchState.BATCH_STATE_RUNNING, 3, 0),
            batch(BatchState.BATCH_STATE_COMPLETED, 3, 1));
    AtomicInteger reads = new AtomicInteger();
    fake.batches.getBatchOperation =
        request -> GetBatchOperationResponse.newBuilder().setBatch(answers.get(Math.min(reads.getAndIncrement(), answers.size() - 1))).build();
    List<String> seen = new ArrayList<>();
    BatchOperation ended =
        client.waitBatchOperation("b1", Duration.ofMillis(1), b -> seen.add(b.getState() + " " + b.getDone() + "/" + b.getFailed()));
    assertEquals(
        List.of("BATCH_STATE_RUNNING 1/0", "BATCH_STATE_RUNNING 3/0", "BATCH_STATE_COMPLETED 3/1"), seen);
    assertTrue(StatewrightClient.batchFinished(ended));
    assertEquals(4, reads.get());
    assertEquals("batches/b1", ((GetBatchOperationRequest) fake.batches.requests.get(0)).getName());
    assertThrows(IllegalArgumentException.class, () -> client.waitBatchOperation("b1", Duration.ZERO, null));
  }

  @Test
  void listFollowsEveryPageAndCancelRefusalsAreTyped() {
    fake.batches.listBatchOperations =
        request ->
            request.getPageToken().isEmpty()
                ? ListBatchOperationsResponse.newBuilder().addBatches(batch(request.getState(), 4, 0)).setNextPageToken("n").build()
                : ListBatchOperationsResponse.newBuilder().addBatches(batch(request.getState(), 2, 2)).build();
    List<BatchOperation> listed = client.listBatchOperations(BatchState.BATCH_STATE_COMPLETED);
    assertEquals(2, listed.size());
    assertEquals(BatchState.BATCH_STATE_COMPLETED, ((ListBatchOperationsRequest) fake.batches.requests.get(1)).getState());
    assertEquals("n", ((ListBatchOperationsRequest) fake.batches.requests.get(1)).getPageToken());

    fake.batches.cancelBatchOperation =
        request -> {
          throw FakeService.error(Status.Code.FAILED_PRECONDITION, "BATCH_FINISHED", Map.of("batch_id", "b1"));
        };
    StatewrightException refused = assertThrows(StatewrightException.class, () -> client.cancelBatchOperation("b1", "late"));
    assertTrue(refused.isReason("BATCH_FINISHED"));
    CancelBatchOperationRequest sent = (CancelBatchOperationRequest) fake.batches.requests.get(2);
    assertEquals("batches/b1", sent.getName());
    assertEquals("late", sent.getReason());
  }

  @Test
  void theReadmesBatchExampleIsRetryFailedsBody() throws IOException {
    // Surefire runs in clients/java: the README's Java block of the section is the example's
    // main body, re-indented, so the README shows code that compiles.
    String readme = Files.readString(Path.of("README.md"), StandardCharsets.UTF_8);
    String section = readme.substring(readme.indexOf("\n## Batch operations\n"));
    section = section.substring(0, section.indexOf("\n## ", 1));
    int open = section.indexOf("```java\n") + "```java\n".length();
    String block = section.substring(open, section.indexOf("```\n", open));
    String source =
        Files.readString(Path.of("src/main/java/dev/statewright/client/example/RetryFailed.java"), StandardCharsets.UTF_8);
    String indented = block.replaceAll("(?m)^(?=.)", "    ");
    assertTrue(source.contains(indented), "README's batch example is not RetryFailed's body:\n" + indented);
  }
}
