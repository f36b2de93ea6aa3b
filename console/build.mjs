// Bundles the console into OUTDIR (default: the Python package's static/ directory).
// Deterministic: the same sources and lock file give the same bytes, which is what
// `make check-console` compares. Entry names carry no content hash: the server sends them
// with `no-cache` and an ETag, so a new build is never hidden behind a stale cache.
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ?? join(here, "..", "service", "statewrightd", "console", "static");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: { app: join(here, "src", "main.ts"), style: join(here, "src", "style.css") },
  bundle: true,
  splitting: true,
  format: "esm",
  target: ["chrome120", "firefox120", "safari17"],
  minify: true,
  legalComments: "linked",
  charset: "utf8",
  outdir: out,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  assetNames: "assets/[name]-[hash]",
  logLevel: "warning",
});
copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));
copyFileSync(join(here, "src", "favicon.svg"), join(out, "favicon.svg"));
