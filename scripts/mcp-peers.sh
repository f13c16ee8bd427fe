#!/usr/bin/env bash
# Installs the MCP servers and clients nobody at toolsmith wrote, which toolsmith-mcp's interop
# tests and benchmarks run, from the lockfiles in crates/mcp/tests/peers:
#
#     scripts/mcp-peers.sh
#
# - npm (package-lock.json): the official reference servers (server-everything,
#   server-filesystem, server-memory), the TypeScript SDK, the conformance suite and the MCP
#   Inspector, on the Node the lockfile pins;
# - PyPI (requirements.lock, every package pinned): the official Python SDK (`mcp`),
#   mcp-server-time and FastMCP, in crates/mcp/tests/peers/.venv.
#
# Each half is skipped when it is already installed at the locked versions. Used by
# scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../crates/mcp/tests/peers"

stamp() { sha256sum "$1" | cut -c1-16; }

if [ ! -f node_modules/.lock-stamp ] || [ "$(cat node_modules/.lock-stamp)" != "$(stamp package-lock.json)" ]; then
    echo "== npm ci (MCP peers)"
    npm ci --no-audit --no-fund --loglevel=error
    stamp package-lock.json > node_modules/.lock-stamp
fi

if [ ! -f .venv/.lock-stamp ] || [ "$(cat .venv/.lock-stamp)" != "$(stamp requirements.lock)" ]; then
    echo "== pip install (MCP peers)"
    rm -rf .venv
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.lock
    stamp requirements.lock > .venv/.lock-stamp
fi
