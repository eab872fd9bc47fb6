#!/usr/bin/env python3
"""A remote (streamable HTTP) MCP server made with the official Python SDK, for
bench/calls.py's `remote` paths: one tool, echo {text}, behind a bearer token.

  remote_echo_server.py PORT TOKEN      (run with tests/py/client-venv/bin/python3)
"""
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

PORT, TOKEN = int(sys.argv[1]), sys.argv[2]
server = MCPServer("bench-remote")


@server.tool()
def echo(text: str) -> str:
    """Echoes its text."""
    return f"echo: {text}"


inner = server.streamable_http_app()
WANT = ("Bearer " + TOKEN).encode()


async def app(scope, receive, send):
    if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != WANT:
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": b""})
        return
    await inner(scope, receive, send)


uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
