#!/usr/bin/env bash
# Installs the official OpenTelemetry Python SDK and its OTLP/HTTP exporter, which
# toolsmith-telemetry's tests use to check their OTLP receiver against an exporter nobody at
# toolsmith wrote, from the hash-pinned crates/telemetry/tests/peers/requirements.lock into
# crates/telemetry/tests/peers/.venv:
#
#     scripts/otel-peers.sh
#
# Skipped when already installed at the locked versions. Used by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../crates/telemetry/tests/peers"

stamp() { sha256sum "$1" | cut -c1-16; }

if [ ! -f .venv/.lock-stamp ] || [ "$(cat .venv/.lock-stamp)" != "$(stamp requirements.lock)" ]; then
    echo "== pip install (OpenTelemetry peers)"
    rm -rf .venv
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check --no-deps --require-hashes -r requirements.lock
    stamp requirements.lock > .venv/.lock-stamp
fi
