// Runs compat.mjs, in both pinned SDK majors, against LangGraph's own
// in-memory server (`langgraphjs dev`) serving graph.mjs, the rule_37 agent
// as a LangGraph JS graph, to check that the suite's checks assert what
// LangGraph does. Checks of runner's own behaviour are skipped
// (SDK_TARGET=langgraph). Run `npm ci` here and in the parent directory
// first, then `node run-langgraph.mjs`; it exits 1 when a check fails that
// is not in DIFFERS, so a new check that asserts runner's behaviour where
// LangGraph's differs is caught.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

// DIFFERS are the checks that fail on LangGraph's in-memory server 1.5.1,
// and why; runner keeps its behaviour there (docs/development.md). Three
// of them race in that server and may pass: a listed check that passes is
// no failure.
const DIFFERS = new Map([
  ["runs.create + join; runs.get and list",
    "a run that ends at an interrupt is success there; runner's is interrupted"],
  ["joinStream from -1 replays every event; from an id, only those after it",
    "it replays a run's events only when its worker published before a join asked (a join first makes them unkept)"],
  ["multitask reject on a busy thread is 409",
    "it answers 422; LangGraph's Python server and runner 409"],
  ["cancel with action rollback: the run is deleted, the thread as before it",
    "its cancel returns before the rollback is done: the run still there or the thread still busy"],
  ["multitaskStrategy rollback replaces the running run",
    "the new run may start before the replaced run's checkpoints are gone, its input kept"],
  ["threads.joinStream joins the thread's runs; lastEventId resumes after an event",
    "it does not serve GET /threads/{thread_id}/stream (404)"],
]);

// freePort asks the system for a port nobody listens on.
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

// ready polls the server's /ok until it answers or the time is up.
async function ready(url, server, ms = 120_000) {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (server.exitCode !== null) throw new Error(`langgraphjs dev exited with ${server.exitCode}`);
    try {
      if ((await fetch(`${url}/ok`)).ok) return;
    } catch {} // not listening yet
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`langgraphjs dev did not answer ${url}/ok in ${ms / 1000}s`);
}

// suite runs compat.mjs with one SDK major, passes its output through and
// returns the names of the checks that failed.
function suite(url, sdk) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, SDK_MODULE: sdk, SDK_TARGET: "langgraph", RUNNER_URL: url, LANGGRAPH_API_KEY: "" };
    const node = spawn(process.execPath, ["compat.mjs"], { cwd: join(here, ".."), env, stdio: ["ignore", "pipe", "inherit"] });
    const out = [];
    node.stdout.on("data", (b) => {
      out.push(b);
      process.stdout.write(b);
    });
    node.on("exit", (code) => {
      const text = Buffer.concat(out).toString();
      if (!/^\d+\/\d+ passed/m.test(text)) reject(new Error(`compat.mjs (${sdk}) ended with ${code} before its tally`));
      resolve(text.split("\n").filter((l) => l.startsWith("FAIL ")).map((l) => l.slice(5)));
    });
  });
}

const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const log = [];
const server = spawn(join(here, "node_modules", ".bin", "langgraphjs"),
  ["dev", "--port", String(port), "--host", "127.0.0.1", "--no-browser", "--no-reload"], {
    cwd: here,
    detached: true, // its own process group, ended with it below
    env: { ...process.env, LANGSMITH_TRACING: "false", LANGCHAIN_TRACING_V2: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
for (const s of [server.stdout, server.stderr]) s.on("data", (b) => log.push(b));
let failed = 0;
try {
  await ready(url, server);
  for (const sdk of ["sdk1", "sdk2"]) {
    console.log(`== ${sdk} against LangGraph's server (${url})`);
    const fails = await suite(url, sdk);
    for (const name of fails.filter((n) => !DIFFERS.has(n))) {
      failed++;
      console.log(`UNEXPECTED ${sdk}: "${name}" fails on LangGraph's server: fix the check, or list it in DIFFERS`);
    }
    for (const [name, why] of DIFFERS) {
      console.log(`${fails.includes(name) ? "differs" : "passed this time"}: ${name}: ${why}`);
    }
  }
} catch (err) {
  console.error(`${err.message}\n${Buffer.concat(log)}`);
  failed++;
} finally {
  process.kill(-server.pid);
}
process.exit(failed ? 1 : 0);
