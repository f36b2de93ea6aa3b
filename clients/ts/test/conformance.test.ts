// The conformance runner against conforming and deliberately deviating in-process servers.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { Code } from "@connectrpc/connect";

import { subsetMismatches } from "../conformance/expect.js";
import { Runner, type Result } from "../conformance/runner.js";
import { Scope, expandInput, loadScenario, parseScenario, type Scenario } from "../conformance/scenario.js";
import { TaskStatus, WorkflowStatus, createStatewrightClient } from "../src/index.js";
import { FakeTaskService, fakeWorkflowService, serve, statewrightError, type FakeKnobs } from "./fake_server.js";

const sharedScenario = fileURLToPath(new URL("../../../conformance/scenario.yaml", import.meta.url));

async function run(scenario: Scenario, knobs: FakeKnobs = {}): Promise<{ result: Result; out: string }> {
  const tasks = new FakeTaskService();
  const served = await serve(fakeWorkflowService(knobs, tasks), tasks.impl);
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
    "PASS start_order (StartWorkflow): ful-abc123 RUNNING in charging at revision 1, pending task charging/payments SCHEDULED attempt 0",
    "PASS work_order (RunWorker): worked payments ×2, shipping ×1; ful-abc123 COMPLETED in refunded at revision 4; 3 tasks: " +
      "charging/payments COMPLETED attempt 1, shipping/shipping FAILED attempt 1, refunding/payments COMPLETED attempt 1",
    "conformance: 16 passed, 0 failed\n",
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

test("a pending task with another status fails start_order", () =>
  expectFailure({ pendingTaskStatus: TaskStatus.LEASED }, "start_order", 'pending_task: status: expected "SCHEDULED", got LEASED'));

test("a context that differs inside a nested map fails work_order", () =>
  expectFailure({ failureAttempts: 2 }, "work_order", "context.failure.attempts: expected 1, got 2"));

/** An order-fulfilment instance worked by RunWorker with these lines spliced into the step. */
function orderScenario(worker: string): Scenario {
  return parseScenario(`
version: 1
steps:
  - {id: start, op: StartWorkflow, request: {definition: order-fulfilment, workflow_id: "o-\${run}", input: {items: [book], price: 3}}}
  - id: work
    op: RunWorker
    until: {name: "workflows/o-\${run}"}
${worker}
`);
}

const charge = `      payments: {result: {id: "ch-\${input.order}"}}`;
const shipFails = `      shipping: {fail: {type: CARRIER_DOWN, message: "down in \${run}", non_retryable: true}}`;

async function runFailing(scenario: Scenario, ...wants: string[]): Promise<void> {
  const { result, out } = await run(scenario);
  assert.ok(result.failure !== undefined, `passed:\n${out}`);
  for (const want of wants) {
    assert.ok(result.failure.includes(want), `${JSON.stringify(result.failure)} lacks ${JSON.stringify(want)}`);
  }
}

test("RunWorker substitutes the task input and the run id, and matches the context as a subset", async () => {
  const { result, out } = await run(
    orderScenario(`    timeout: 20s
    handlers:
${charge}
${shipFails}
    expect:
      status: COMPLETED
      state: refunded
      context: {charge_id: ch-o-abc123, refund_id: ch-o-abc123, failure: {message: down in abc123}, items: [book]}
`),
  );
  assert.equal(result.failure, undefined, out);
  assert.ok(out.includes("PASS work (RunWorker): worked payments ×2, shipping ×1; o-abc123 COMPLETED in refunded"), out);
});

test("RunWorker fails on the tasks' number, their fields, and missing context keys", async () => {
  await runFailing(
    orderScenario(`    timeout: 20s
    handlers:
${charge}
${shipFails}
    expect:
      context: {charge_id: ch-o-abc123, nope: 1}
      tasks:
        - {state: charging, queue: payments, status: COMPLETED, attempt: 1}
        - {state: shipping, queue: shipping, status: COMPLETED, attempt: 1}
`),
    "context.nope: missing",
    'tasks[1]: status: expected "COMPLETED", got FAILED',
    "tasks: expected 2 tasks, ListTasks gave 3: charging/payments COMPLETED attempt 1, shipping/shipping FAILED attempt 1, refunding/payments COMPLETED attempt 1",
  );
});

test("RunWorker fails when a result refers to what the task input lacks", () =>
  runFailing(
    orderScenario(`    timeout: 20s
    handlers:
      payments: {result: {id: "\${input.nope}"}}
    expect: {status: COMPLETED}
`),
    "handlers.payments: workflows/o-abc123/tasks/",
    "${input.nope}: the task input has no field nope (it has: amount, order)",
  ));

test("RunWorker fails when the instance does not end in time", async () => {
  const scenario = parseScenario(`
version: 1
steps:
  - {id: start, op: StartWorkflow, request: {definition: mail-approval, workflow_id: "m-\${run}"}}
  - {id: work, op: RunWorker, until: {name: "workflows/m-\${run}"}, timeout: 300ms, handlers: {payments: {result: {}}}}
`);
  await runFailing(scenario, "workflows/m-abc123 did not end within 300 ms: still m-abc123 WAITING in awaiting_approval at revision 1", "(worked no tasks)");
});

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
    [`{version: 1, steps: [{id: a, op: GetWorkflow, timeout: 1s}]}`, /timeout only belong to RunWorker steps/],
    [`{version: 1, steps: [{id: a, op: RunWorker, until: {name: w}, timeout: 1s}]}`, /handlers must be a map of at least one queue/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}}}, timeout: 1s}]}`, /until must be a map with just a name/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}}}, until: {name: w}}]}`, /timeout must be a positive duration/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}}}, until: {name: w}, timeout: soon}]}`, /not "soon"/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}, fail: {type: X}}}, until: {name: w}, timeout: 1s}]}`, /exactly one of result or fail/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {retry: {}}}, until: {name: w}, timeout: 1s}]}`, /handlers.q: unknown key "retry"/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {fail: {message: m}}}, until: {name: w}, timeout: 1s}]}`, /type is a required string/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {fail: {type: X, retry: 1}}}, until: {name: w}, timeout: 1s}]}`, /fail: unknown key "retry"/],
    [`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {fail: {type: X, non_retryable: yes}}}, until: {name: w}, timeout: 1s}]}`, /non_retryable must be a boolean/],
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

test("parseScenario reads RunWorker's handlers, until and timeout", () => {
  const [step] = parseScenario(`
version: 1
steps:
  - id: w
    op: RunWorker
    handlers:
      payments: {result: {id: "ch-\${input.order}"}}
      shipping: {fail: {type: CARRIER_DOWN, message: no carrier today, non_retryable: true}}
      other: {fail: {type: X}}
    until: {name: "workflows/ful-\${run}"}
    timeout: 1.5s
`).steps;
  assert.deepEqual(step?.until, { name: "workflows/ful-${run}" });
  assert.equal(step?.timeoutMs, 1500);
  assert.deepEqual(
    [...(step?.handlers ?? [])],
    [
      ["payments", { result: { id: "ch-${input.order}" } }],
      ["shipping", { fail: { type: "CARRIER_DOWN", message: "no carrier today", nonRetryable: true } }],
      ["other", { fail: { type: "X", message: "", nonRetryable: false } }],
    ],
  );
  for (const [timeout, ms] of [["250ms", 250], ["60s", 60_000], ["2m", 120_000]] as const) {
    const parsed = parseScenario(`{version: 1, steps: [{id: w, op: RunWorker, handlers: {q: {result: {}}}, until: {name: n}, timeout: ${timeout}}]}`);
    assert.equal(parsed.steps[0]?.timeoutMs, ms);
  }
});

test("Scope leaves deferred references for expandInput, which fills them from the task input", () => {
  const scope = new Scope();
  scope.vars.set("run", "r1");
  const result = scope.expand(
    { id: "ch-${input.order}-${run}", amount: "${input.amount}", deep: "${input.ship.to}", all: "${input}", list: ["${input.order}"] },
    new Set(["input"]),
  );
  assert.deepEqual(result, {
    id: "ch-${input.order}-r1",
    amount: "${input.amount}",
    deep: "${input.ship.to}",
    all: "${input}",
    list: ["${input.order}"],
  });
  const input = { order: "ful-1", amount: 25, ship: { to: "Oslo" } };
  assert.deepEqual(expandInput(result, input), {
    id: "ch-ful-1-r1",
    amount: 25,
    deep: "Oslo",
    all: input,
    list: ["ful-1"],
  });
  // Only the names given are deferred; the others still have to resolve.
  assert.throws(() => scope.expand("${input.order}"), /no earlier step saved "input"/);
  assert.throws(() => expandInput("${input.nope}", input), /the task input has no field nope \(it has: amount, order, ship\)/);
  assert.throws(() => expandInput("${input.order.x}", input), /no field order.x/);
  assert.throws(() => expandInput("${run}", input), /only \$\{input.KEY\} is resolved from the task/);
});

test("subsetMismatches: the keys given, recursively into maps; other values equal", () => {
  const got = { charge_id: "ch-1", failure: { type: "X", attempts: 1, details: {} }, items: ["a", "b"], log: [] };
  assert.deepEqual(subsetMismatches({}, got, "context"), []);
  assert.deepEqual(subsetMismatches({ charge_id: "ch-1", failure: { attempts: 1 }, items: ["a", "b"] }, got, "context"), []);
  assert.deepEqual(subsetMismatches({ failure: { attempts: 2, message: "m" }, items: ["a"], extra: null }, got, "context"), [
    "context.failure.attempts: expected 2, got 1",
    "context.failure.message: missing",
    'context.items: expected ["a"], got ["a","b"]',
    "context.extra: missing",
  ]);
  assert.deepEqual(subsetMismatches({ charge_id: { id: "ch-1" } }, got, "context"), [
    'context.charge_id: expected a map with ["id"], got "ch-1"',
  ]);
  assert.deepEqual(subsetMismatches({ a: 1 }, undefined, "context"), ['context: expected a map with ["a"], got undefined']);
  // A number is not its string, and null is a value of its own.
  assert.deepEqual(subsetMismatches({ n: "1", z: null }, { n: 1, z: 0 }, "c"), ['c.n: expected "1", got 1', "c.z: expected null, got 0"]);
});
