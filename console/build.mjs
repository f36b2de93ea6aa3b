// Bundles the console into OUTDIR (default: the Python package's static/ directory).
// Deterministic: the same sources and lock file give the same bytes, which is what
// `make check-console` compares. Entry names carry no content hash: the server sends them
// with `no-cache` and an ETag, so a new build is never hidden behind a stale cache.
//
// Mermaid is bundled with its state-diagram path only. Its core loads every other diagram
// type, the ELK and cose-bilkent layouts and KaTeX through dynamic imports; those modules
// are swapped here for a stub that says the console does not draw them, so they are never
// shipped (see console/src/mermaid-stub.ts).
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { constants, gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ?? join(here, "..", "service", "statewrightd", "console", "static");
const metafile = process.argv[3];

// Mermaid's lazily loaded modules the state diagram needs: the diagram, its default
// layout (dagre), and the node-size pass its renderer may ask for.
const KEPT = /^(stateDiagram-v2|dagre|sizeCapture)-[A-Z0-9]+\.mjs$/;
const LAZY = /^\.\/(chunks\/mermaid\.core\/)?[A-Za-z0-9-]+-[A-Z0-9]{8}\.mjs$/;
const stub = join(here, "src", "mermaid-stub.ts");

const stateDiagramOnly = {
  name: "mermaid-state-diagram-only",
  setup(build) {
    build.onResolve({ filter: /^katex$/ }, () => ({ path: stub }));
    build.onResolve({ filter: LAZY }, (args) => {
      if (args.kind !== "dynamic-import" || !args.importer.includes("/mermaid/dist/")) return undefined;
      return KEPT.test(basename(args.path)) ? undefined : { path: stub };
    });
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const result = await esbuild.build({
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
  plugins: [stateDiagramOnly],
  metafile: metafile !== undefined,
});
copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));
copyFileSync(join(here, "src", "favicon.svg"), join(out, "favicon.svg"));
if (metafile !== undefined) writeFileSync(metafile, JSON.stringify(result.metafile));

// Each text file also gzipped beside it (NAME.gz), once, here: the server sends that copy,
// with Content-Encoding: gzip, to a browser that accepts it (aiohttp's FileResponse does),
// and never compresses on the fly. Small files gain nothing and are left alone.
const COMPRESSED = /\.(js|css|html|svg)$/;
for (const entry of readdirSync(out, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !COMPRESSED.test(entry.name)) continue;
  const file = join(entry.parentPath ?? entry.path, entry.name);
  const data = readFileSync(file);
  if (data.length < 1024) continue;
  const packed = gzipSync(data, { level: constants.Z_BEST_COMPRESSION });
  if (packed.length < data.length) writeFileSync(`${file}.gz`, packed);
}
