#!/usr/bin/env bash
# Stream-decoding throughput, toolsmith against the Vercel AI SDK, on the same fixtures in the
# same run (docs/benchmarks.md, "Stream decoding"). Needs Node and npm: not part of
# scripts/test.sh. The SDK runs on the Node pinned in bench/ai-sdk (the `node` package, 22.x:
# the SDK requires Node >= 22), whatever the system's Node is.
#
# Usage: scripts/bench-decode-compare.sh [SECONDS] [DIR...]
#   SECONDS  measured time per directory and side (default 3)
#   DIR      fixture directories (default: all five; toolsmith reports only the wires it has)
#   ROUNDS   (environment) rounds, alternating the two sides (default 3); the table keeps each
#            side's best round, so a burst of load from elsewhere on the machine does not decide
#            the ratio
#   CHUNK    (environment) how the bodies are cut, on both sides: `event` (default), one chunk
#            per event as a live stream arrives, or a size in bytes (e.g. 16384, a connection's
#            read size), splitting lines and UTF-8 sequences anywhere
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-3}"
shift || true
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=(openai-chat anthropic openai-responses openai-compatible-local google)
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

rounds="${ROUNDS:-3}"

cargo build --release --quiet -p toolsmith-providers --example decode_throughput
target="$(cargo metadata --format-version 1 --no-deps | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')"
if [ ! -d bench/ai-sdk/node_modules ]; then
  (cd bench/ai-sdk && npm ci --no-audit --no-fund >&2)
fi

for round in $(seq "$rounds"); do
  echo "== round $round/$rounds: toolsmith (examples/decode_throughput.rs)" >&2
  "$target/release/examples/decode_throughput" "$seconds" "${dirs[@]}" >>"$out/toolsmith.jsonl"
  echo "== round $round/$rounds: Vercel AI SDK (bench/ai-sdk/decode.mjs)" >&2
  bench/ai-sdk/node_modules/.bin/node bench/ai-sdk/decode.mjs "$seconds" "${dirs[@]}" >>"$out/ai-sdk.jsonl"
done

node - "$out/toolsmith.jsonl" "$out/ai-sdk.jsonl" <<'JS'
const fs = require('node:fs');
const read = (f) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const [rust, sdk] = process.argv.slice(2).map(read);
// Each side's best round per directory.
const by = (rows) => {
  const best = {};
  for (const row of rows) if (!(best[row.dir]?.mib_per_s >= row.mib_per_s)) best[row.dir] = row;
  return best;
};
const r = by(rust), s = by(sdk);
const f = (x, d = 1) => (x === undefined ? '—' : x.toFixed(d));
const k = (x) => (x === undefined ? '—' : `${(x / 1000).toFixed(0)} k`);
console.log(`Chunks: ${rust[0]?.chunk ?? sdk[0]?.chunk}. AI SDK on Node ${sdk[0]?.node}: ${Object.entries(sdk[0]?.versions ?? {}).map(([p, v]) => `${p}@${v}`).join(', ')}`);
console.log('');
console.log('| provider dir | toolsmith MiB/s | toolsmith parts/s | toolsmith decoder alone MiB/s | toolsmith SSE alone MiB/s | AI SDK MiB/s | AI SDK parts/s | ratio (MiB/s) |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const dir of [...new Set([...rust, ...sdk].map((x) => x.dir))]) {
  const a = r[dir], b = s[dir];
  const ratio = a && b ? `${(a.mib_per_s / b.mib_per_s).toFixed(1)}×` : '—';
  console.log(`| ${dir} | ${f(a?.mib_per_s)} | ${k(a?.parts_per_s)} | ${f(a?.decoder_only_mib_per_s)} | ${f(a?.sse_only_mib_per_s)} | ${f(b?.mib_per_s, 2)} | ${k(b?.parts_per_s)} | ${ratio} |`);
}
console.log('');
console.log('Raw (every round):');
for (const row of [...rust, ...sdk]) {
  const { versions, ...rest } = row;
  console.log(JSON.stringify(rest));
}
JS
