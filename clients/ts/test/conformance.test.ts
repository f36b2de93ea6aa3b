// The conformance runner against conforming and deliberately deviating in-process servers.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { Code } from "@connectrpc/connect";

import { Runner, type Result } from "../conformance/runner.js";
import { Scope, loadScenario, parseScenario, type Scenario } from "../conformance/scenario.js";
import { WorkflowStatus, createStatewrightClient } from "../src/index.js";
import { fakeWorkflowService, serve, statewrightError, type FakeKnobs } from "./fake_server.js";

const sharedScenario = fileURLToPath(new URL("../../../conformance/scenario.yaml", import.meta.url));

async function run(scenario: Scenario, knobs: FakeKnobs = {}): Promise<{ result: Result; out: string }> {
  const served = await serve(fakeWorkflowService(knobs));
  try {
    const lines: string[] = [];
    const runner = new Runner({
      client: createStatewrightClient(served.target),
      runId: "abc123",
      log: (line) => lines.push(line),
      watchTimeoutMs: 5_000,
    });
    const result = await runner.run(scenario);
    return { result, out: lines.join("\n") + "\n" };
  } finally {
    await served.close();
  }
}

test("the shared scenario passes against a conforming server", async () => {
  const scenario = await loadScenario(sharedScenario);
  const { result, out } = await run(scenario);
  assert.equal(result.failure, undefined, out);
  assert.deepEqual([result.passed, result.failed, result.skipped], [scenario.steps.length, 0, 0]);
  for (const want of [
    "PASS stale_resume (ResumeWorkflow): failed as expected with ABORTED, reason REVISION_MISMATCH",
    "PASS watch_mail_completed (AwaitWatch): 2 messages, last STEP COMPLETED at revision 2, ended OK",
    "order-abc123-2 COMPLETED",
    "PASS list_pages (ListWorkflows): 3 workflows over 2 pages",
    "conformance: 13 passed, 0 failed\n",
  ]) {
    assert.ok(out.includes(want), `output lacks ${JSON.stringify(want)}:\n${out}`);
  }
});

async function expectFailure(knobs: FakeKnobs, step: string, ...wants: string[]): Promise<void> {
  const { result, out } = await run(await loadScenario(sharedScenario), knobs);
  assert.ok(result.failure !== undefined, `passed against a deviating server:\n${out}`);
  assert.equal(result.failed, 1);
  assert.ok(out.includes(`FAIL ${step} `), `expected ${step} to fail:\n${out}`);
  for (const want of wants) {
    assert.ok(result.failure.includes(want), `${JSON.stringify(result.failure)} lacks ${JSON.stringify(want)}`);
  }
  if (step !== "diagnostics") {
    assert.ok(out.includes("SKIP diagnostics"), `later steps should be skipped:\n${out}`);
  }
}

test("a wrong ErrorInfo reason fails the step", () =>
  expectFailure({ mismatchReason: "CONFLICT" }, "stale_resume", 'reason: expected "REVISION_MISMATCH", got "CONFLICT"'));

test("a watch that ends with an error fails AwaitWatch", () =>
  expectFailure({ watchEndError: statewrightError(Code.Internal, "BOOM") }, "watch_mail_completed", 'ends: expected "OK", got INTERNAL'));

test("a watch that skips a revision fails AwaitWatch", () =>
  expectFailure({ skipRevision: true }, "watch_mail_completed", "revision 3 follows revision 1", "last: revision: expected 2, got 3"));

test("a workflow listed on two pages fails list_pages", () =>
  expectFailure({ duplicatePage: true }, "list_pages", 'no_duplicates: listed more than once: ["order-abc123-0"]'));

test("a wrong status fails the step", () =>
  expectFailure({ signalStatus: WorkflowStatus.FAILED }, "signal_low_score", 'status: expected "RUNNING", got FAILED'));

test("what the runner does not understand fails loudly", async () => {
  const cases: [string, string][] = [
    [`{version: 1, steps: [{id: d, op: GetDiagnostics, expect: {build_version_set: true, bogus: 1}}]}`, "unsupported expectation key(s) bogus"],
    [`{version: 1, steps: [{id: d, op: Teleport}]}`, 'unsupported op "Teleport"'],
    [`{version: 1, steps: [{id: d, op: GetWorkflow, request: {nam: x}}]}`, "request does not fit statewright.v1.GetWorkflowRequest"],
    [`{version: 1, steps: [{id: d, op: GetDiagnostics, expect: {error: {code: NOT_FOUND}}}]}`, "expected the call to fail, but it succeeded"],
    [`{version: 1, steps: [{id: d, op: GetWorkflow, request: {name: "workflows/\${nobody.id}"}}]}`, 'no earlier step saved "nobody"'],
    [`{version: 1, steps: [{id: d, op: AwaitWatch, watch: w}]}`, 'no WatchWorkflow step "w" ran before'],
  ];
  for (const [yaml, want] of cases) {
    const { result, out } = await run(parseScenario(yaml));
    assert.ok(result.failure?.includes(want), `${JSON.stringify(result.failure)} lacks ${JSON.stringify(want)}`);
    assert.ok(out.includes("conformance: 0 passed, 1 failed\n"), out);
  }
});

test("saved values feed later requests", async () => {
  const scenario = parseScenario(`
version: 1
steps:
  - {id: s, op: StartWorkflow, request: {definition: mail-approval, workflow_id: "m-\${run}"}, save: mail}
  - id: r
    op: ResumeWorkflow
    request: {name: "\${mail.name}", event: approve, expected_revision: "\${mail.revision}"}
    expect: {status: COMPLETED, revision: 2}
`);
  const { result, out } = await run(scenario);
  assert.equal(result.failure, undefined, out);
  assert.equal(result.passed, 2);
});

test("parseScenario is strict", () => {
  const cases: [string, RegExp][] = [
    [`{version: 1, steps: [{id: a, op: GetDiagnostics, expct: {}}]}`, /unknown key "expct"/],
    [`{version: 2, steps: [{id: a, op: GetDiagnostics}]}`, /unsupported version 2/],
    [`{version: 1, steps: [{id: a, op: X}, {id: a, op: Y}]}`, /duplicate id "a"/],
    [`{version: 1, steps: [{id: a}]}`, /id and op are required/],
    [`{version: 1}`, /no steps/],
    [`{version: 1, steps: [{id: a, op: X, repeat: 0}]}`, /repeat must be a positive integer/],
  ];
  for (const [yaml, want] of cases) {
    assert.throws(() => parseScenario(yaml), want);
  }
});

test("Scope expands variables and saved values", () => {
  const scope = new Scope();
  scope.vars.set("run", "r1");
  scope.vars.set("i", 2);
  scope.saved.set("mail", { workflow: { revision: "1", accepted_events: ["approve"] }, created: true });
  assert.deepEqual(
    scope.expand({
      id: "order-${run}-${i}",
      rev: "${mail.revision}",
      created: "${mail.created}",
      event: "${mail.accepted_events.0}",
      list: ["${i}", 3.5],
    }),
    { id: "order-r1-2", rev: "1", created: true, event: "approve", list: [2, 3.5] },
  );
  for (const bad of ["${nope}", "x-${mail.missing}", "${other.x}"]) {
    assert.throws(() => scope.expand(bad));
  }
});
