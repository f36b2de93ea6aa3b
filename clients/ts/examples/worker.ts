// Works the `payments` queue: charges an order, or declines amounts of 1000 and more for
// good; Ctrl-C shuts it down gracefully.
//   node dist/examples/worker.js 127.0.0.1:50051
import { setTimeout as sleep } from "node:timers/promises";

import { createStatewrightClientFromEnv, TaskFailure, Worker } from "@statewright/client";

const client = createStatewrightClientFromEnv({ address: process.argv[2] });
const worker = new Worker(client, { concurrency: 8 });

worker.register("payments", async (task, { signal }) => {
  const { order, amount } = task.input;
  if (typeof amount === "number" && amount >= 1000) {
    // Non-retryable: the state's task_failed transition (or the instance) gets it at once.
    throw new TaskFailure("CARD_DECLINED", `amount ${amount} is over the card's limit`, {
      details: { amount },
      nonRetryable: true,
    });
  }
  await sleep(100, undefined, { signal }); // the card network; a cancelled task stops here
  console.log(`charged ${order} (attempt ${task.attempt})`);
  return { id: "ch-" + order };
});

const stop = new AbortController();
process.once("SIGINT", () => stop.abort());
process.once("SIGTERM", () => stop.abort());
await worker.run({ signal: stop.signal });
