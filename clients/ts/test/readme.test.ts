import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

// Keeps the README's examples compiling: its TypeScript blocks must be the files in
// examples/ (which tsc compiles), in this order, without their leading comments.
test("README.md shows examples/start_resume.ts, watch.ts, worker.ts, batch.ts, secure_client.ts and scenarios.ts", async () => {
  const read = (path: string) => readFile(new URL(path, import.meta.url), "utf8");
  const readme = await read("../../README.md");
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```\n/g)].map((m) => m[1]);
  const examples = await Promise.all(["start_resume.ts", "watch.ts", "worker.ts", "batch.ts", "secure_client.ts", "scenarios.ts"].map((f) => read(`../../examples/${f}`)));
  assert.deepEqual(
    blocks,
    examples.map((e) => e.replace(/^(\/\/.*\n)+/, "")),
  );
});
