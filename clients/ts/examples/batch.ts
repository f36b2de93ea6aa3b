// Retries every FAILED instance of a definition as one durable batch on the server, and
// follows it to its end. From clients/ts, after the build:
//   node dist/examples/batch.js 127.0.0.1:50051 order-fulfilment
import { BatchState, createStatewrightClientFromEnv } from "@statewright/client";

const client = createStatewrightClientFromEnv({ address: process.argv[2] });

// The instances are matched once, now; each one's retry has this reason in its history.
const started = await client.startBatchOperation({
  definition: process.argv[3] ?? "order-fulfilment",
  filter: "status = FAILED",
  operation: { case: "retry", value: {} },
  reason: "the payments API is back",
  rate: 20, // instances a second
});
const ended = await client.waitBatchOperation(started.batch!.name, {
  onProgress: (b) => console.log(`${BatchState[b.state]}: ${b.done} of ${b.matched} done, ${b.failed} failed`),
});
// The instances it could not retry, each with the refusal the single call would have had.
const { failures } = await client.getBatchOperation({ name: ended.name });
for (const f of failures) {
  console.log(`${f.workflow}: ${f.code} ${f.reason}: ${f.message}`);
}
