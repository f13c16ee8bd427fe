#!/usr/bin/env bash
# The client the official conformance suite drives: `toolsmith run` in a real agent run on a
# scripted model, with the scenario's server as its one MCP server.
#
#     conformance client --command "client.sh <toolsmith>" --scenario <name>
#
# The suite appends the server's URL and sets MCP_CONFORMANCE_SCENARIO. The script model calls
# the scenario's tool when it has one (tools_call: add_numbers; sse-retry: test_reconnection),
# then answers.
set -euo pipefail
toolsmith="$1"
url="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '{"mcpServers": {"conformance": {"url": "%s", "readOnly": true}}}' "$url" > "$work/mcp.json"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
    tools_call)
        echo '[{"tool_calls": [{"id": "c1", "name": "conformance__add_numbers", "input": {"a": 2, "b": 40}}]}, {"text": "42."}]' ;;
    sse-retry)
        echo '[{"tool_calls": [{"id": "c1", "name": "conformance__test_reconnection", "input": {}}]}, {"text": "Reconnected."}]' ;;
    *)
        echo '[{"text": "Connected."}]' ;;
esac > "$work/script.json"
exec "$toolsmith" run --json --root "$work" --model "scripted:$work/script.json" \
    --mcp-config "$work/mcp.json" --tools calculator "Run the scenario."
