#!/usr/bin/env bash
# Regenerates the web console's screenshots in docs/console/ (docs/console.md shows them):
#
#     scripts/console-screenshots.sh [dir]
#
# Runs the console's browser test (crates/server/tests/it/console_browser.rs: a service on a
# loopback port with a mock model, driven by tests/console-browser/e2e.mjs in Debian's headless
# Chromium) with TOOLSMITH_CONSOLE_SCREENSHOTS set, which makes the script save each view as
# it goes: the start-run form, a run waiting for an approval, the finished run, the runs list
# and the agents. Installs Chromium and playwright-core first when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="$(realpath -m "${1:-docs/console}")"
./scripts/system-packages.sh npm chromium
if [ ! -d crates/server/tests/console-browser/node_modules/playwright-core ]; then
  npm ci --prefix crates/server/tests/console-browser --no-audit --no-fund --loglevel=error
fi
mkdir -p "$dir"
TOOLSMITH_CONSOLE_SCREENSHOTS="$dir" \
  cargo test -p toolsmith-server --test it console_browser -- --nocapture --test-threads=1
echo "== screenshots in $dir:"
ls -l "$dir"/*.png
