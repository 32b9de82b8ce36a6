// Builds LangChain's agent-chat-ui — the vite template that the pinned
// create-agent-chat-app ships (MIT; its LICENSE is kept beside the built
// files) — into .build/<hash>/dist, where <hash> is of the lockfile and
// this script: a second run with the same hash builds nothing. It prints
// the dist directory. The template is built as it is published, with
// `vite build` alone (its `tsc -b` step type-checks, it does not build).
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const template = join(here, "node_modules/create-agent-chat-app/templates/vite");
const files = ["src", "public", "index.html", "vite.config.ts", "tailwind.config.js", "components.json",
  "tsconfig.json", "tsconfig.app.json", "tsconfig.node.json"];

const hash = createHash("sha256");
for (const f of ["package-lock.json", "build.mjs"]) hash.update(readFileSync(join(here, f)));
const dir = join(here, ".build", hash.digest("hex").slice(0, 16));
const dist = join(dir, "dist");

if (!existsSync(join(dist, "index.html"))) {
  const app = join(dir, "app"), tmp = join(dir, "dist.tmp");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(app, { recursive: true });
  for (const f of files) cpSync(join(template, f), join(app, f), { recursive: true });
  const { build } = await import("vite");
  await build({ root: app, configFile: join(app, "vite.config.ts"), logLevel: "warn",
    build: { outDir: tmp, emptyOutDir: true, chunkSizeWarningLimit: 10000 } });
  cpSync(join(here, "node_modules/create-agent-chat-app/LICENSE"), join(tmp, "LICENSE"));
  renameSync(tmp, dist);
}
console.log(dist);
