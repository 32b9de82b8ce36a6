// The 004 planner ↔ tool_executor loop of ../fraud.mjs, as a graph the
// LangGraph.js server loads (it brings its own checkpointer).
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";

const TOOLS = ["context_tool", "pattern_tool", "similarity_tool", "reasoning_tool", "recommendation_tool", "rule_draft_tool"];

const State = Annotation.Root({
  transaction_id: Annotation(),
  next_action: Annotation({ reducer: (_, b) => b, default: () => "" }),
  step_count: Annotation({ reducer: (_, b) => b, default: () => 0 }),
  completed_steps: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  evidence: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  status: Annotation({ reducer: (_, b) => b, default: () => "PENDING" }),
});

const nextTool = (done) => TOOLS.find((t) => !done.includes(t)) ?? "COMPLETE";

export const graph = new StateGraph(State)
  .addNode("planner", (s) => ({ next_action: nextTool(s.completed_steps), step_count: s.step_count + 1 }))
  .addNode("tool_executor", (s) => ({ completed_steps: [s.next_action], evidence: [s.next_action + ": ok"] }))
  .addNode("completion", () => ({ status: "COMPLETED" }))
  .addEdge(START, "planner")
  .addConditionalEdges("planner", (s) =>
    s.next_action === "COMPLETE" || s.step_count >= 20 ? "completion" : "tool_executor")
  .addEdge("tool_executor", "planner")
  .addEdge("completion", END)
  .compile();
