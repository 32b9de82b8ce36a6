// The 004 planner ↔ tool_executor loop on LangGraph.js, with the same
// in-process nodes as runner's BenchmarkStep. Prints µs per node step
// without a checkpointer and with the SQLite checkpointer.
//
//   node fraud.mjs [RUNS]
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TOOLS = ["context_tool", "pattern_tool", "similarity_tool", "reasoning_tool", "recommendation_tool", "rule_draft_tool"];
const STEPS_PER_RUN = 14;

const State = Annotation.Root({
  transaction_id: Annotation(),
  next_action: Annotation({ reducer: (_, b) => b, default: () => "" }),
  step_count: Annotation({ reducer: (_, b) => b, default: () => 0 }),
  completed_steps: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  evidence: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  status: Annotation({ reducer: (_, b) => b, default: () => "PENDING" }),
});

const nextTool = (done) => TOOLS.find((t) => !done.includes(t)) ?? "COMPLETE";

function build(checkpointer) {
  return new StateGraph(State)
    .addNode("planner", (s) => ({ next_action: nextTool(s.completed_steps), step_count: s.step_count + 1 }))
    .addNode("tool_executor", (s) => ({ completed_steps: [s.next_action], evidence: [s.next_action + ": ok"] }))
    .addNode("completion", () => ({ status: "COMPLETED" }))
    .addEdge(START, "planner")
    .addConditionalEdges("planner", (s) =>
      s.next_action === "COMPLETE" || s.step_count >= 20 ? "completion" : "tool_executor")
    .addEdge("tool_executor", "planner")
    .addEdge("completion", END)
    .compile({ checkpointer });
}

async function measure(name, graph, runs) {
  const input = { transaction_id: "txn_1001" };
  for (let i = 0; i < Math.min(50, runs); i++) { // warm-up
    await graph.invoke(input, { configurable: { thread_id: `warm${i}` }, recursionLimit: 50 });
  }
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) {
    const out = await graph.invoke(input, { configurable: { thread_id: `t${i}` }, recursionLimit: 50 });
    if (out.status !== "COMPLETED") throw new Error("not completed");
  }
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / (runs * STEPS_PER_RUN);
  console.log(`${name}\t${us.toFixed(1)} µs/step`);
}

const runs = Number(process.argv[2] ?? 300);
await measure("langgraph-no-checkpointer", build(undefined), runs);
const dir = mkdtempSync(join(tmpdir(), "lg-"));
await measure("langgraph-sqlite", build(SqliteSaver.fromConnString(join(dir, "lg.db"))), Math.max(1, runs / 3));
