// Starts a mail-approval workflow, which halts WAITING for a person's decision, then
// resumes it with "approve" at the revision it read, as a person's approval would.
// From the repository root:
//   make example-ts
import {
  createStatewrightClientFromEnv,
  errorInfo,
  errorReason,
  ConnectError,
  WorkflowStatus,
} from "@statewright/client";

const client = createStatewrightClientFromEnv({ address: process.argv[2] });

// Start: the instance runs its first step and halts in the wait state.
const started = await client.startWorkflow({
  definition: "mail-approval",
  input: { topic: "quarterly report" },
});
let wf = started.workflow!;
console.log(
  `started ${wf.name}: ${WorkflowStatus[wf.status]} in ${wf.state} at revision ${wf.revision}, ` +
    `accepts ${wf.acceptedEvents.join(", ")}`,
);

// Resume, later: fire the decision, but only if nobody moved the instance meanwhile.
try {
  const resumed = await client.resumeWorkflow({
    name: wf.name,
    event: "approve",
    expectedRevision: wf.revision,
  });
  wf = resumed.workflow!;
} catch (err) {
  const info = errorInfo(err);
  if (info?.reason === "REVISION_MISMATCH") {
    throw new Error(`someone else moved ${wf.name} first: it is at revision ${info.metadata["actual_revision"]} now`);
  }
  throw new Error(`resume failed: ${ConnectError.from(err).message} (reason ${errorReason(err)})`);
}
console.log(`resumed ${wf.name}: ${WorkflowStatus[wf.status]} at revision ${wf.revision}, sent=${wf.context?.["sent"]}`);
