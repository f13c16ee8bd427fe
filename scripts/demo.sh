#!/usr/bin/env bash
# The README's first command: builds toolsmith and runs the demo agent.
# Extra arguments replace the default prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
prompt=("$@")
[ ${#prompt[@]} -gt 0 ] || prompt=("What is 17 * 23 + 4?")
cargo build --release --quiet -p toolsmith --bin toolsmith
exec "${CARGO_TARGET_DIR:-target}/release/toolsmith" run --model scripted:examples/demo.json "${prompt[@]}"
