"""Drives `toolsmith mcp serve` with the official MCP Python SDK's client (`mcp`, pinned in
crates/mcp/tests/peers/requirements.txt) and prints what it saw as one JSON object.

    py_client.py stdio TOOLSMITH ARG...   launch TOOLSMITH ARG... and talk over its stdio
    py_client.py http URL                 talk streamable HTTP to URL

The workspace (--root) must hold notes/a.txt and notes/b.txt; outside.txt must sit beside it.
The client lists the tools, calls read and glob, reads a path outside the root, writes a file
with an approval it grants when asked (elicitation), then, as a second client that cannot be
asked (no elicitation callback, so no capability), tries another write.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def summary(result: types.CallToolResult) -> dict:
    texts = [block.text for block in result.content if block.type == "text"]
    return {
        "isError": result.is_error,
        "text": "\n".join(texts),
        "structured": result.structured_content,
    }


async def scenario(server) -> dict:
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    seen = {}
    async with Client(server, elicitation_callback=approve) as client:
        seen["protocol"] = client.protocol_version
        seen["server"] = client.server_info.name
        listed = await client.list_tools()
        seen["tools"] = [tool.name for tool in listed.tools]
        seen["read_schema"] = next(t.input_schema for t in listed.tools if t.name == "read")
        seen["read"] = summary(await client.call_tool("read", {"path": "notes/a.txt"}))
        seen["glob"] = summary(await client.call_tool("glob", {"pattern": "**/*.txt"}))
        seen["outside"] = summary(await client.call_tool("read", {"path": "../outside.txt"}))
        seen["write"] = summary(
            await client.call_tool("write", {"path": "made.txt", "content": "made over MCP"})
        )
    seen["asked"] = asked
    async with Client(server) as client:
        seen["unasked"] = summary(
            await client.call_tool("write", {"path": "refused.txt", "content": "never"})
        )
    return seen


def main() -> None:
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "stdio":
        server = StdioServerParameters(command=rest[0], args=rest[1:])
    elif mode == "http":
        server = rest[0]
    else:
        sys.exit(f"unknown mode {mode!r}: stdio or http")
    print(json.dumps(asyncio.run(scenario(server))))


if __name__ == "__main__":
    main()
