// Drives runner as an MCP server with the TypeScript SDK's client, as a
// desktop or IDE client would: over streamable HTTP (RUNNER_URL, with
// RUNNER_KEY) or over stdio (RUNNER_BIN with RUNNER_ARGS, a JSON list).
// It lists the assistants, runs TOOL with ITEM, answering the approval
// form it is asked, continues the thread with a second item, and asks
// again from a client that cannot fill forms. It prints what it saw as
// JSON; the Go test that starts it checks it, and that each approved
// call ran once.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;

function transport() {
  if (env.RUNNER_URL) {
    return new StreamableHTTPClientTransport(new URL(env.RUNNER_URL + "/mcp"), {
      requestInit: { headers: { "x-api-key": env.RUNNER_KEY } },
    });
  }
  return new StdioClientTransport({ command: env.RUNNER_BIN, args: JSON.parse(env.RUNNER_ARGS), stderr: "inherit" });
}

async function connect(capabilities) {
  const client = new Client({ name: "runner-compat", version: "1.0.0" }, { capabilities });
  await client.connect(transport());
  return client;
}

const asked = [];
const forms = await connect({ elicitation: { form: {} } });
forms.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push({ message: req.params.message, schema: req.params.requestedSchema });
  return { action: "accept", content: { approved: true } };
});
const tools = (await forms.listTools()).tools.map((t) => ({ name: t.name, input: t.inputSchema }));
const first = await forms.callTool({ name: env.TOOL, arguments: { item: env.ITEM } });
const thread = first._meta?.["dev.runner/thread_id"];
const second = await forms.callTool({ name: env.TOOL, arguments: { item: env.ITEM + " again", thread_id: thread } });
await forms.close();

const plain = await connect({});
const unanswered = await plain.callTool({ name: env.TOOL, arguments: { item: "unanswered" } });
await plain.close();

console.log(JSON.stringify({ tools, asked, first, second, unanswered }));
