// TLS, mTLS and bearer tokens over real HTTP/2 connections to in-process servers, with a
// CA and certificates made for this run (they live an hour and are never committed).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";

import {
  ErrorInfoSchema,
  TaskStatus,
  Worker,
  createStatewrightClient,
  createStatewrightClientFromEnv,
  errorInfo,
  retryDelayMs,
  type BearerToken,
} from "../src/index.js";
import { ScratchCA, type Issued } from "./certs.js";
import { FakeTaskService, fakeWorkflowService, rateLimited, serve, type Served } from "./fake_server.js";

const limit = { timeout: 20_000 };

let dir: string;
let ca: ScratchCA;
let server: Issued;
let caFile: string;
/** A TLS server of the fake services that records the authorization header of every call. */
let secured: Served;
let fakeTasks: FakeTaskService;
const seen: { method: string; authorization: string | null }[] = [];
/** Tokens the secured server refuses with UNAUTHENTICATED, as an expired or revoked one. */
const refusedTokens = new Set<string>();

function unauthenticated(message: string): ConnectError {
  return new ConnectError(message, Code.Unauthenticated, undefined, [
    { desc: ErrorInfoSchema, value: { reason: "UNAUTHENTICATED", domain: "statewright.dev", metadata: {} } },
  ]);
}

/** Records the call's credentials, and refuses missing or refused tokens as the server does. */
function gate(method: string, ctx: HandlerContext): void {
  const authorization = ctx.requestHeader.get("authorization");
  seen.push({ method, authorization });
  if (authorization === null) {
    throw unauthenticated("this call needs credentials: a bearer token in the authorization metadata");
  }
  if (refusedTokens.has(authorization.replace(/^Bearer /, ""))) {
    throw unauthenticated("the token has expired");
  }
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "statewright-ts-tls-"));
  ca = await ScratchCA.create();
  server = await ca.issue({ server: true });
  caFile = join(dir, "ca.pem");
  await writeFile(caFile, ca.cert);
  const fake = fakeWorkflowService();
  fakeTasks = new FakeTaskService();
  secured = await serve(
    {
      ...fake,
      startWorkflow: (req, ctx) => (gate("StartWorkflow", ctx), fake.startWorkflow!(req, ctx)),
      resumeWorkflow: (req, ctx) => (gate("ResumeWorkflow", ctx), fake.resumeWorkflow!(req, ctx)),
      getWorkflow: (req, ctx) => (gate("GetWorkflow", ctx), fake.getWorkflow!(req, ctx)),
      watchWorkflow: (req, ctx) => (gate("WatchWorkflow", ctx), fake.watchWorkflow!(req, ctx)),
    },
    {
      ...fakeTasks.impl,
      pollTasks: (req, ctx) => (gate("PollTasks", ctx), fakeTasks.impl.pollTasks!(req, ctx)),
      completeTask: (req, ctx) => (gate("CompleteTask", ctx), fakeTasks.impl.completeTask!(req, ctx)),
      heartbeatTask: (req, ctx) => (gate("HeartbeatTask", ctx), fakeTasks.impl.heartbeatTask!(req, ctx)),
    },
    { tls: { key: server.key, cert: server.cert } },
  );
});

after(async () => {
  await secured.close();
  await rm(dir, { recursive: true, force: true });
});

const authorizations = (method: string) => seen.filter((s) => s.method === method).map((s) => s.authorization);

test("over TLS with a CA file, a fixed token goes with unary calls and streams of both services", limit, async () => {
  seen.length = 0;
  const client = createStatewrightClient(secured.target, { ca: caFile, token: "sw_fixed" });
  const started = await client.startWorkflow({ definition: "mail-approval", workflowId: "tls-1" });
  const watched = [];
  for await (const m of client.watch("tls-1")) {
    watched.push(m.revision);
    if (m.revision === 1n) await client.resumeWorkflow({ name: "workflows/tls-1", event: "approve" });
  }
  assert.equal(started.workflow?.revision, 1n);
  assert.deepEqual(watched, [1n, 2n]);

  // The worker calls TaskService through the same client, and so with the same token.
  const name = fakeTasks.schedule("payments", { order: "o-tls" });
  const worker = new Worker(client, { pollWaitMs: 1_000 }).register("payments", () => ({ id: "ch" }));
  const stop = new AbortController();
  const running = worker.run({ signal: stop.signal });
  await fakeTasks.until(() => fakeTasks.task(name).status === TaskStatus.COMPLETED, "the completion");
  stop.abort();
  await running;

  for (const method of ["StartWorkflow", "WatchWorkflow", "ResumeWorkflow", "PollTasks", "CompleteTask"]) {
    const sent = authorizations(method);
    assert.ok(sent.length > 0, `${method} was called`);
    assert.deepEqual(new Set(sent), new Set(["Bearer sw_fixed"]), method);
  }
});

test("the CA may be given as PEM text or bytes, and TLS may come from an https URL", limit, async () => {
  for (const [target, options] of [
    [secured.target, { ca: ca.cert }],
    [secured.target, { ca: new TextEncoder().encode(ca.cert) }],
    [`https://${secured.target}`, { ca: ca.cert }],
  ] as const) {
    const client = createStatewrightClient(target, { ...options, token: "sw_fixed" });
    await client.getWorkflow({ name: "workflows/tls-1" });
  }
});

test("the server's certificate must chain to the CA: without it, or with another, the call fails", limit, async () => {
  const other = await ScratchCA.create("another CA");
  for (const options of [{ tls: true }, { ca: other.cert }]) {
    const client = createStatewrightClient(secured.target, { ...options, token: "sw_fixed", serviceConfig: {} });
    const err = await client.getWorkflow({ name: "workflows/tls-1" }).then(
      () => assert.fail("a call to an untrusted server succeeded"),
      (e: unknown) => ConnectError.from(e),
    );
    // connect-node reports a failed handshake as INTERNAL, with OpenSSL's words.
    assert.match(err.message, /unable to verify the first certificate|unable to get local issuer certificate/);
  }
  // serverName must be a name the certificate carries.
  const wrongName = createStatewrightClient(secured.target, { ca: ca.cert, serverName: "elsewhere.example", serviceConfig: {} });
  await assert.rejects(wrongName.getWorkflow({ name: "workflows/tls-1" }), /elsewhere\.example/);
  const rightName = createStatewrightClient(secured.target, { ca: ca.cert, serverName: "localhost", token: "sw_fixed" });
  await rightName.getWorkflow({ name: "workflows/tls-1" });
});

test("a plaintext client on the TLS port fails", limit, async () => {
  const client = createStatewrightClient(secured.target, { token: "sw_fixed", serviceConfig: {} });
  const err = await client.getWorkflow({ name: "workflows/tls-1" }).then(
    () => assert.fail("plaintext reached a TLS server"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.notEqual(err.code, Code.Unauthenticated, "refused by the connection, not by the handler");
  assert.equal(authorizations("GetWorkflow").includes(null), false);
});

test("UNAUTHENTICATED comes back as a ConnectError with its ErrorInfo", limit, async () => {
  const client = createStatewrightClient(secured.target, { ca: caFile });
  const err = await client.getWorkflow({ name: "workflows/tls-1" }).then(
    () => assert.fail("a call without a token succeeded"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unauthenticated);
  assert.equal(errorInfo(err)?.reason, "UNAUTHENTICATED");
  assert.equal(errorInfo(err)?.domain, "statewright.dev");
});

test("a refreshing token: a string provider is asked per call, a BearerToken until the server refuses it", limit, async () => {
  seen.length = 0;
  let n = 0;
  const perCall = createStatewrightClient(secured.target, { ca: caFile, token: async () => `sw_call_${++n}` });
  await perCall.getWorkflow({ name: "workflows/tls-1" });
  await perCall.getWorkflow({ name: "workflows/tls-1" });
  const streamed = [];
  for await (const m of perCall.watchWorkflow({ name: "workflows/tls-1" })) streamed.push(m);
  assert.deepEqual(authorizations("GetWorkflow"), ["Bearer sw_call_1", "Bearer sw_call_2"]);
  assert.deepEqual(authorizations("WatchWorkflow"), ["Bearer sw_call_3"]);

  seen.length = 0;
  let m = 0;
  const provider = (): BearerToken => ({ token: `sw_jwt_${++m}`, expiresAt: Date.now() + 3_600_000 });
  const cached = createStatewrightClient(secured.target, { ca: caFile, token: provider });
  await cached.getWorkflow({ name: "workflows/tls-1" });
  await cached.getWorkflow({ name: "workflows/tls-1" });
  // The server stops taking it (revoked, or its clock runs ahead): that call fails, and
  // the next one carries a new token.
  refusedTokens.add("sw_jwt_1");
  await assert.rejects(cached.getWorkflow({ name: "workflows/tls-1" }), (e: unknown) => ConnectError.from(e).code === Code.Unauthenticated);
  await cached.getWorkflow({ name: "workflows/tls-1" });
  assert.deepEqual(authorizations("GetWorkflow"), ["Bearer sw_jwt_1", "Bearer sw_jwt_1", "Bearer sw_jwt_1", "Bearer sw_jwt_2"]);
});

test("the client from the environment: STATEWRIGHT_ADDRESS, STATEWRIGHT_TLS_CA and STATEWRIGHT_TOKEN", limit, async () => {
  seen.length = 0;
  const env = { STATEWRIGHT_ADDRESS: secured.target, STATEWRIGHT_TLS_CA: caFile, STATEWRIGHT_TOKEN: "sw_env" };
  await createStatewrightClientFromEnv({}, env).getWorkflow({ name: "workflows/tls-1" });
  // STATEWRIGHT_TARGET is the older name; an address given in code wins over both.
  await createStatewrightClientFromEnv({}, { STATEWRIGHT_TARGET: secured.target, STATEWRIGHT_TLS_CA: caFile, STATEWRIGHT_TOKEN: "sw_old" }).getWorkflow({
    name: "workflows/tls-1",
  });
  await createStatewrightClientFromEnv({ address: secured.target, token: "sw_code" }, { ...env, STATEWRIGHT_ADDRESS: "127.0.0.1:1" }).getWorkflow(
    { name: "workflows/tls-1" },
  );
  assert.deepEqual(authorizations("GetWorkflow"), ["Bearer sw_env", "Bearer sw_old", "Bearer sw_code"]);
});

test("RATE_LIMITED carries its RetryInfo's delay over the wire", limit, async (t) => {
  const limited = await serve({
    getWorkflow() {
      throw rateLimited(1_250);
    },
  });
  t.after(() => limited.close());
  const err = await createStatewrightClient(limited.target)
    .getWorkflow({ name: "workflows/x" })
    .catch((e: unknown) => e);
  assert.equal(ConnectError.from(err).code, Code.ResourceExhausted);
  assert.equal(errorInfo(err)?.reason, "RATE_LIMITED");
  assert.equal(retryDelayMs(err), 1_250);
  assert.equal(retryDelayMs(new ConnectError("no details", Code.ResourceExhausted)), undefined);
  assert.equal(retryDelayMs(new Error("not a ConnectError")), undefined);
});

test("mTLS: a client certificate is presented and accepted; without one the server refuses", limit, async (t) => {
  const identity = "spiffe://statewright.test/worker/payments";
  const clientCert = await ca.issue({ uri: identity });
  const certFile = join(dir, "client.pem");
  const keyFile = join(dir, "client.key");
  await writeFile(certFile, clientCert.cert);
  await writeFile(keyFile, clientCert.key);
  const mtls = await serve(fakeWorkflowService(), undefined, {
    tls: { key: server.key, cert: server.cert, ca: ca.cert, requestCert: true, rejectUnauthorized: true },
  });
  t.after(() => mtls.close());

  const withCert = createStatewrightClient(mtls.target, { ca: caFile, cert: certFile, key: keyFile });
  const started = await withCert.startWorkflow({ definition: "mail-approval", workflowId: "mtls-1" });
  assert.equal(started.workflow?.revision, 1n);
  const fromEnv = createStatewrightClientFromEnv(
    {},
    { STATEWRIGHT_ADDRESS: mtls.target, STATEWRIGHT_TLS_CA: caFile, STATEWRIGHT_TLS_CERT: certFile, STATEWRIGHT_TLS_KEY: keyFile },
  );
  const got = await fromEnv.getWorkflow({ name: "workflows/mtls-1" });
  assert.equal(got.workflow?.revision, 1n);
  assert.deepEqual(mtls.peers, [`URI:${identity}`, `URI:${identity}`]);

  const withoutCert = createStatewrightClient(mtls.target, { ca: caFile, serviceConfig: {} });
  const err = await withoutCert.getWorkflow({ name: "workflows/mtls-1" }).then(
    () => assert.fail("a client without a certificate got through"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.match(err.message, /certificate required/);

  // A certificate from a CA the server does not trust is refused the same way.
  const stranger = await (await ScratchCA.create("a stranger's CA")).issue({ uri: identity });
  const untrusted = createStatewrightClient(mtls.target, { ca: caFile, cert: stranger.cert, key: stranger.key, serviceConfig: {} });
  await assert.rejects(untrusted.getWorkflow({ name: "workflows/mtls-1" }));
  assert.equal(mtls.peers.length, 2, "only the trusted certificate made it to a session");
});

test("examples/secure_client.ts connects over mTLS with a client-credentials token, fetched once", limit, async (t) => {
  const identity = "spiffe://statewright.test/tool";
  const tool = await ca.issue({ uri: identity });
  const certFile = join(dir, "tool.pem");
  const keyFile = join(dir, "tool.key");
  await writeFile(certFile, tool.cert);
  await writeFile(keyFile, tool.key);
  const fake = fakeWorkflowService();
  const calls: (string | null)[] = [];
  const mtls = await serve(
    {
      ...fake,
      getDiagnostics: (req, ctx) => (calls.push(ctx.requestHeader.get("authorization")), fake.getDiagnostics!(req, ctx)),
      listWorkflows: (req, ctx) => (calls.push(ctx.requestHeader.get("authorization")), fake.listWorkflows!(req, ctx)),
    },
    undefined,
    { tls: { key: server.key, cert: server.cert, ca: ca.cert, requestCert: true, rejectUnauthorized: true } },
  );
  t.after(() => mtls.close());

  const grants: URLSearchParams[] = [];
  const endpoint = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      grants.push(new URLSearchParams(body));
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ access_token: "sw_oauth_1", token_type: "Bearer", expires_in: 300 }));
    });
  });
  endpoint.listen(0, "127.0.0.1");
  await once(endpoint, "listening");
  t.after(() => endpoint.close());
  const tokenUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/oauth/token`;

  const example = fileURLToPath(new URL("../examples/secure_client.js", import.meta.url));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("STATEWRIGHT_")));
  const child = spawn(process.execPath, [example, mtls.target, caFile, certFile, keyFile, tokenUrl], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...env, OAUTH_CLIENT_ID: "tool", OAUTH_CLIENT_SECRET: "s3cret" },
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  const [status] = (await once(child, "exit")) as [number | null];
  assert.equal(status, 0, out);
  assert.equal(out, "connected to statewright 0.0.0-fake: 0 workflows on the first page\n");
  assert.deepEqual(calls, ["Bearer sw_oauth_1", "Bearer sw_oauth_1"], "one token for both calls");
  assert.equal(grants.length, 1);
  assert.equal(grants[0]?.get("grant_type"), "client_credentials");
  assert.equal(grants[0]?.get("client_id"), "tool");
  assert.deepEqual(mtls.peers, [`URI:${identity}`]);
});
