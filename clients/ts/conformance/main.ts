// Executes the shared client conformance scenario against the live Statewright server that
// the environment names (STATEWRIGHT_ADDRESS, or STATEWRIGHT_TARGET; with
// STATEWRIGHT_TOKEN and STATEWRIGHT_TLS_CA, _CERT and _KEY when it is secured) and exits
// non-zero at the first mismatch.
//   STATEWRIGHT_ADDRESS=127.0.0.1:50051 node dist/conformance/main.js [scenario.yaml]
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

import { Code, ConnectError } from "@connectrpc/connect";

import { createStatewrightClientFromEnv } from "../src/client.js";
import { environmentConfig } from "../src/security.js";
import { Runner } from "./runner.js";
import { loadScenario } from "./scenario.js";

if (!process.env["STATEWRIGHT_ADDRESS"] && !process.env["STATEWRIGHT_TARGET"]) {
  console.error("conformance: STATEWRIGHT_ADDRESS (host:port of a live server) is not set");
  process.exit(1);
}
const { address: target, options: security } = environmentConfig();
const scenarioPath = process.argv[2] ?? "../conformance/scenario.yaml";
const scenario = await loadScenario(scenarioPath);
const runId = randomBytes(6).toString("hex");
const how = [security.tls ? "TLS" : "plaintext", ...(security.cert ? ["a client certificate"] : []), ...(security.token ? ["a token"] : [])];
console.log(`conformance: ${scenarioPath} against ${target} (${how.join(", ")}), run ${runId}`);

const client = createStatewrightClientFromEnv();
await waitForServer(Number(process.env["STATEWRIGHT_WAIT_MS"] ?? 30_000));
const runner = new Runner({ client, runId });
const result = await runner.run(scenario);
if (result.failure !== undefined) {
  console.error(`conformance: ${result.failure}`);
  process.exitCode = 1;
}

/**
 * Calls GetDiagnostics until the server answers anything but UNAVAILABLE, so that a runner
 * started together with its server does not race the server's start-up.
 */
async function waitForServer(waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await client.getDiagnostics({});
      return;
    } catch (err) {
      const ce = ConnectError.from(err);
      if (ce.code !== Code.Unavailable) {
        return; // the first step reports any other failure
      }
      if (Date.now() >= deadline) {
        console.error(`conformance: the server did not answer within ${waitMs} ms: ${ce.message}`);
        process.exit(1);
      }
      await sleep(250);
    }
  }
}
