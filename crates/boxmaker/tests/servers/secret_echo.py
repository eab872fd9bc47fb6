#!/usr/bin/python3
"""A stdio MCP server that tries every way to show the model the secret it was handed, for
crates/boxmaker/tests/secrets.rs: boxmaker passes it `ECHOED_TOKEN` from a [[secret]], and
every answer, description, failure and stderr line of it must reach the model and the logs
redacted, in every encoding it uses.

Python standard library only (it runs as /usr/bin/python3 inside a box); newline-delimited
JSON-RPC 2.0, as the MCP stdio transport.

Tools:
  echo        the value as it is and in every encoding below, in text blocks, an embedded
              resource and structured content
  fail        isError, quoting the value and its hex
  refuse      a JSON-RPC error quoting the value
  crash       writes the value to stderr and exits with status 3
"""

import base64
import json
import os
import sys
import urllib.parse

IN = sys.stdin
OUT = sys.stdout.buffer
TOKEN = os.environ.get("ECHOED_TOKEN", "")

# Its stderr gets the value at start and with every call: the log must hold none of it.
print(f"secret_echo starting with {TOKEN}", file=sys.stderr, flush=True)


def encodings(v: str) -> dict:
    b = v.encode()
    return {
        "raw": v,
        "base64": base64.b64encode(b).decode(),
        "base64_nopad": base64.b64encode(b).decode().rstrip("="),
        "base64url": base64.urlsafe_b64encode(b).decode(),
        "base64url_nopad": base64.urlsafe_b64encode(b).decode().rstrip("="),
        "hex": b.hex(),
        "HEX": b.hex().upper(),
        "url": urllib.parse.quote(v, safe=""),
        "url_lower": "".join(
            c if c.isalnum() or c in "-._~" else "".join(f"%{x:02x}" for x in c.encode())
            for c in v
        ),
        "form": urllib.parse.quote_plus(v),
        # The value inside a longer base64 text, at each alignment.
        "basic_auth": base64.b64encode(b"x-access-token:" + b).decode(),
        "bearer_b64": base64.b64encode(b"Bearer " + b).decode(),
        "shifted_b64": base64.b64encode(b"ab" + b + b"cd").decode(),
    }


TOOLS = [
    {
        "name": "echo",
        # A description is read by the model too.
        "description": f"Echoes its token ({TOKEN}) in many encodings",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {"name": "fail", "description": "fails", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "refuse", "description": "refuses", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "crash", "description": "crashes", "inputSchema": {"type": "object", "properties": {}}},
]


def send(msg):
    OUT.write(json.dumps(msg).encode() + b"\n")
    OUT.flush()


def call(rid, name):
    print(f"call {name} with {TOKEN} {TOKEN.encode().hex()}", file=sys.stderr, flush=True)
    if name == "echo":
        enc = encodings(TOKEN)
        blocks = [{"type": "text", "text": f"{k}: {v}"} for k, v in enc.items()]
        blocks.append(
            {
                "type": "resource",
                "resource": {"uri": f"mem://token/{enc['url']}", "mimeType": "text/plain", "text": TOKEN},
            }
        )
        return {"content": blocks, "structuredContent": {"token": TOKEN, TOKEN: enc}}
    if name == "fail":
        return {"content": [{"type": "text", "text": f"bad token {TOKEN} ({TOKEN.encode().hex()})"}], "isError": True}
    if name == "refuse":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": f"no, {TOKEN}"}})
        return None
    if name == "crash":
        print(f"dying with {TOKEN} {base64.b64encode(TOKEN.encode()).decode()}", file=sys.stderr, flush=True)
        sys.exit(3)
    return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}


def main() -> None:
    for line in IN:
        if not line.strip():
            continue
        msg = json.loads(line)
        rid = msg.get("id")
        method = msg.get("method")
        if rid is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-03-26"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"echo {TOKEN}", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = call(rid, (msg.get("params") or {}).get("name"))
            if result is None:
                continue
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


main()
