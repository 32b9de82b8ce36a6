// agent-chat-ui's hook, run for real: the SDK's React useStream, rendered
// by react-test-renderer (no browser), submits as LangChain's agent-chat-ui
// does, pauses at seed 000's approval, shows the HITL request as its
// interrupt, resumes with {decisions}, and ends with the answer in its
// messages. Run by sdk_test.go with RUNNER_URL and LANGGRAPH_API_KEY set.
import assert from "node:assert/strict";
import React from "react";
import TestRenderer from "react-test-renderer";
import { useStream } from "sdk2/react";

let chat; // the hook's latest value
function Chat() {
  chat = useStream({
    apiUrl: process.env.RUNNER_URL,
    apiKey: process.env.LANGGRAPH_API_KEY,
    assistantId: "rule_37",
    fetchStateHistory: true,
    onCustomEvent: () => {},
  });
  void chat.messages; // as the UI reads them: streams messages-tuple too
  return null;
}

// until waits for the hook to reach a state, for at most 15 s.
async function until(what, cond) {
  for (let waited = 0; waited < 15000; waited += 50) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`useStream never showed ${what}; error: ${chat?.error}`);
}

const view = TestRenderer.create(React.createElement(Chat));
await until("a first render", () => chat);
chat.submit(
  { messages: [{ type: "human", content: "Add the new Mitchell Ranch 3H well." }] },
  { streamMode: ["values"], streamSubgraphs: true, streamResumable: true },
);
await until("the approval request", () => !chat.isLoading && chat.interrupt);
assert.equal(chat.interrupt.value.action_requests[0].name, "create_entity");
assert.ok(chat.history.length > 0, "the thread's history is fetched");
chat.submit({}, { command: { resume: { decisions: [{ type: "approve" }] } } });
await until("the answer", () => !chat.isLoading && !chat.interrupt &&
  chat.messages.some((m) => m.type === "ai" && /Mitchell Ranch 3H/.test(m.content)));
assert.equal(chat.error, undefined);
view.unmount();
console.log("ok   useStream: submit, approval interrupt, resume with decisions, answer");

// "Mark as Resolved": a new thread paused at the approval, which the UI
// ends with command goto __end__; the gated call never runs.
chat = undefined;
const second = TestRenderer.create(React.createElement(Chat));
await until("a first render of a new chat", () => chat);
chat.submit(
  { messages: [{ type: "human", content: "Add the new Mitchell Ranch 3H well." }] },
  { streamMode: ["values"], streamSubgraphs: true, streamResumable: true },
);
await until("the second approval request", () => !chat.isLoading && chat.interrupt);
chat.submit({}, { command: { goto: "__end__" } }); // as agent-chat-ui's handleResolve sends it
await until("the resolved thread", () => !chat.isLoading && !chat.interrupt);
assert.equal(chat.error, undefined);
assert.ok(!(chat.values.tool_results ?? []).some((r) => r.tool_name === "create_entity"), "create_entity did not run");
second.unmount();
console.log("ok   useStream: Mark as Resolved (command goto __end__) ends the paused thread");
