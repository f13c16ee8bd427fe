// The peer of toolsmith serve's chat route in the service benchmark: a Node HTTP server that
// answers the AI SDK's chat request with `streamText` (one tool, up to five steps) and
// `pipeUIMessageStreamToResponse`, the way a Next.js route handler does, on the same loopback
// model (OpenAI Chat Completions at the URL given).
//
//   node server.mjs <model base URL>     # prints "listening on PORT"
import { createServer } from "node:http";
import { createOpenAI } from "@ai-sdk/openai";
import { convertToModelMessages, jsonSchema, stepCountIs, streamText, tool } from "ai";

const provider = createOpenAI({ baseURL: process.argv[2], apiKey: "bench" });
const model = provider.chat("mock");
const calculator = tool({
  description: "Evaluate an arithmetic expression.",
  inputSchema: jsonSchema({
    type: "object",
    properties: { expression: { type: "string" } },
    required: ["expression"],
  }),
  execute: async ({ expression }) => ({ expression, result: 42 }),
});

createServer(async (request, response) => {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const { messages } = JSON.parse(Buffer.concat(chunks).toString());
  const result = streamText({
    model,
    messages: await convertToModelMessages(messages),
    tools: { calculator },
    stopWhen: stepCountIs(5),
  });
  result.pipeUIMessageStreamToResponse(response);
}).listen(0, "127.0.0.1", function () {
  console.log(`listening on ${this.address().port}`);
});
