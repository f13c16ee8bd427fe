"""A FastMCP server with one tool, `echo`, answering as the reference server's does, for
toolsmith's MCP benchmarks.

    python fastmcp_echo.py stdio
    python fastmcp_echo.py http PORT      (streamable HTTP at http://127.0.0.1:PORT/mcp)
"""
import sys

from fastmcp import FastMCP

mcp = FastMCP("fastmcp-echo")


@mcp.tool
def echo(message: str) -> str:
    """Echoes back the input string."""
    return f"Echo: {message}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), path="/mcp",
                show_banner=False, log_level="warning")
    else:
        mcp.run(transport="stdio", show_banner=False)
