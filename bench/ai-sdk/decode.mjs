// The Vercel AI SDK decoding the same fixtures as toolsmith's `decode_throughput` example, for
// scripts/bench-decode-compare.sh. Prints one JSON line per provider directory.
//
// Usage: [CHUNK=event|BYTES] node_modules/.bin/node decode.mjs [SECONDS] [DIR...]
//   (default 3 s per directory, every directory; node_modules/.bin/node is the Node 22 that
//   package.json pins, since the SDK requires Node >= 22)
//
// What is measured: for each fixture, the SDK's real provider model is called through
// `doStream` (the LanguageModelV4 API of these versions) with a custom `fetch` that answers
// with the fixture's SSE body from memory, one chunk per event (the same chunks the Rust side
// gets); the returned stream is drained and its parts counted. This includes what every
// `doStream` call does besides decoding (building the request body and headers, the fetch
// wrapper), which is small next to decoding a stream of tens of events; the SSE parsing is the
// SDK's own (`eventsource-parser` inside `@ai-sdk/provider-utils`).

import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURES = process.env.FIXTURES ?? join(here, '../../crates/providers/fixtures');

// Synthetic broken fixtures: they end in an error by design (same list as the Rust side).
const BROKEN = ['duplicate-message-start', 'spliced-message-start', 'parallel-tool-call-wrapper'];

// The body of the response the next `fetch` returns.
let current = [];
const fetch = async () =>
  new Response(
    new ReadableStream({
      start(controller) {
        for (const chunk of current) controller.enqueue(chunk);
        controller.close();
      },
    }),
    { status: 200, headers: { 'content-type': 'text/event-stream' } },
  );

const settings = { fetch, apiKey: 'x' };
const openai = createOpenAI(settings);

// Per directory: the model, and how a `.chunks.txt` line is framed (as the real API sends it).
const WIRES = {
  'openai-chat': { model: openai.chat('gpt-4.1-mini'), eventNames: false, done: true },
  anthropic: { model: createAnthropic(settings)('claude-sonnet-4-5'), eventNames: true, done: false },
  'openai-responses': { model: openai.responses('gpt-5-mini'), eventNames: true, done: false },
  'openai-compatible-local': { model: openai.responses('local-model'), eventNames: true, done: false },
  google: { model: createGoogleGenerativeAI(settings)('gemini-2.5-flash'), eventNames: false, done: false },
};

const prompt = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }];

function frame(lines, wire) {
  let body = '';
  for (const line of lines) {
    if (wire.eventNames) {
      try {
        const type = JSON.parse(line).type;
        if (typeof type === 'string') body += `event: ${type}\n`;
      } catch {}
    }
    body += `data: ${line}\n\n`;
  }
  if (wire.done) body += 'data: [DONE]\n\n';
  return body;
}

// One chunk per SSE event, split after each blank line (byte-identical to the Rust side).
function splitEvents(text) {
  const bytes = new TextEncoder().encode(text);
  const chunks = [];
  let start = 0;
  for (let i = 0; i + 1 < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i + 1] === 10) {
      chunks.push(bytes.subarray(start, i + 2));
      start = i + 2;
      i++;
    }
  }
  if (start < bytes.length) chunks.push(bytes.subarray(start));
  return chunks;
}

// CHUNK: `event` (default) or a size in bytes: the body cut into fixed-size chunks instead,
// splitting lines and UTF-8 sequences anywhere (the same variable the Rust side reads).
const CHUNK = process.env.CHUNK && process.env.CHUNK !== 'event' ? Number(process.env.CHUNK) : null;

function rechunk(chunks) {
  if (!CHUNK) return chunks;
  const whole = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    whole.set(c, at);
    at += c.length;
  }
  const out = [];
  for (let i = 0; i < whole.length; i += CHUNK) out.push(whole.subarray(i, i + CHUNK));
  return out;
}

function load(dir, wire) {
  return readdirSync(join(FIXTURES, dir))
    .filter((n) => n.endsWith('.chunks.txt') || n.endsWith('.sse'))
    .filter((n) => !BROKEN.some((b) => n.startsWith(b)))
    .sort()
    .map((name) => {
      const text = readFileSync(join(FIXTURES, dir, name), 'utf8');
      const body = name.endsWith('.sse')
        ? text
        : frame(text.split('\n').filter((l) => l.trim() !== ''), wire);
      return { name, chunks: rechunk(splitEvents(body)) };
    });
}

async function decode(wire, fixture) {
  current = fixture.chunks;
  let stream;
  try {
    ({ stream } = await wire.model.doStream({ prompt }));
  } catch {
    // An error event before any output (openai-error.1) is thrown from `doStream`.
    return { parts: 0, errors: 1 };
  }
  const reader = stream.getReader();
  let parts = 0;
  let errors = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.type === 'error') errors++;
    else parts++;
  }
  return { parts, errors };
}

async function once(wire, fixtures) {
  const total = { parts: 0, errors: 0 };
  for (const fixture of fixtures) {
    const { parts, errors } = await decode(wire, fixture);
    total.parts += parts;
    total.errors += errors;
  }
  return total;
}

const [secondsArg, ...dirsArg] = process.argv.slice(2);
const seconds = secondsArg ? Number(secondsArg) : 3;
const dirs = dirsArg.length ? dirsArg : Object.keys(WIRES);
const versions = Object.fromEntries(
  ['ai', '@ai-sdk/openai', '@ai-sdk/anthropic', '@ai-sdk/google'].map((p) => [
    p,
    JSON.parse(readFileSync(join(here, 'node_modules', p, 'package.json'), 'utf8')).version,
  ]),
);

for (const dir of dirs) {
  const wire = WIRES[dir];
  if (!wire) throw new Error(`unknown provider directory ${dir}`);
  const fixtures = load(dir, wire);
  const bytes = fixtures.reduce((n, f) => n + f.chunks.reduce((m, c) => m + c.length, 0), 0);
  // Warm-up (the JIT needs it): a third of the measured time, at least one second.
  const warmUntil = performance.now() + Math.max(1000, (seconds * 1000) / 3);
  let total = await once(wire, fixtures);
  while (performance.now() < warmUntil) await once(wire, fixtures);
  const start = performance.now();
  let iterations = 0;
  while (performance.now() - start < seconds * 1000) {
    await once(wire, fixtures);
    iterations++;
  }
  const elapsed = (performance.now() - start) / 1000;
  console.log(
    JSON.stringify({
      impl: 'ai-sdk',
      dir,
      chunk: CHUNK ? String(CHUNK) : 'event',
      fixtures: fixtures.length,
      bytes,
      parts: total.parts,
      errors: total.errors,
      iterations,
      seconds: elapsed,
      mib_per_s: (bytes * iterations) / elapsed / (1024 * 1024),
      parts_per_s: (total.parts * iterations) / elapsed,
      versions,
      node: process.versions.node,
    }),
  );
}
