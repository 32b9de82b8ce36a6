// The client-compatibility suite: the stock LangGraph JS SDK, unchanged,
// against a started `runner serve`. Run by sdk_test.go, once per pinned SDK
// major version (SDK_MODULE=sdk1|sdk2), with RUNNER_URL and
// LANGGRAPH_API_KEY set; and by langgraph/run-langgraph.mjs against
// LangGraph's own server (SDK_TARGET=langgraph). Each check prints one
// line, a failure with what was expected and what came back; any failure
// exits 1.
import assert from "node:assert/strict";

const { Client } = await import(process.env.SDK_MODULE ?? "sdk2");
const client = new Client({ apiUrl: process.env.RUNNER_URL }); // key from LANGGRAPH_API_KEY

// The assistant is seed 000's rule_37 agent; its scripted model asks to
// create a well entity, which the platform rule holds for approval.
const AGENT = "rule_37";
const INPUT = { messages: [{ role: "user", content: "Add the new Mitchell Ranch 3H well." }] };
const APPROVE = { approved: true };

const checks = [];
const check = (name, fn) => checks.push([name, fn]);

// runnerOnly is a check of runner's own behaviour, beyond the API LangGraph's
// server serves; it is skipped when the suite runs against LangGraph's own
// server (SDK_TARGET=langgraph, langgraph/run-langgraph.mjs) to check the suite.
const onLangGraph = process.env.SDK_TARGET === "langgraph";
const runnerOnly = (name, fn) => checks.push([name, fn, onLangGraph]);

// flags are the server's /info feature flags; served is a check of a
// feature LangGraph's in-memory server may leave out (it has no crons);
// against runner it always runs.
const info = await fetch(`${process.env.RUNNER_URL}/info`, { headers: { "X-Api-Key": process.env.LANGGRAPH_API_KEY ?? "" } });
const { flags = {} } = info.ok ? await info.json() : {};
const served = (flag, name, fn) => checks.push([name, fn, onLangGraph && flags[flag] === false && `the server's /info flags.${flag} is false`]);

// collect drains a stream into a list of {event, data, id}.
async function collect(stream) {
  const out = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

// interruptOf finds the __interrupt__ list in a stream's chunks.
function interruptOf(chunks) {
  for (const c of chunks) {
    const list = c.data?.__interrupt__;
    if (Array.isArray(list) && list.length > 0) return list;
  }
  return undefined;
}

// pausedThread starts a thread and streams its first run to the gate.
async function pausedThread(metadata = {}) {
  const thread = await client.threads.create({ metadata });
  const chunks = await collect(
    client.runs.stream(thread.thread_id, AGENT, { input: INPUT, streamMode: ["updates", "values"] }),
  );
  return { thread, chunks };
}

// answer is the newest AI message's text (messages cross the API in
// LangChain's form).
function answer(values) {
  const ai = (values.messages ?? []).filter((m) => m.type === "ai" && m.content);
  return ai.at(-1)?.content ?? "";
}

// createdEntities counts the create_entity calls that ran on a thread.
function createdEntities(values) {
  return (values.tool_results ?? []).filter((r) => r.tool_name === "create_entity" && r.ok).length;
}

// expectStatus runs fn and checks that it fails with an HTTP status.
async function expectStatus(status, fn) {
  try {
    await fn();
  } catch (err) {
    assert.equal(err.status, status, `want HTTP ${status}, got ${err.message}`);
    return err;
  }
  assert.fail(`want HTTP ${status}, the call succeeded`);
}

// busyRun starts a background run whose first model reply is slow.
async function busyRun() {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, AGENT, { input: INPUT });
  return { thread, run };
}

check("assistants: search finds the agent by graph id", async () => {
  const found = await client.assistants.search({ graphId: AGENT });
  assert.ok(found.length >= 1, "no assistant for rule_37");
  const a = await client.assistants.get(found[0].assistant_id);
  assert.equal(a.graph_id, AGENT);
});

check("assistants: create from a graph, update makes a version, versions, setLatest, run it, delete", async () => {
  const tag = `a-${Date.now()}`;
  const a = await client.assistants.create({ graphId: AGENT, name: tag, metadata: { suite: tag, v: 1 } });
  assert.equal(a.version, 1);
  assert.equal(a.graph_id, AGENT);
  const b = await client.assistants.update(a.assistant_id, { metadata: { v: 2 } });
  assert.equal(b.version, 2);
  assert.equal(b.metadata.suite, tag, "metadata is merged");
  const versions = await client.assistants.getVersions(a.assistant_id);
  assert.deepEqual(versions.map((v) => v.version), [2, 1]);
  const latest = await client.assistants.setLatest(a.assistant_id, 1);
  assert.equal(latest.version, 1);
  assert.equal((await client.assistants.get(a.assistant_id)).metadata.v, 1);
  const found = await client.assistants.search({ metadata: { suite: tag } });
  assert.deepEqual(found.map((x) => x.assistant_id), [a.assistant_id]);
  const thread = await client.threads.create();
  const values = await client.runs.wait(thread.thread_id, a.assistant_id, { input: INPUT });
  assert.ok(values.__interrupt__?.length === 1, "a run of the created assistant reaches the gate");
  await client.assistants.delete(a.assistant_id);
  await expectStatus(404, () => client.assistants.get(a.assistant_id));
});

runnerOnly("assistants: an unknown configurable key is 422", async () => {
  await expectStatus(422, () => client.assistants.create({ graphId: AGENT, config: { configurable: { no_such: 1 } } }));
});

check("threads: create, get, search by metadata", async () => {
  const tag = `t-${Date.now()}`;
  const t = await client.threads.create({ metadata: { suite: tag } });
  const got = await client.threads.get(t.thread_id);
  assert.equal(got.thread_id, t.thread_id);
  assert.equal(got.metadata.suite, tag);
  assert.equal(got.status, "idle");
  const found = await client.threads.search({ metadata: { suite: tag } });
  assert.deepEqual(found.map((x) => x.thread_id), [t.thread_id]);
});

check("stream to an interrupt: metadata first, then __interrupt__", async () => {
  const { chunks } = await pausedThread();
  assert.equal(chunks[0].event, "metadata");
  assert.ok(chunks[0].data.run_id, "metadata carries the run id");
  const intr = interruptOf(chunks);
  assert.ok(intr, `no __interrupt__ in ${JSON.stringify(chunks.map((c) => c.event))}`);
  assert.ok(intr[0].id, "the interrupt has an id");
  assert.ok(intr[0].value, "the interrupt has a value");
});

check("paused thread: status interrupted, with its interrupts; getState next/tasks", async () => {
  const { thread } = await pausedThread();
  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "interrupted");
  const pending = Object.values(t.interrupts ?? {}).flat();
  assert.equal(pending.length, 1, `interrupts ${JSON.stringify(t.interrupts)}`);
  const st = await client.threads.getState(thread.thread_id);
  assert.ok(st.next.length >= 1, "state.next names the paused node");
  assert.ok(st.tasks.some((task) => task.interrupts.length === 1), "a task carries the interrupt");
  assert.ok(st.checkpoint.checkpoint_id, "state has a checkpoint id");
});

check("resume with command, then history newest first", async () => {
  const { thread } = await pausedThread();
  const chunks = await collect(
    client.runs.stream(thread.thread_id, AGENT, { command: { resume: APPROVE }, streamMode: "values" }),
  );
  const last = chunks.filter((c) => c.event === "values").at(-1);
  assert.match(answer(last.data), /Mitchell Ranch 3H/);
  assert.equal(last.data.status, "completed");
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
  const hist = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  assert.ok(hist.length >= 3, `history has ${hist.length} states`);
  const st = await client.threads.getState(thread.thread_id);
  assert.equal(hist[0].checkpoint.checkpoint_id, st.checkpoint.checkpoint_id, "newest first");
  for (let i = 1; i < hist.length; i++) {
    assert.ok(hist[i - 1].created_at >= hist[i].created_at, "created_at descends");
  }
});

check("history: each checkpoint its own step, strictly descending; the input checkpoint is step -1", async () => {
  const { thread } = await pausedThread();
  await client.runs.wait(thread.thread_id, AGENT, { command: { resume: APPROVE } });
  const hist = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  const steps = hist.map((h) => h.metadata.step);
  for (let i = 1; i < steps.length; i++) {
    assert.ok(steps[i] < steps[i - 1], `steps ${JSON.stringify(steps)} do not strictly descend`);
  }
  assert.equal(steps.at(-1), -1, `steps ${JSON.stringify(steps)}`);
  assert.equal(hist.at(-1).metadata.source, "input");
});

check("the interrupt value is the HITL request, runner's extras under one key", async () => {
  const { chunks } = await pausedThread();
  const { value } = interruptOf(chunks)[0];
  assert.deepEqual(Object.keys(value).sort(), ["action_requests", "review_configs", "runner"]);
  assert.deepEqual(Object.keys(value.action_requests[0]).sort(), ["args", "description", "name"]);
  assert.deepEqual(Object.keys(value.review_configs[0]).sort(), ["action_name", "allowed_decisions"]);
});

runnerOnly("command goto __end__ on a paused thread ends the run; the gated call never runs", async () => {
  const { thread } = await pausedThread();
  const values = await client.runs.wait(thread.thread_id, AGENT, { command: { goto: "__end__" } });
  assert.equal(values.__interrupt__, undefined);
  assert.equal(createdEntities(values), 0);
  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "idle");
  assert.deepEqual(Object.values(t.interrupts ?? {}).flat(), []);
});

runnerOnly("resuming the same interrupt twice runs the side effect once (409)", async () => {
  const { thread } = await pausedThread();
  const values = await client.runs.wait(thread.thread_id, AGENT, { command: { resume: APPROVE } });
  assert.equal(createdEntities(values), 1);
  await expectStatus(409, () => client.runs.wait(thread.thread_id, AGENT, { command: { resume: APPROVE } }));
  const st = await client.threads.getState(thread.thread_id);
  assert.equal(createdEntities(st.values), 1, "create_entity ran once");
});

check("runs.wait: paused values carry __interrupt__; resumed values the answer", async () => {
  const thread = await client.threads.create();
  const paused = await client.runs.wait(thread.thread_id, AGENT, { input: INPUT });
  assert.ok(paused.__interrupt__?.length === 1, `values ${JSON.stringify(Object.keys(paused))}`);
  const done = await client.runs.wait(thread.thread_id, AGENT, { command: { resume: APPROVE } });
  assert.match(answer(done), /Mitchell Ranch 3H.*knowledge graph/);
});

runnerOnly("runs.wait stateless", async () => {
  const values = await client.runs.wait(null, AGENT, { input: INPUT });
  assert.ok(values.__interrupt__?.length === 1);
});

check("runs.create + join; runs.get and list", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, AGENT, { input: INPUT });
  assert.ok(run.run_id);
  const values = await client.runs.join(thread.thread_id, run.run_id);
  assert.ok(values.__interrupt__ || values.messages, "join returns the values");
  const got = await client.runs.get(thread.thread_id, run.run_id);
  assert.equal(got.status, "interrupted");
  const runs = await client.runs.list(thread.thread_id);
  assert.deepEqual(runs.map((r) => r.run_id), [run.run_id]);
});

check("joinStream from -1 replays every event; from an id, only those after it", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, AGENT, {
    input: INPUT, streamMode: ["values", "updates"], streamResumable: true,
  });
  await client.runs.join(thread.thread_id, run.run_id);
  const all = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
  const withIds = all.filter((c) => c.id !== undefined);
  assert.ok(withIds.length >= 3, `replayed ${all.length} events`);
  assert.ok(interruptOf(all), "the replay includes the interrupt");
  const from = withIds[1].id;
  const rest = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: from }));
  const restIds = rest.filter((c) => c.id !== undefined).map((c) => c.id);
  assert.deepEqual(restIds, withIds.slice(2).map((c) => c.id), "exactly the events after the id, once");
});

check("multitask reject on a busy thread is 409", async () => {
  const { thread } = await busyRun();
  await expectStatus(409, () =>
    client.runs.create(thread.thread_id, AGENT, { input: INPUT, multitaskStrategy: "reject" }),
  );
});

check("cancel a running run: run interrupted, thread idle", async () => {
  const { thread, run } = await busyRun();
  await client.runs.cancel(thread.thread_id, run.run_id, true);
  const got = await client.runs.get(thread.thread_id, run.run_id);
  assert.equal(got.status, "interrupted");
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
});

check("updateState as a node, then read it back", async () => {
  const { thread } = await pausedThread();
  const res = await client.threads.updateState(thread.thread_id, { values: { error: "set by a reviewer" } });
  assert.ok(res.configurable?.checkpoint_id ?? res.checkpoint?.checkpoint_id, `update returned ${JSON.stringify(res)}`);
  const st = await client.threads.getState(thread.thread_id);
  assert.equal(st.values.error, "set by a reviewer");
});

check("replay from an earlier checkpoint", async () => {
  const { thread } = await pausedThread();
  const hist = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  const first = hist.at(-1);
  const values = await client.runs.wait(thread.thread_id, AGENT, { checkpointId: first.checkpoint.checkpoint_id });
  assert.ok(values.__interrupt__?.length === 1, "the replay reaches the gate again");
});

check("interruptBefore pauses before the node; a run without input goes on", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, AGENT, { input: INPUT, interruptBefore: ["initial_llm_call"] });
  const st = await client.threads.getState(thread.thread_id);
  assert.deepEqual(st.next, ["initial_llm_call"]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
  await client.runs.wait(thread.thread_id, AGENT, { interruptAfter: "*" });
  const after = await client.threads.getState(thread.thread_id);
  assert.deepEqual(after.next, ["tool_node"], "paused after initial_llm_call");
  assert.ok(after.values.messages.length > 0);
  const gate = await client.runs.wait(thread.thread_id, AGENT);
  assert.ok(gate.__interrupt__?.length === 1, "the run goes on to the approval gate");
});

runnerOnly("interruptBefore an unknown node is 422", async () => {
  const thread = await client.threads.create();
  const err = await expectStatus(422, () => client.runs.create(thread.thread_id, AGENT, { interruptBefore: ["no_such_node"] }));
  assert.match(err.message, /no_such_node/);
});

runnerOnly("command update and goto: values through the reducers, the thread continues at the node", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, AGENT, { input: INPUT, interruptBefore: ["memory_node"] });
  const values = await client.runs.wait(thread.thread_id, AGENT, {
    command: { update: { recent_entity_context: ["w-1"] }, goto: "output_format" },
  });
  assert.deepEqual(values.recent_entity_context, ["w-1"]);
  assert.equal(values.__interrupt__, undefined, "output_format ends the run without the gate");
  const st = await client.threads.getState(thread.thread_id);
  assert.equal(st.metadata.node, "memory_record", "output_format goes on to memory_record, the last node");
  await expectStatus(422, () => client.runs.create(thread.thread_id, AGENT, { command: { goto: "no_such_node" } }));
});

check("cancel with action rollback: the run is deleted, the thread as before it", async () => {
  const { thread, run } = await busyRun();
  await client.runs.cancel(thread.thread_id, run.run_id, true, "rollback");
  await expectStatus(404, () => client.runs.get(thread.thread_id, run.run_id));
  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "idle");
  assert.deepEqual(t.values, {});
});

check("multitaskStrategy rollback replaces the running run", async () => {
  const { thread, run } = await busyRun();
  const next = await client.runs.create(thread.thread_id, AGENT, { input: INPUT, multitaskStrategy: "rollback" });
  const values = await client.runs.join(thread.thread_id, next.run_id);
  assert.ok(values.__interrupt__?.length === 1, "the new run reaches the gate");
  const { messages } = (await client.threads.getState(thread.thread_id)).values;
  assert.equal(messages.filter((m) => m.type === "human").length, 1, "the rolled-back run's input is gone");
  const runs = await client.runs.list(thread.thread_id);
  assert.deepEqual(runs.map((r) => r.run_id), [next.run_id]);
  await expectStatus(404, () => client.runs.get(thread.thread_id, run.run_id));
});

check("threads.joinStream joins the thread's runs; lastEventId resumes after an event", async () => {
  const thread = await client.threads.create();
  // untilEnd reads a thread stream to its run's end, then leaves it.
  const untilEnd = async (opts) => {
    const ctl = new AbortController();
    const out = [];
    for await (const c of client.threads.joinStream(thread.thread_id, { ...opts, signal: ctl.signal })) {
      out.push(c);
      if (c.event === "end") break;
    }
    ctl.abort();
    return out;
  };
  const joined = untilEnd({});
  joined.catch(() => {}); // awaited below; a failure before that is no crash
  await new Promise((r) => setTimeout(r, 100));
  const run = await client.runs.create(thread.thread_id, AGENT, { input: INPUT, streamMode: ["updates"] });
  const chunks = await joined;
  assert.equal(chunks[0].event, "metadata");
  assert.equal(chunks[0].data.run_id, run.run_id);
  assert.ok(interruptOf(chunks), "the joined run reaches the gate");
  const rest = await untilEnd({ lastEventId: chunks[1].id });
  assert.deepEqual(rest.map((c) => c.id), chunks.slice(2).map((c) => c.id));
});

// agent-chat-ui (LangChain's chat front end) drives a server through the
// SDK's useStream hook with these calls, options as it sends them.
const UI_STREAM = {
  streamMode: ["values", "messages-tuple", "custom"],
  streamSubgraphs: true,
  streamResumable: true,
  onDisconnect: "continue",
};

// headCheckpoint is what useStream sends as `checkpoint` to go on from the
// newest state of its history (fetchStateHistory: limit 10).
async function headCheckpoint(threadId) {
  const [head] = await client.threads.getHistory(threadId, { limit: 10 });
  const checkpoint = { ...head.checkpoint };
  delete checkpoint.thread_id;
  return { head, checkpoint };
}

check("agent-chat-ui: info, submit to the approval, approve with decisions, list, a second turn", async () => {
  const info = await fetch(`${process.env.RUNNER_URL}/info`, { headers: { "X-Api-Key": process.env.LANGGRAPH_API_KEY } });
  assert.ok(info.ok, `GET /info ${info.status}`);
  const thread = await client.threads.create({ threadId: undefined, metadata: undefined });
  const human = { id: crypto.randomUUID(), type: "human", content: INPUT.messages[0].content };
  const first = await collect(client.runs.stream(thread.thread_id, AGENT, { ...UI_STREAM, input: { messages: [human] } }));
  const values = first.filter((c) => c.event === "values");
  assert.ok(values.length > 0, `no values events in ${JSON.stringify(first.map((c) => c.event))}`);
  assert.ok(values.at(-1).data.__interrupt__?.[0]?.value?.action_requests, "the last values event carries the HITL request");
  const { head, checkpoint } = await headCheckpoint(thread.thread_id);
  assert.ok(head.tasks.some((t) => t.interrupts.length === 1), "history's head has the pending interrupt");
  const resumed = await collect(client.runs.stream(thread.thread_id, AGENT, {
    ...UI_STREAM, input: {}, checkpoint, command: { resume: { decisions: [{ type: "approve" }] } },
  }));
  const done = resumed.filter((c) => c.event === "values").at(-1).data;
  assert.match(answer(done), /Mitchell Ranch 3H/);
  assert.equal(createdEntities(done), 1, "the approved call ran once");
  const listed = await client.threads.search({ metadata: { graph_id: AGENT }, limit: 100 });
  assert.ok(listed.some((t) => t.thread_id === thread.thread_id), "the thread list has the thread");
  const again = await headCheckpoint(thread.thread_id);
  const second = { id: crypto.randomUUID(), type: "human", content: "Thanks." };
  const turn = await collect(client.runs.stream(thread.thread_id, AGENT, {
    ...UI_STREAM, input: { messages: [second] }, checkpoint: again.checkpoint,
  }));
  const last = turn.filter((c) => c.event === "values").at(-1).data;
  assert.ok(last.messages.some((m) => m.id === human.id) && last.messages.some((m) => m.id === second.id),
    "the second turn goes on from the first");
});

served("crons", "crons: create on a thread and stateless, search, count, update, delete; a bad schedule is 422", async () => {
  const YEARLY = "0 0 1 1 *"; // never due while the suite runs
  const t = await client.threads.create();
  const onThread = await client.crons.createForThread(t.thread_id, AGENT, { schedule: YEARLY, input: INPUT });
  assert.equal(onThread.thread_id, t.thread_id);
  assert.equal(onThread.schedule, YEARLY);
  assert.match(onThread.next_run_date, /-01-01T00:00:00/);
  const stateless = await client.crons.create(AGENT, { schedule: YEARLY, input: INPUT, onRunCompleted: "keep" });
  assert.equal(stateless.thread_id ?? null, null);
  const found = await client.crons.search({ threadId: t.thread_id });
  assert.deepEqual(found.map((c) => c.cron_id), [onThread.cron_id]);
  assert.equal(found[0].payload.assistant_id, AGENT);
  assert.equal(await client.crons.count({ threadId: t.thread_id }), 1);
  const off = await client.crons.update(stateless.cron_id, { enabled: false, endTime: "2099-01-01T00:00:00Z" });
  assert.equal(off.enabled, false);
  assert.equal(off.end_time, "2099-01-01T00:00:00Z");
  const enabled = await client.crons.search({ assistantId: AGENT, enabled: true, limit: 100 });
  assert.ok(!enabled.some((c) => c.cron_id === stateless.cron_id), "a disabled cron is not enabled");
  await expectStatus(422, () => client.crons.create(AGENT, { schedule: "0 25 * * *" }));
  for (const c of [onThread, stateless]) await client.crons.delete(c.cron_id);
  await expectStatus(404, () => client.crons.update(onThread.cron_id, { enabled: true }));
});

check("store: put, get (null when missing), search by prefix and filter, namespaces, delete", async () => {
  const run = `s${Date.now()}`; // this run's own namespace, apart from earlier runs'
  await client.store.putItem([run, "u1"], "editor", { fact: "uses Helix", kind: "pref" });
  await client.store.putItem([run, "u1", "notes"], "n1", { fact: "likes tea", kind: "note" });
  await client.store.putItem([run, "u2"], "editor", { fact: "uses vim", kind: "pref" });
  const got = await client.store.getItem([run, "u1"], "editor");
  assert.deepEqual(got.namespace, [run, "u1"]);
  assert.equal(got.key, "editor");
  assert.deepEqual(got.value, { fact: "uses Helix", kind: "pref" });
  assert.ok(got.created_at && got.updated_at, `item ${JSON.stringify(got)}`);
  assert.equal(await client.store.getItem([run, "u1"], "nope"), null);
  const prefs = await client.store.searchItems([run], { filter: { kind: "pref" } });
  assert.deepEqual(prefs.items.map((i) => i.namespace.join(".")).sort(), [`${run}.u1`, `${run}.u2`]);
  const u1 = await client.store.searchItems([run, "u1"]);
  assert.deepEqual(u1.items.map((i) => i.key).sort(), ["editor", "n1"], "a prefix takes the namespaces below it");
  const ns = await client.store.listNamespaces({ prefix: [run], maxDepth: 2 });
  assert.deepEqual(ns.namespaces, [[run, "u1"], [run, "u2"]]);
  await client.store.deleteItem([run, "u1"], "editor");
  assert.equal(await client.store.getItem([run, "u1"], "editor"), null);
});

check("unknown thread is 404", async () => {
  await expectStatus(404, () => client.threads.get("00000000-0000-4000-8000-000000000000"));
});

let failed = 0;
let skipped = 0;
for (const [name, fn, skip] of checks) {
  if (skip) {
    skipped++;
    console.log(`skip ${name} (${skip === true ? "runner only" : skip})`);
    continue;
  }
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}\n     ${err.stack ?? err}`);
  }
}
console.log(`${checks.length - failed - skipped}/${checks.length - skipped} passed, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
