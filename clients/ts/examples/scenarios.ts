// The README's "Testing workflows" block: a node:test test that runs a definitions
// directory's scenario files with `statewrightd test` (compiled here, never run by the suite).
import { execFileSync } from "node:child_process";
import { test } from "node:test";

test("workflow scenarios", () => {
  // Throws, with the runner's report, when a scenario fails (exit status 1 or 2).
  execFileSync("statewrightd", ["test", "definitions/"], { stdio: "inherit" });
});
