// An MCP server (the official TypeScript SDK's low-level Server, over stdio) that does what
// well-behaved reference servers never do, for toolsmith's client tests: lists its tools two
// per page, sleeps until cancelled (and records the cancellation), dies mid-call, reports
// errors in-band and as JSON-RPC errors, grows a tool and says so, and declares a name and a
// schema no provider accepts as they are.
//
// Environment: CANCEL_LOG, a file each cancelled `sleep` call appends a line to.
import { appendFileSync, writeFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

const object = (properties = {}, required = []) => ({ type: "object", properties, required });
const tools = [
  { name: "sleep", description: "Sleeps ms milliseconds.", inputSchema: object({ ms: { type: "integer" } }, ["ms"]) },
  { name: "die", description: "Exits the server.", inputSchema: object() },
  { name: "fail", description: "Fails in-band.", inputSchema: object() },
  { name: "refuse", description: "Fails with a JSON-RPC error.", inputSchema: object() },
  { name: "grow", description: "Adds the tool `grown`.", inputSchema: object() },
  { name: "odd.name/x", description: "A name with dots and slashes.", inputSchema: object() },
  { name: "bad_schema", description: "A schema that does not compile.", inputSchema: { type: "object", properties: { a: { type: "nonsense" } } } },
  { name: "write", description: "Writes text to a file anywhere.", inputSchema: object({ path: { type: "string" }, text: { type: "string" } }, ["path", "text"]) },
  { name: "structured", description: "Structured content.", inputSchema: object({ n: { type: "integer" } }, ["n"]),
    outputSchema: object({ double: { type: "integer" } }, ["double"]) },
];

const server = new Server({ name: "awkward", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });

server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  const start = Number(request.params?.cursor ?? 0);
  const page = tools.slice(start, start + 2);
  const next = start + 2 < tools.length ? String(start + 2) : undefined;
  return next ? { tools: page, nextCursor: next } : { tools: page };
});

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const args = request.params.arguments ?? {};
  switch (request.params.name) {
    case "sleep":
      return await new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "slept" }] }), args.ms);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          if (process.env.CANCEL_LOG) appendFileSync(process.env.CANCEL_LOG, `cancelled ${extra.requestId}\n`);
          reject(new Error("cancelled"));
        });
      });
    case "die":
      process.stderr.write("dying on purpose\n");
      process.exit(3);
    case "fail":
      return { content: [{ type: "text", text: "it failed" }], isError: true };
    case "refuse":
      throw new McpError(ErrorCode.InvalidParams, "refused on purpose");
    case "grow":
      if (!tools.some((t) => t.name === "grown")) {
        tools.push({ name: "grown", description: "Grown.", inputSchema: object() });
      }
      await server.sendToolListChanged();
      return { content: [{ type: "text", text: "grown" }] };
    case "odd.name/x":
      return { content: [{ type: "text", text: "odd" }] };
    case "structured":
      return { content: [{ type: "text", text: JSON.stringify({ double: args.n * 2 }) }], structuredContent: { double: args.n * 2 } };
    case "write":
      try {
        writeFileSync(args.path, args.text);
        return { content: [{ type: "text", text: `wrote ${args.path}` }] };
      } catch (e) {
        return { content: [{ type: "text", text: String(e.message) }], isError: true };
      }
    case "grown":
      return { content: [{ type: "text", text: "I am new" }] };
    default:
      throw new McpError(ErrorCode.InvalidParams, `no tool ${request.params.name}`);
  }
});

await server.connect(new StdioServerTransport());
