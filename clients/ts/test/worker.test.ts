// The task worker over a real HTTP/2 gRPC connection to the in-process FakeTaskService.
// Every wait is on an observed call or state (fake.until), never on a clock.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { test, type TestContext } from "node:test";

import { Code } from "@connectrpc/connect";

import {
  ConnectError,
  TaskAbortError,
  TaskFailure,
  Worker,
  TaskStatus,
  createStatewrightClient,
  type JsonObject,
  type TaskHandler,
  type WorkerOptions,
  type WorkerTask,
} from "../src/index.js";
import { Backoff, errorType } from "../src/worker.js";
import { FakeTaskService, rateLimited, serve, statewrightError } from "./fake_server.js";

// A worker that fails to stop would otherwise hang the run.
const limit = { timeout: 20_000 };

/** A served fake, a worker on it with fast backoff and a recording logger, and its stop. */
async function setup(t: TestContext, options: WorkerOptions = {}) {
  const fake = new FakeTaskService();
  const served = await serve({}, fake.impl);
  t.after(() => served.close());
  // No transport retries: the worker's own backoff is what these tests look at.
  const client = createStatewrightClient(served.target, { serviceConfig: {} });
  const logs: string[] = [];
  const worker = new Worker(client, {
    initialBackoffMs: 1,
    maxBackoffMs: 8,
    logger: {
      warn: (m) => logs.push(`warn: ${m}`),
      error: (m) => logs.push(`error: ${m}`),
      debug: (m) => logs.push(`debug: ${m}`),
    },
    ...options,
  });
  const stop = new AbortController();
  // A failing assertion must not leave the worker polling.
  t.after(() => stop.abort());
  return { fake, served, client, worker, stop, logs, run: () => worker.run({ signal: stop.signal }) };
}

/** A promise with its resolve, for handlers that wait on the test. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Resolves with the signal's reason once it aborts. */
function aborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    signal.addEventListener("abort", () => resolve(signal.reason), { once: true });
  });
}

test("a handler's result completes the task, with a request id stable for the attempt", limit, async (t) => {
  const { fake, worker, stop, run, logs } = await setup(t, { concurrency: 4 });
  const seen: WorkerTask[] = [];
  worker.register("payments", async (task) => {
    seen.push(task);
    return { id: "ch-" + task.input["order"], amount: task.input["amount"] ?? null };
  });
  const name = fake.schedule("payments", { order: "o-1", amount: 12.5 });
  const running = run();
  await fake.until(() => fake.completions.length === 1, "the completion");
  stop.abort();
  await running;

  assert.equal(seen.length, 1);
  assert.deepEqual(
    { name: seen[0]?.name, workflow: seen[0]?.workflow, queue: seen[0]?.queue, attempt: seen[0]?.attempt, input: seen[0]?.input },
    { name, workflow: fake.task(name).workflow, queue: "payments", attempt: 1, input: { order: "o-1", amount: 12.5 } },
  );
  const completion = fake.completions[0]!;
  assert.equal(completion.name, name);
  assert.equal(completion.leaseToken !== "", true);
  assert.deepEqual(completion.result, { id: "ch-o-1", amount: 12.5 });
  assert.equal(completion.requestId, `${name}#1#complete`);
  assert.equal(fake.task(name).status, TaskStatus.COMPLETED);
  assert.equal(fake.failures.length, 0);

  const poll = fake.polls[0]!;
  assert.equal(poll.queue, "payments");
  assert.equal(poll.identity, `${process.pid}@${hostname()}`);
  assert.equal(poll.maxTasks, 4);
  assert.equal(poll.wait?.seconds, 20n);
  assert.equal(poll.maxBytes, 4 * 1024 * 1024, "the client's receive limit");
  assert.deepEqual(logs, []);
});

test("a TaskFailure fails the attempt with its type, message, details, non_retryable and retry delay", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t);
  worker.register("payments", (task) => {
    throw new TaskFailure("CARD_DECLINED", `amount ${task.input["amount"]} is over the limit`, {
      details: { limit: 1000, codes: ["51"] },
      nonRetryable: true,
      retryDelayMs: 1500,
      closeKeyUntil: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)),
    });
  });
  const name = fake.schedule("payments", { amount: 1200 });
  const running = run();
  await fake.until(() => fake.failures.length === 1, "the failure");
  stop.abort();
  await running;

  const failure = fake.failures[0]!;
  assert.equal(failure.name, name);
  assert.equal(failure.requestId, `${name}#1#fail`);
  assert.deepEqual(
    { type: failure.error?.type, message: failure.error?.message, details: failure.error?.details },
    { type: "CARD_DECLINED", message: "amount 1200 is over the limit", details: { limit: 1000, codes: ["51"] } },
  );
  assert.equal(failure.nonRetryable, true);
  assert.deepEqual([failure.retryDelay?.seconds, failure.retryDelay?.nanos], [1n, 500_000_000]);
  assert.equal(failure.closeKeyUntil?.seconds, BigInt(Date.UTC(2030, 0, 2, 3, 4, 5) / 1000));
  assert.equal(fake.task(name).status, TaskStatus.FAILED);
  assert.equal(fake.completions.length, 0);
});

test("any other error fails the attempt as retryable, typed by the error's name or class", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t);
  class QuotaExceeded extends Error {}
  class RateLimited extends Error {
    override name = "RATE_LIMITED";
  }
  worker.register("payments", async (task) => {
    switch (task.input["kind"]) {
      case "type":
        throw new TypeError("order is not a string");
      case "class":
        throw new QuotaExceeded("no quota left");
      case "named":
        throw new RateLimited("slow down");
      case "value":
        throw "a string";
      default:
        // Not JSON: refused before it is sent, as a TypeError of the handler's.
        return { when: new Date(0) } as unknown as JsonObject;
    }
  });
  const names = ["type", "class", "named", "value", "result"].map((kind) => fake.schedule("payments", { kind }));
  const running = run();
  await fake.until(() => fake.failures.length === names.length, "five failures");
  stop.abort();
  await running;

  const byName = new Map(fake.failures.map((f) => [f.name, f]));
  assert.deepEqual(
    names.map((n) => [byName.get(n)?.error?.type, byName.get(n)?.nonRetryable, byName.get(n)?.retryDelay]),
    [
      ["TypeError", false, undefined],
      ["QuotaExceeded", false, undefined],
      ["RATE_LIMITED", false, undefined],
      ["Error", false, undefined],
      ["TypeError", false, undefined],
    ],
  );
  assert.equal(byName.get(names[0]!)?.error?.message, "order is not a string");
  assert.equal(byName.get(names[3]!)?.error?.message, "a string");
  assert.match(byName.get(names[4]!)?.error?.message ?? "", /result is not a JSON object: a Date at when/);
  assert.equal(fake.completions.length, 0);
});

test("heartbeats go out on their own for a short first lease and carry the latest details", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t);
  fake.leaseMs = 900;
  fake.extendMs = 900;
  worker.register("payments", async (_task, { heartbeat }) => {
    heartbeat({ step: 1 });
    await fake.until(() => fake.heartbeats.length >= 1, "a first heartbeat");
    heartbeat({ step: 2 });
    await fake.until(() => fake.heartbeats.length >= 3, "three heartbeats");
    return { done: true };
  });
  const name = fake.schedule("payments");
  const running = run();
  await fake.until(() => fake.completions.length === 1, "the completion");
  stop.abort();
  await running;

  const token = fake.completions[0]!.leaseToken;
  assert.ok(fake.heartbeats.every((h) => h.name === name && h.leaseToken === token));
  assert.deepEqual(fake.heartbeats[0]?.details, { step: 1 });
  assert.deepEqual(fake.heartbeats.at(-1)?.details, { step: 2 });
  assert.deepEqual(fake.task(name).heartbeatDetails, { step: 2 });
  assert.equal(fake.task(name).status, TaskStatus.COMPLETED);
});

test("the lease a heartbeat extends is the one the worker goes by", limit, async (t) => {
  // The first lease has already run out when the task arrives, and only the heartbeat's
  // extension lets the worker go on retrying its completion through UNAVAILABLE.
  const { fake, worker, stop, run } = await setup(t);
  fake.leaseMs = -60_000;
  fake.extendMs = 60_000;
  fake.errors.complete.push(statewrightError(Code.Unavailable, "SHUTTING_DOWN"), new ConnectError("reset", Code.Unavailable));
  worker.register("payments", async () => {
    await fake.until(() => fake.heartbeats.length >= 1, "the heartbeat");
    return {};
  });
  const name = fake.schedule("payments");
  const running = run();
  await fake.until(() => fake.task(name).status === TaskStatus.COMPLETED, "the completion");
  stop.abort();
  await running;

  assert.equal(fake.completions.length, 3);
  assert.deepEqual(new Set(fake.completions.map((c) => c.requestId)), new Set([`${name}#1#complete`]));
});

test("a report whose outcome the server lost is sent again with the same request id", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t);
  fake.errors.complete.push(statewrightError(Code.Unknown, "OUTCOME_UNKNOWN"));
  worker.register("payments", () => ({}));
  const name = fake.schedule("payments");
  const running = run();
  await fake.until(() => fake.task(name).status === TaskStatus.COMPLETED, "the completion");
  stop.abort();
  await running;
  assert.equal(fake.completions.length, 2);
  assert.deepEqual(new Set(fake.completions.map((c) => c.requestId)), new Set([`${name}#1#complete`]));
});

test("a completion whose lease has run out is not retried", limit, async (t) => {
  const { fake, worker, stop, run, logs } = await setup(t);
  fake.leaseMs = -60_000;
  fake.errors.complete.push(new ConnectError("reset", Code.Unavailable));
  worker.register("payments", () => ({}));
  fake.schedule("payments");
  const running = run();
  await fake.until(() => logs.some((l) => l.includes("lease expired before the report")), "the warning");
  stop.abort();
  await running;
  assert.equal(fake.completions.length, 1);
});

test("cancel_requested aborts the handler's signal, and nothing is reported for the task", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t);
  fake.leaseMs = 300;
  let reason: unknown;
  worker.register("payments", async (task, { signal }) => {
    fake.cancel(task.name);
    reason = await aborted(signal);
    return { late: true };
  });
  fake.schedule("payments");
  const running = run();
  await fake.until(() => reason !== undefined, "the handler's abort");
  stop.abort();
  await running;

  assert.ok(reason instanceof TaskAbortError);
  assert.equal(reason.kind, "CANCEL_REQUESTED");
  assert.equal(fake.heartbeats.length, 1);
  assert.deepEqual([fake.completions.length, fake.failures.length], [0, 0]);
});

test("LEASE_SUPERSEDED on a heartbeat aborts the handler; nothing is reported", limit, async (t) => {
  const { fake, worker, stop, run, logs } = await setup(t);
  fake.leaseMs = 300;
  let reason: unknown;
  worker.register("payments", async (task, { signal }) => {
    fake.supersede(task.name);
    reason = await aborted(signal);
    throw new Error("too late to matter");
  });
  fake.schedule("payments");
  const running = run();
  await fake.until(() => reason !== undefined, "the handler's abort");
  stop.abort();
  await running;

  assert.ok(reason instanceof TaskAbortError);
  assert.equal(reason.kind, "LEASE_LOST");
  assert.deepEqual([fake.completions.length, fake.failures.length], [0, 0]);
  assert.deepEqual(
    logs.filter((l) => !l.startsWith("debug")),
    [],
  );
});

test("LEASE_SUPERSEDED and TASK_CANCELLED on a report drop the task quietly, and the worker goes on", limit, async (t) => {
  const { fake, worker, stop, run, logs } = await setup(t, { concurrency: 1 });
  fake.errors.complete.push(statewrightError(Code.FailedPrecondition, "LEASE_SUPERSEDED"));
  fake.errors.fail.push(statewrightError(Code.FailedPrecondition, "TASK_CANCELLED"));
  worker.register("payments", (task) => {
    if (task.input["fail"]) throw new TaskFailure("NOPE", "no");
    return { ok: true };
  });
  const superseded = fake.schedule("payments");
  const cancelled = fake.schedule("payments", { fail: true });
  const last = fake.schedule("payments");
  const running = run();
  await fake.until(() => fake.task(last).status === TaskStatus.COMPLETED, "the last task's completion");
  stop.abort();
  await running;

  assert.deepEqual(
    fake.completions.map((c) => c.name),
    [superseded, last],
  );
  assert.deepEqual(
    fake.failures.map((f) => f.name),
    [cancelled],
  );
  assert.deepEqual(
    logs.filter((l) => !l.startsWith("debug")),
    [],
  );
});

test("at most `concurrency` handlers run, and a poll asks for the free slots only", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t, { concurrency: 3 });
  const gates = new Map<string, ReturnType<typeof gate>>();
  let inProgress = 0;
  let most = 0;
  // What each poll would allow to run if it got all it asked for.
  const wouldRun: number[] = [];
  fake.onPoll = (req) => wouldRun.push(inProgress + req.maxTasks);
  const handler: TaskHandler = async (task) => {
    inProgress++;
    most = Math.max(most, inProgress);
    fake.emit();
    try {
      await gates.get(task.name)!.promise;
    } finally {
      inProgress--;
    }
    return {};
  };
  worker.register("payments", handler);
  const names = [1, 2, 3, 4, 5].map(() => fake.schedule("payments"));
  for (const name of names) gates.set(name, gate());
  const running = run();

  await fake.until(() => inProgress === 3, "three running handlers");
  assert.equal(fake.polls[0]?.maxTasks, 3);
  gates.get(names[0]!)!.open();
  await fake.until(() => fake.polls.length >= 2 && inProgress === 3, "a fourth task started");
  assert.equal(fake.polls[1]?.maxTasks, 1);
  for (const g of gates.values()) g.open();
  await fake.until(() => fake.completions.length === 5, "five completions");
  stop.abort();
  await running;

  assert.equal(most, 3);
  assert.ok(wouldRun.every((n) => n <= 3), `polls would have run ${wouldRun.join(", ")}`);
});

test("queues share the free slots", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t, { concurrency: 4 });
  worker.register("payments", () => ({})).register("shipping", () => ({}));
  const running = run();
  await fake.until(() => fake.polls.length === 2, "a poll per queue");
  stop.abort();
  await running;
  assert.deepEqual(
    fake.polls.map((p) => [p.queue, p.maxTasks]).sort(),
    [
      ["payments", 2],
      ["shipping", 2],
    ],
  );
  // The cancellation reaches the server's side of the calls after run() resolved.
  await fake.until(() => fake.pollSignals.every((s) => s.aborted), "the polls in flight cancelled");
});

test("a graceful shutdown stops polling and lets a running handler finish", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t);
  const finish = gate();
  let started = false;
  worker.register("payments", async (_task, { signal }) => {
    started = true;
    fake.emit();
    await finish.promise;
    return { aborted: signal.aborted };
  });
  const name = fake.schedule("payments");
  const running = run();
  await fake.until(() => started && fake.polls.length === 2, "the handler running and the next poll waiting");
  stop.abort();
  await fake.until(() => fake.pollSignals.every((s) => s.aborted), "the poll cancelled");
  finish.open();
  await running;

  assert.equal(fake.polls.length, 2);
  assert.deepEqual(
    fake.completions.map((c) => [c.name, c.result]),
    [[name, { aborted: false }]],
  );
  assert.equal(fake.failures.length, 0);
});

test("a handler still running when the grace period ends is aborted and released for another worker", limit, async (t) => {
  const { fake, worker, stop, run } = await setup(t, { shutdownGraceMs: 50 });
  let reason: unknown;
  let started = false;
  worker.register("payments", async (_task, { signal, heartbeat }) => {
    heartbeat({ processed: 3 });
    started = true;
    fake.emit();
    reason = await aborted(signal);
    return { ignored: true };
  });
  const name = fake.schedule("payments");
  const running = run();
  await fake.until(() => started, "the handler running");
  stop.abort();
  await running;

  assert.ok(reason instanceof TaskAbortError);
  assert.equal(reason.kind, "WORKER_SHUTDOWN");
  assert.equal(fake.completions.length, 0);
  assert.equal(fake.failures.length, 1);
  const release = fake.failures[0]!;
  assert.equal(release.name, name);
  assert.equal(release.error?.type, "WORKER_SHUTDOWN");
  assert.deepEqual(release.error?.details, { processed: 3 });
  assert.equal(release.nonRetryable, false);
  assert.deepEqual([release.retryDelay?.seconds, release.retryDelay?.nanos], [0n, 0]);
  assert.equal(release.requestId, `${name}#1#fail`);
});

test("polls back off on UNAVAILABLE and DEADLINE_EXCEEDED and go on", limit, async (t) => {
  const { fake, worker, stop, run, logs } = await setup(t);
  fake.errors.poll.push(
    statewrightError(Code.Unavailable, "SHUTTING_DOWN"),
    new ConnectError("connection reset", Code.Unavailable),
    new ConnectError("deadline", Code.DeadlineExceeded),
  );
  worker.register("payments", () => ({ ok: true }));
  const name = fake.schedule("payments");
  const running = run();
  await fake.until(() => fake.task(name).status === TaskStatus.COMPLETED, "the completion");
  stop.abort();
  await running;

  assert.ok(fake.polls.length >= 4);
  const warnings = logs.filter((l) => l.startsWith("warn: statewright worker: polling payments failed, retrying"));
  assert.equal(warnings.length, 3);
});

test("RATE_LIMITED polls and reports wait at least what their RetryInfo asks, and go on", limit, async (t) => {
  const { fake, worker, stop, run, logs } = await setup(t);
  fake.errors.poll.push(rateLimited(40));
  fake.errors.complete.push(rateLimited(30));
  worker.register("payments", () => ({ ok: true }));
  const name = fake.schedule("payments");
  const running = run();
  await fake.until(() => fake.task(name).status === TaskStatus.COMPLETED, "the completion");
  stop.abort();
  await running;

  // The backoff here is at most 8 ms: the delay logged is the server's.
  const warnings = logs.filter((l) => l.startsWith("warn: statewright worker: polling payments failed"));
  assert.deepEqual(warnings, [
    "warn: statewright worker: polling payments failed, retrying in 40 ms: [resource_exhausted] key:worker is over its rate of 5 requests per second (RATE_LIMITED)",
  ]);
  assert.equal(fake.completions.length, 2, "the rate-limited completion was sent again");
  assert.equal(fake.completions[0]?.requestId, fake.completions[1]?.requestId);
  assert.equal(logs.filter((l) => l.startsWith("error:")).length, 0);
});

test("UNAUTHENTICATED and PERMISSION_DENIED on a poll shut the worker down", limit, async (t) => {
  for (const [code, reason] of [
    [Code.Unauthenticated, "UNAUTHENTICATED"],
    [Code.PermissionDenied, "PERMISSION_DENIED"],
  ] as const) {
    const { fake, worker, run, logs } = await setup(t);
    fake.errors.poll.push(statewrightError(code, reason));
    worker.register("payments", () => ({}));
    const err = await run().then(
      () => assert.fail("run() resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ConnectError);
    assert.equal(err.code, code);
    assert.equal(fake.polls.length, 1, reason);
    assert.match(logs.join("\n"), new RegExp(`polling payments failed, shutting down: .*\\(${reason}\\)`));
  }
});

test("a refused connection is retried with backoff until the worker is stopped", limit, async (t) => {
  const { served, worker, stop, run, logs, fake } = await setup(t);
  await served.close();
  worker.register("payments", () => ({}));
  const running = run();
  const refused = () => logs.filter((l) => l.startsWith("warn: statewright worker: polling payments failed")).length;
  // The logger is the only witness: no server sees these polls.
  await fake.until(() => refused() >= 3, "three refused polls");
  stop.abort();
  await running;
  assert.equal(fake.polls.length, 0);
});

test("a poll the server refuses for good shuts the worker down, and run() rejects with it", limit, async (t) => {
  // A server without TaskService answers UNIMPLEMENTED.
  const served = await serve({});
  t.after(() => served.close());
  const logs: string[] = [];
  const worker = new Worker(createStatewrightClient(served.target), {
    logger: { warn: (m) => logs.push(m), error: (m) => logs.push(m) },
  });
  worker.register("payments", () => ({}));
  const err = await worker.run().then(
    () => assert.fail("run() resolved"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unimplemented);
  assert.equal(logs.length, 1);
  assert.match(logs[0] ?? "", /polling payments failed, shutting down/);
});

test("register and run check what they are given", () => {
  const client = createStatewrightClient("127.0.0.1:1");
  const worker = new Worker(client);
  assert.throws(() => worker.register("Payments", () => ({})), TypeError);
  worker.register("payments", () => ({}));
  assert.throws(() => worker.register("payments", () => ({})), /already has a handler/);
  assert.throws(() => new Worker(client, { concurrency: 0 }), RangeError);
  assert.throws(() => new Worker(client, { pollWaitMs: 120_000 }), RangeError);
  return assert.rejects(new Worker(client).run(), /no handler registered/);
});

test("TaskFailure checks its type, details and retry delay", () => {
  const failure = new TaskFailure("CARD_DECLINED", "declined", { details: { code: "51" } });
  assert.equal(failure.nonRetryable, false);
  assert.equal(failure.retryDelayMs, undefined);
  assert.equal(failure.message, "declined");
  assert.ok(failure instanceof Error);
  assert.throws(() => new TaskFailure("", "x"), TypeError);
  assert.throws(() => new TaskFailure("X", "x", { retryDelayMs: -1 }), TypeError);
  assert.throws(() => new TaskFailure("X", "x", { closeKeyUntil: new Date(Number.NaN) }), TypeError);
  assert.throws(() => new TaskFailure("X", "x", { details: { n: Number.NaN } }), /NaN at n/);
});

test("errorType names an error by its name, else by its class", () => {
  class Declined extends Error {}
  assert.equal(errorType(new RangeError("x")), "RangeError");
  assert.equal(errorType(new Declined("x")), "Declined");
  assert.equal(errorType(new Error("x")), "Error");
  assert.equal(errorType(42), "Error");
});

test("backoff doubles from the initial delay to the maximum, with jitter in the upper half", () => {
  const high = new Backoff(100, 5_000, () => 0.999999);
  const low = new Backoff(100, 5_000, () => 0);
  const steps = (b: Backoff) => Array.from({ length: 8 }, () => Math.round(b.next()));
  assert.deepEqual(steps(high), [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
  assert.deepEqual(steps(low), [50, 100, 200, 400, 800, 1600, 2500, 2500]);
  low.reset();
  assert.equal(low.next(), 50);
});

test("the client calls TaskService methods on the same connection", limit, async (t) => {
  const { fake, client } = await setup(t);
  const name = fake.schedule("payments", { order: "o-9" });
  const polled = await client.pollTasks({ queue: "payments", identity: "test", maxTasks: 1 });
  assert.deepEqual(
    polled.tasks.map((task) => [task.name, task.attempt, task.input]),
    [[name, 1, { order: "o-9" }]],
  );
  const beat = await client.heartbeatTask({ name, leaseToken: polled.tasks[0]!.leaseToken });
  assert.equal(beat.cancelRequested, false);
  const got = await client.getTask({ name });
  assert.equal(got.task?.status, TaskStatus.LEASED);
  assert.equal(got.task?.leaseToken, "");
});

test("examples/worker.ts charges, declines for good, and exits on SIGINT", limit, async (t) => {
  const fake = new FakeTaskService();
  const served = await serve({}, fake.impl);
  t.after(() => served.close());
  const charged = fake.schedule("payments", { order: "o-1", amount: 20 });
  const declined = fake.schedule("payments", { order: "o-2", amount: 1500 });
  const example = fileURLToPath(new URL("../examples/worker.js", import.meta.url));
  // The fake is plaintext without tokens: what a developer's shell says about a real server stays out.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("STATEWRIGHT_")));
  const child = spawn(process.execPath, [example, served.target], { stdio: ["ignore", "pipe", "inherit"], env });
  t.after(() => child.exitCode === null && child.kill());
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, "exit");
  await fake.until(() => fake.completions.length === 1 && fake.failures.length === 1, "a completion and a failure", 15_000);
  child.kill("SIGINT");
  const [code] = await exited;

  assert.equal(code, 0);
  assert.deepEqual(
    fake.completions.map((c) => [c.name, c.result]),
    [[charged, { id: "ch-o-1" }]],
  );
  const failure = fake.failures[0]!;
  assert.deepEqual(
    [failure.name, failure.error?.type, failure.error?.details, failure.nonRetryable],
    [declined, "CARD_DECLINED", { amount: 1500 }, true],
  );
  assert.equal(output, "charged o-1 (attempt 1)\n");
});
