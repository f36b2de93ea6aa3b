import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

// Keeps the README's example compiling: its TypeScript block must be
// examples/start_resume.ts (which tsc compiles) without its leading comment.
test("README.md shows examples/start_resume.ts", async () => {
  const read = (path: string) => readFile(new URL(path, import.meta.url), "utf8");
  const readme = await read("../../README.md");
  const example = await read("../../examples/start_resume.ts");
  const block = /```ts\n([\s\S]*?)```\n/.exec(readme)?.[1];
  assert.ok(block, "README.md has no ```ts block");
  assert.equal(block, example.replace(/^(\/\/.*\n)+/, ""));
});
