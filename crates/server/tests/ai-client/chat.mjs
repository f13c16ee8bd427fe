// Drives toolsmith serve's chat route with the AI SDK's own client code, as a web app's useChat
// does: DefaultChatTransport sends the chat, readUIMessageStream builds the assistant message
// from the UI message stream. Prints one JSON line per turn: the assistant message's parts.
//
//   node chat.mjs <service URL> <account secret> <agent id> <chat id>
//
// Turn 1 asks a question; when the answer waits for an approval, turn 2 approves it.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, secret, agent, chatId] = process.argv.slice(2);
const transport = new DefaultChatTransport({
  api: `${url}/agents/${agent}/chat`,
  headers: { Authorization: `Bearer ${secret}` },
});

// As useChat does, an answer to the assistant's last message continues that message.
async function turn(messages) {
  const stream = await transport.sendMessages({
    chatId,
    messages,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  let last;
  const previous = messages.at(-1);
  const message = previous.role === "assistant" ? previous : undefined;
  for await (const next of readUIMessageStream({ message, stream, onError: (e) => { throw e; } })) {
    last = next;
  }
  return last;
}

const user = { id: "u1", role: "user", parts: [{ type: "text", text: "What is 6 * 7?" }] };
let answer = await turn([user]);
console.log(JSON.stringify(answer.parts));
const waiting = answer.parts.find((p) => p.state === "approval-requested");
if (waiting) {
  const approved = {
    ...answer,
    parts: answer.parts.map((p) =>
      p === waiting
        ? { ...p, state: "approval-responded", approval: { ...p.approval, approved: true } }
        : p,
    ),
  };
  answer = await turn([user, approved]);
  console.log(JSON.stringify(answer.parts));
}
