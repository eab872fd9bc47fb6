#!/usr/bin/env python3
"""An MCP server that speaks only MCP 2026-07-28, made with the official Python SDK (mcp 2.x,
MCPServer), for crates/boxmaker/tests/eras.rs: boxmaker's runner is its client, and must
discover it (`server/discover`) rather than `initialize` it.

The SDK serves both eras; this server refuses the earlier one as a server that implements
only 2026-07-28 does: an `initialize` request is answered with the JSON-RPC error
"unsupported protocol version" (-32022) naming what it supports.

  modern_server.py PORT [VERSION]   streamable HTTP on 127.0.0.1:PORT/mcp
  modern_server.py stdio            stdio (inside a box)

With VERSION (e.g. 2099-01-01) it speaks that revision only: `server/discover` at any other
is refused with -32022 naming VERSION, as is `initialize` (a server boxmaker cannot speak to).

Tools: echo {text} — logs `echoing TEXT` (info) and reports progress 1 of 1 first, then
answers `modern: TEXT`.
"""

import json
import os
import sys
import threading

import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer

VERSION = "2026-07-28"
ONLY = None
if sys.argv[1:2] != ["stdio"] and len(sys.argv) > 2:
    ONLY = sys.argv[2]
SUPPORTED = [ONLY or VERSION]

warnings.filterwarnings("ignore")
server = MCPServer("modern-test")


@server.tool()
async def echo(text: str, ctx: Context) -> str:
    """Echoes its text (a server of MCP 2026-07-28 only)."""
    await ctx.info(f"echoing {text}")
    await ctx.report_progress(1, 1, "echoed")
    return f"modern: {text}"


def refusal(msg: dict) -> dict | None:
    """The error a 2026-07-28-only server answers, or None for a request it serves."""
    method = msg.get("method")
    asked = ((msg.get("params") or {}).get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
    if method == "initialize" or (ONLY and method is not None and asked not in SUPPORTED):
        requested = (msg.get("params") or {}).get("protocolVersion") or asked
        return {
            "jsonrpc": "2.0",
            "id": msg.get("id"),
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"requested": requested, "supported": SUPPORTED},
            },
        }
    return None


def serve_http(port: int) -> None:
    import uvicorn

    inner = server.streamable_http_app()

    async def app(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await inner(scope, receive, send)
        body = b""
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
        try:
            msg = json.loads(body)
        except ValueError:
            msg = {}
        refused = refusal(msg) if isinstance(msg, dict) else None
        if refused is not None:
            out = json.dumps(refused).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": out})
            return
        sent = {"done": False}

        async def replay():
            if not sent["done"]:
                sent["done"] = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await inner(scope, replay, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def serve_stdio() -> None:
    """The SDK's stdio server behind a filter: `initialize` is refused before it sees it."""
    from mcp.server.stdio import stdio_server

    r, w = os.pipe()
    real_out = os.dup(1)

    def pump() -> None:
        with os.fdopen(w, "w") as to_sdk:
            for line in sys.stdin:
                try:
                    msg = json.loads(line)
                except ValueError:
                    msg = None
                refused = refusal(msg) if isinstance(msg, dict) else None
                if refused is not None:
                    os.write(real_out, (json.dumps(refused) + "\n").encode())
                    continue
                to_sdk.write(line)
                to_sdk.flush()

    threading.Thread(target=pump, daemon=True).start()

    async def main() -> None:
        stdin = anyio.wrap_file(os.fdopen(r, "r"))
        stdout = anyio.wrap_file(os.fdopen(real_out, "w"))
        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
            await server._lowlevel_server.run(read, write, server._lowlevel_server.create_initialization_options())

    anyio.run(main)


if sys.argv[1] == "stdio":
    serve_stdio()
else:
    serve_http(int(sys.argv[1]))
