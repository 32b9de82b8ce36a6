// Starts LangGraph.js's Agent Server (@langchain/langgraph-api, its
// in-memory storage) on 127.0.0.1 with the 004 loop as the assistant
// fraud_investigator, as runner serve names it.
//
//   node serve.mjs PORT
import { startServer } from "@langchain/langgraph-api/server";

const port = Number(process.argv[2] ?? 2025);
await startServer({ port, nWorkers: 10, host: "127.0.0.1", cwd: process.cwd(),
  graphs: { fraud_investigator: "./graph.mjs:graph" } });
console.error(`peer: serving on http://127.0.0.1:${port}`);
