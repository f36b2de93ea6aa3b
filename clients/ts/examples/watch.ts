// Follows one instance to its end, printing each revision once, across dropped connections
// and server restarts; Ctrl-C stops it. From the repository root:
//   make example-ts-watch WORKFLOW_ID=ID
import {
  createStatewrightClientFromEnv,
  codeName,
  errorReason,
  Code,
  ConnectError,
  WatchEventType,
  WorkflowStatus,
} from "@statewright/client";

const [address, workflowId = "order-1"] = process.argv.slice(2);
const client = createStatewrightClientFromEnv({ address });
const stop = new AbortController();
process.once("SIGINT", () => stop.abort());

try {
  for await (const m of client.watch(workflowId, { signal: stop.signal })) {
    const wf = m.workflow!;
    console.log(`${WatchEventType[m.type]} ${m.revision}: ${WorkflowStatus[wf.status]} in ${wf.state} ${m.event}`);
  }
} catch (err) {
  // The abort ends the watch with CANCELED; anything else is why it could not go on.
  const failure = ConnectError.from(err);
  if (failure.code !== Code.Canceled) {
    console.error(`watch failed: ${codeName(failure.code)} ${errorReason(err) ?? ""}: ${failure.rawMessage}`);
    process.exitCode = 1;
  }
}
