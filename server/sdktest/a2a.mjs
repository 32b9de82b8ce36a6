// The official A2A JavaScript SDK's client, unchanged, against a started
// `runner serve`: it reads seed 000's rule_37 agent card, sends a message
// that pauses at the approval gate (an input-required task), answers the
// task, which resumes the same thread to the answer, reads the task back,
// and streams a second message. Run by sdk_test.go with RUNNER_URL and
// LANGGRAPH_API_KEY set.
import assert from "node:assert/strict";
import { A2AClient } from "@a2a-js/sdk/client";

const key = process.env.LANGGRAPH_API_KEY;
const fetchImpl = (url, init = {}) => fetch(url, { ...init, headers: { ...init.headers, "x-api-key": key } });
const client = await A2AClient.fromCardUrl(`${process.env.RUNNER_URL}/.well-known/agent-card.json?assistant_id=rule_37`, { fetchImpl });

const ask = (text, extra = {}) => ({
  message: { kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "text", text }], ...extra },
});
const result = (res) => {
  assert.equal(res.error, undefined, JSON.stringify(res.error));
  return res.result;
};

const paused = result(await client.sendMessage(ask("Add the new Mitchell Ranch 3H well.")));
assert.equal(paused.kind, "task");
assert.equal(paused.status.state, "input-required");
const request = paused.status.message.parts.find((p) => p.kind === "data").data.interrupts[0].value;
assert.equal(request.action_requests[0].name, "create_entity");
console.log("ok   message/send: the approval gate is an input-required task");

const answered = result(await client.sendMessage({
  message: { kind: "message", messageId: crypto.randomUUID(), role: "user", taskId: paused.id, contextId: paused.contextId,
    parts: [{ kind: "data", data: { decisions: [{ type: "approve" }] } }] },
}));
assert.equal(answered.id, paused.id);
assert.equal(answered.contextId, paused.contextId);
assert.equal(answered.status.state, "completed");
assert.match(answered.artifacts[0].parts[0].text, /Mitchell Ranch 3H/);
console.log("ok   message/send: answering the task resumes its thread to the answer");

const got = result(await client.getTask({ id: paused.id }));
assert.equal(got.status.state, "completed");
assert.match(got.artifacts[0].parts[0].text, /Mitchell Ranch 3H/);
console.log("ok   tasks/get: the task as it stands");

const events = [];
for await (const ev of client.sendMessageStream(ask("Add the new Mitchell Ranch 4H well."))) events.push(ev);
assert.equal(events[0].kind, "task");
const last = events.at(-1);
assert.equal(last.kind, "status-update");
assert.equal(last.final, true);
assert.equal(last.status.state, "input-required");
console.log("ok   message/stream: the task, then its final status");
console.log("4/4 passed");
