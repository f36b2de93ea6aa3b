// The security options and the environment, without a server: what each setting turns
// into (base URL, TLS settings for http2.connect, a token interceptor) and what is refused.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Code, ConnectError } from "@connectrpc/connect";

import { StatewrightConfigError, environmentConfig, isLoopback } from "../src/index.js";
import { TokenSource, resolveSecurity } from "../src/security.js";
import { ScratchCA, type Issued } from "./certs.js";

let dir: string;
let ca: ScratchCA;
let client: Issued;
let caFile: string;
let certFile: string;
let keyFile: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "statewright-ts-security-"));
  ca = await ScratchCA.create();
  client = await ScratchCA.create("another CA").then((other) => other.issue({ uri: "spiffe://test/worker" }));
  caFile = join(dir, "ca.pem");
  certFile = join(dir, "client.pem");
  keyFile = join(dir, "client.key");
  await writeFile(caFile, ca.cert);
  await writeFile(certFile, client.cert);
  await writeFile(keyFile, client.key);
});

after(() => rm(dir, { recursive: true, force: true }));

const refused = (pattern: RegExp) => (err: unknown) => {
  assert.ok(err instanceof StatewrightConfigError, `not a StatewrightConfigError: ${String(err)}`);
  assert.match(err.message, pattern);
  return true;
};

test("host:port is plaintext by default; TLS comes from tls, any TLS material, or an https URL", () => {
  const plain = resolveSecurity("127.0.0.1:50051", {});
  assert.equal(plain.baseUrl, "http://127.0.0.1:50051");
  assert.equal(plain.nodeOptions, undefined);
  assert.equal(plain.interceptor, undefined);

  const systemRoots = resolveSecurity("statewright.example.com:443", { tls: true });
  assert.equal(systemRoots.baseUrl, "https://statewright.example.com");
  assert.deepEqual(systemRoots.nodeOptions, {}, "no CA: Node's own roots");

  const byCa = resolveSecurity("10.0.0.5:50051", { ca: caFile });
  assert.equal(byCa.baseUrl, "https://10.0.0.5:50051");
  assert.equal(String(byCa.nodeOptions?.ca), ca.cert);

  const byUrl = resolveSecurity("https://[::1]:7443", { serverName: "statewright.internal" });
  assert.equal(byUrl.baseUrl, "https://[::1]:7443");
  assert.deepEqual(byUrl.nodeOptions, { servername: "statewright.internal" });

  assert.equal(resolveSecurity("http://localhost:50051", {}).baseUrl, "http://localhost:50051");
});

test("a CA, certificate and key may each be a file path, PEM text or PEM bytes", () => {
  const fromFiles = resolveSecurity("127.0.0.1:1", { ca: caFile, cert: certFile, key: keyFile }).nodeOptions;
  const fromText = resolveSecurity("127.0.0.1:1", { ca: ca.cert, cert: client.cert, key: client.key }).nodeOptions;
  const bytes = (s: string) => new TextEncoder().encode(s);
  const fromBytes = resolveSecurity("127.0.0.1:1", { ca: bytes(ca.cert), cert: bytes(client.cert), key: bytes(client.key) })
    .nodeOptions;
  for (const options of [fromFiles, fromText, fromBytes]) {
    assert.equal(String(options?.ca), ca.cert);
    assert.equal(String(options?.cert), client.cert);
    assert.equal(String(options?.key), client.key);
  }
});

test("contradictions and unusable TLS material are refused when the client is made", async () => {
  assert.throws(() => resolveSecurity("127.0.0.1:1", { tls: false, ca: caFile }), refused(/tls is false, but a CA/));
  assert.throws(() => resolveSecurity("https://127.0.0.1:1", { tls: false }), refused(/tls is false, but the target .* is https/));
  assert.throws(() => resolveSecurity("http://127.0.0.1:1", { tls: true }), refused(/is http, but TLS options/));
  assert.throws(() => resolveSecurity("http://127.0.0.1:1", { ca: caFile }), refused(/is http, but TLS options/));
  assert.throws(() => resolveSecurity("127.0.0.1:1", { cert: certFile }), refused(/certificate needs its key/));
  assert.throws(() => resolveSecurity("127.0.0.1:1", { key: keyFile }), refused(/certificate needs its key/));
  assert.throws(() => resolveSecurity("ftp://127.0.0.1:1", {}), refused(/neither http nor https/));
  assert.throws(() => resolveSecurity("not a target", {}), refused(/neither host:port nor a URL/));

  const missing = join(dir, "absent.pem");
  assert.throws(() => resolveSecurity("127.0.0.1:1", { ca: missing }), refused(new RegExp(`cannot read the TLS CA file ${missing}`)));
  assert.throws(
    () => resolveSecurity("127.0.0.1:1", { cert: certFile, key: join(dir, "absent.key") }),
    refused(/cannot read the TLS client key file/),
  );

  const garbage = join(dir, "garbage.pem");
  await writeFile(garbage, "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n");
  assert.throws(() => resolveSecurity("127.0.0.1:1", { ca: garbage }), refused(/certificate 1 of the TLS CA is not valid/));
  assert.throws(() => resolveSecurity("127.0.0.1:1", { ca: client.key }), refused(/the TLS CA holds no PEM certificate/));
  assert.throws(() => resolveSecurity("127.0.0.1:1", { cert: garbage, key: keyFile }), refused(/CA, certificate or key is not usable/));
  const otherKey = (await ca.issue({ uri: "spiffe://test/other" })).key;
  assert.throws(() => resolveSecurity("127.0.0.1:1", { cert: certFile, key: otherKey }), refused(/not usable/));
});

test("a token in plaintext goes only to loopback, unless insecure says so", () => {
  for (const target of ["127.0.0.1:50051", "127.1.2.3:1", "localhost:50051", "[::1]:50051", "http://localhost:1"]) {
    assert.ok(resolveSecurity(target, { token: "t0k" }).interceptor, target);
  }
  for (const target of ["10.0.0.5:50051", "statewright.example.com:50051", "[2001:db8::1]:1", "128.0.0.1:1"]) {
    assert.throws(() => resolveSecurity(target, { token: "t0k" }), refused(/refusing to send a token in plaintext to/), target);
    assert.ok(resolveSecurity(target, { token: "t0k", insecure: true }).interceptor, `${target} with insecure`);
    assert.ok(resolveSecurity(target, { token: "t0k", tls: true }).interceptor, `${target} over TLS`);
  }
  const err = (() => {
    try {
      resolveSecurity("10.0.0.5:50051", { token: "sw_secret" });
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  assert.ok(err instanceof Error);
  assert.doesNotMatch(err.message, /sw_secret/, "the error does not show the token");
});

test("isLoopback knows 127.0.0.0/8, ::1 and localhost", () => {
  assert.ok(isLoopback("127.0.0.1"));
  assert.ok(isLoopback("127.255.0.9"));
  assert.ok(isLoopback("[::1]"));
  assert.ok(isLoopback("LOCALHOST"));
  assert.ok(isLoopback("api.localhost"));
  assert.ok(!isLoopback("127.example.com"));
  assert.ok(!isLoopback("0.0.0.0"));
  assert.ok(!isLoopback("[::ffff:10.0.0.1]"));
  assert.ok(!isLoopback("localhost.example.com"));
});

test("a fixed token must be a non-empty run of visible ASCII, and is never shown", () => {
  for (const bad of ["", "two words", "line\nbreak", "tab\t", "caf\u00e9"]) {
    assert.throws(
      () => new TokenSource(bad),
      (err: unknown) => err instanceof StatewrightConfigError && !err.message.includes(bad || "\u0000"),
    );
  }
  assert.equal(new TokenSource("sw_abc-DEF.123").get(), "sw_abc-DEF.123");
});

test("a provider returning a string is asked for every call", async () => {
  let n = 0;
  const source = new TokenSource(() => `t${++n}`);
  assert.equal(await source.get(), "t1");
  assert.equal(await source.get(), "t2");
  assert.equal(await source.get(), "t3");
});

test("a BearerToken is reused until shortly before it expires", async () => {
  let now = 1_000_000;
  let n = 0;
  const source = new TokenSource(async () => ({ token: `t${++n}`, expiresAt: new Date(now + 600_000) }), () => now);
  assert.equal(await source.get(), "t1");
  now += 500_000;
  assert.equal(await source.get(), "t1", "70 s left: still good");
  now += 71_000;
  assert.equal(await source.get(), "t2", "29 s left: inside the 30 s margin, so refreshed");

  // A short-lived token is refreshed after half its remaining life.
  let m = 0;
  const short = new TokenSource(() => ({ token: `s${++m}`, expiresAt: now + 10_000 }), () => now);
  assert.equal(await short.get(), "s1");
  now += 4_999;
  assert.equal(await short.get(), "s1");
  now += 2;
  assert.equal(await short.get(), "s2");

  // Without an expiry: kept until the server refuses it.
  let k = 0;
  const lasting = new TokenSource(() => ({ token: `k${++k}` }), () => now);
  assert.equal(await lasting.get(), "k1");
  now += 1e12;
  assert.equal(await lasting.get(), "k1");
  lasting.rejected("k0");
  assert.equal(await lasting.get(), "k1", "refusing another token changes nothing");
  lasting.rejected("k1");
  assert.equal(await lasting.get(), "k2");
});

test("calls that start while the provider runs share its answer", async () => {
  let calls = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const source = new TokenSource(async () => {
    calls++;
    await gate;
    return { token: "shared" };
  });
  const waiting = [source.get(), source.get(), source.get()];
  release();
  assert.deepEqual(await Promise.all(waiting), ["shared", "shared", "shared"]);
  assert.equal(calls, 1);
});

test("a failing provider fails the call with UNAVAILABLE, or with the ConnectError it threw", async () => {
  let failure: unknown = new Error("the identity provider is down");
  const source = new TokenSource(() => {
    throw failure;
  });
  await assert.rejects(Promise.resolve(source.get()), (err: unknown) => {
    assert.ok(err instanceof ConnectError);
    assert.equal(err.code, Code.Unavailable);
    assert.match(err.message, /the token provider failed: the identity provider is down/);
    assert.equal(err.cause, failure);
    return true;
  });
  failure = new ConnectError("no such account", Code.PermissionDenied);
  await assert.rejects(Promise.resolve(source.get()), (err: unknown) => err === failure);
  const bad = new TokenSource(() => ({ token: "with space" }));
  await assert.rejects(Promise.resolve(bad.get()), refused(/what the token provider gave is not a token/));
});

test("environmentConfig reads STATEWRIGHT_ADDRESS, then STATEWRIGHT_TARGET, then the default", () => {
  assert.equal(environmentConfig({}).address, "127.0.0.1:50051");
  assert.equal(environmentConfig({ STATEWRIGHT_TARGET: "old:1" }).address, "old:1");
  assert.equal(environmentConfig({ STATEWRIGHT_ADDRESS: "new:2", STATEWRIGHT_TARGET: "old:1" }).address, "new:2");
  assert.equal(environmentConfig({ STATEWRIGHT_ADDRESS: "", STATEWRIGHT_TARGET: "old:1" }).address, "old:1", "empty is unset");
  assert.deepEqual(environmentConfig({ STATEWRIGHT_ADDRESS: "a:1" }).options, {}, "nothing set: plaintext, no token");
});

test("environmentConfig: the token, and any TLS variable turns TLS on", () => {
  assert.deepEqual(environmentConfig({ STATEWRIGHT_TOKEN: " sw_tok\n" }).options, { token: "sw_tok" });
  assert.deepEqual(environmentConfig({ STATEWRIGHT_TLS_CA: caFile }).options, { tls: true, ca: caFile });
  assert.deepEqual(environmentConfig({ STATEWRIGHT_TLS_CERT: certFile, STATEWRIGHT_TLS_KEY: keyFile }).options, {
    tls: true,
    cert: certFile,
    key: keyFile,
  });
  assert.deepEqual(
    environmentConfig({
      STATEWRIGHT_ADDRESS: "statewright:443",
      STATEWRIGHT_TOKEN: "sw_tok",
      STATEWRIGHT_TLS_CA: caFile,
      STATEWRIGHT_TLS_CERT: certFile,
      STATEWRIGHT_TLS_KEY: keyFile,
    }),
    { address: "statewright:443", options: { token: "sw_tok", ca: caFile, cert: certFile, key: keyFile, tls: true } },
  );
  assert.deepEqual(environmentConfig({ STATEWRIGHT_TLS_CA: "", STATEWRIGHT_TOKEN: "" }).options, {});
});

test("what the environment gives resolves like options do, refusals included", () => {
  const secured = environmentConfig({ STATEWRIGHT_ADDRESS: "10.1.2.3:50051", STATEWRIGHT_TOKEN: "t", STATEWRIGHT_TLS_CA: caFile });
  const resolved = resolveSecurity(secured.address, secured.options);
  assert.equal(resolved.baseUrl, "https://10.1.2.3:50051");
  assert.ok(resolved.interceptor);
  const exposed = environmentConfig({ STATEWRIGHT_ADDRESS: "10.1.2.3:50051", STATEWRIGHT_TOKEN: "t" });
  assert.throws(() => resolveSecurity(exposed.address, exposed.options), refused(/refusing to send a token in plaintext/));
  const https = environmentConfig({ STATEWRIGHT_ADDRESS: "https://statewright.example.com", STATEWRIGHT_TOKEN: "t" });
  assert.equal(resolveSecurity(https.address, https.options).baseUrl, "https://statewright.example.com");
});
