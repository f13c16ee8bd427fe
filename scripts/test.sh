#!/usr/bin/env bash
# The README's second command: every check CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== benches build"
cargo bench --workspace --locked --no-run --quiet
echo "== cargo test"
cargo test --workspace --locked
# Last, so that cargo test's summary lines stay visible above it; its own last line is a plain
# `N passed, M failed` over the unprivileged pass (0 and 0, with the reason, when not root).
bash scripts/attack-suite.sh
