// The rule_37 agent of runner's seed 000, as a LangGraph JS graph, so
// compat.mjs can be run against LangGraph's own server: the same graph
// id, node names, state keys and approval interrupt the suite drives,
// with a scripted model in place of the LLM (its first reply of a turn is
// slow, as in the runner test, so a run is still busy when the suite
// cancels it or starts a second one).
import { Annotation, END, START, StateGraph, interrupt, messagesStateReducer } from "@langchain/langgraph";
import { AIMessage, ToolMessage } from "@langchain/core/messages";

const State = Annotation.Root({
  messages: Annotation({ reducer: messagesStateReducer, default: () => [] }),
  tool_results: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  recent_entity_context: Annotation({ reducer: (_, b) => b, default: () => [] }),
  status: Annotation({ reducer: (_, b) => b, default: () => "running" }),
  error: Annotation({ reducer: (_, b) => b, default: () => "" }),
});

const WELL = "Mitchell Ranch 3H";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// model is the scripted LLM: a request to add the well asks for
// create_entity; the tool's result gets the answer; anything else a reply.
async function model(messages) {
  const last = messages.at(-1);
  if (last?._getType?.() === "tool") return new AIMessage(`Added ${WELL} to the knowledge graph.`);
  if (String(last?.content ?? "").includes(WELL)) {
    await sleep(400);
    return new AIMessage({
      content: "",
      tool_calls: [{ id: `call_${Date.now()}`, name: "create_entity", args: { type: "well", name: WELL } }],
    });
  }
  return new AIMessage("You're welcome.");
}

// approved reads either resume form: {approved} or HITL {decisions}.
function approved(verdict) {
  if (verdict?.decisions) return verdict.decisions[0]?.type === "approve";
  return verdict?.approved === true;
}

const graph = new StateGraph(State)
  .addNode("system_prompt_node", () => ({ status: "running", error: "" }))
  .addNode("memory_node", () => ({}))
  .addNode("resume_guard", () => ({}))
  .addNode("initial_llm_call", async (s) => ({ messages: [await model(s.messages)] }))
  .addNode("tool_node", (s) => {
    const calls = s.messages.at(-1).tool_calls ?? [];
    const messages = [];
    const results = [];
    for (const call of calls) {
      const verdict = interrupt({
        action_requests: [{ name: call.name, args: call.args, description: `Create the ${call.args.type} ${call.args.name}.` }],
        review_configs: [{ action_name: call.name, allowed_decisions: ["approve", "reject"] }],
        runner: { rule: "platform:hitl_on_mutating_capability" },
      });
      const ok = approved(verdict);
      messages.push(new ToolMessage({ tool_call_id: call.id, content: ok ? "created" : "rejected by the reviewer" }));
      results.push({ tool_name: call.name, ok });
    }
    return { messages, tool_results: results };
  })
  .addNode("output_format", (s) => ({ status: s.error ? "failed" : "completed" }))
  .addNode("memory_record", () => ({}))
  .addEdge(START, "system_prompt_node")
  .addEdge("system_prompt_node", "memory_node")
  .addEdge("memory_node", "resume_guard")
  .addEdge("resume_guard", "initial_llm_call")
  .addConditionalEdges("initial_llm_call", (s) => (s.messages.at(-1).tool_calls?.length ? "tool_node" : "output_format"), [
    "tool_node",
    "output_format",
  ])
  .addEdge("tool_node", "initial_llm_call")
  .addEdge("output_format", "memory_record")
  .addEdge("memory_record", END)
  .compile();

export { graph };
