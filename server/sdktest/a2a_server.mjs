// An A2A agent served with the official A2A JS SDK's server, for runner's
// a2a tool to call: "book ..." asks which day (an input-required task);
// an answer to that task books it; anything else is echoed. It requires
// the bearer token A2A_KEY, listens on a free port and prints it.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler } from "@a2a-js/sdk/server";

const card = {
  name: "booker", description: "Books a table, asking for the day.", protocolVersion: "0.3.0", version: "1.0.0",
  url: "http://127.0.0.1/", preferredTransport: "JSONRPC", capabilities: { streaming: false },
  defaultInputModes: ["text"], defaultOutputModes: ["text"], skills: [],
};

const textOf = (msg) => msg.parts.filter((p) => p.kind === "text").map((p) => p.text).join("\n");

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx;
    const text = textOf(userMessage);
    const status = (state, reply) => ({
      kind: "status-update", taskId, contextId, final: true,
      status: { state, message: { kind: "message", role: "agent", messageId: randomUUID(), taskId, contextId, parts: [{ kind: "text", text: reply }] } },
    });
    if (!task) bus.publish({ kind: "task", id: taskId, contextId, status: { state: "submitted" }, history: [userMessage] });
    if (!task && text.startsWith("book")) bus.publish(status("input-required", "For which day?"));
    else if (task) bus.publish(status("completed", `Booked for ${text}.`));
    else bus.publish(status("completed", `echo: ${text}`));
    bus.finished();
  },
  async cancelTask() {},
};

const rpc = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), executor));

const server = http.createServer(async (req, res) => {
  if (req.headers.authorization !== `Bearer ${process.env.A2A_KEY}`) {
    res.writeHead(401).end();
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  const answer = await rpc.handle(JSON.parse(body));
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
});
server.listen(0, "127.0.0.1", () => console.log(`listening ${server.address().port}`));
