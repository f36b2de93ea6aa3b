// Executes the shared client conformance scenario against the live Statewright server at
// $STATEWRIGHT_TARGET and exits non-zero at the first mismatch.
//   STATEWRIGHT_TARGET=127.0.0.1:50051 node dist/conformance/main.js [scenario.yaml]
import { randomBytes } from "node:crypto";

import { createStatewrightClient } from "../src/client.js";
import { Runner } from "./runner.js";
import { loadScenario } from "./scenario.js";

const target = process.env["STATEWRIGHT_TARGET"];
if (!target) {
  console.error("conformance: STATEWRIGHT_TARGET (host:port of a live server) is not set");
  process.exit(1);
}
const scenarioPath = process.argv[2] ?? "../conformance/scenario.yaml";
const scenario = await loadScenario(scenarioPath);
const runId = randomBytes(6).toString("hex");
console.log(`conformance: ${scenarioPath} against ${target}, run ${runId}`);

const runner = new Runner({ client: createStatewrightClient(target), runId });
const result = await runner.run(scenario);
if (result.failure !== undefined) {
  console.error(`conformance: ${result.failure}`);
  process.exitCode = 1;
}
