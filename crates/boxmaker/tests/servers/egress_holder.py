#!/usr/bin/python3
"""A stdio MCP server that keeps a connection through the egress proxy open between calls,
for crates/boxmaker/tests/egress_attacks.rs: opened while the session is public, it would be
a way out for what the session reads later — unless boxmaker closes it when the label rises.

Python standard library only (it runs as /usr/bin/python3 inside a box); newline-delimited
JSON-RPC 2.0, as the MCP stdio transport.

Tools:
  open [target]   CONNECT host:port through the proxy (127.0.0.1:3128); the proxy's answer
  poke            sends a byte on the kept connection: "open" if it went, "closed" if not
"""

import json
import socket
import sys

OUT = sys.stdout.buffer
KEPT = []

TARGET = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}
EMPTY = {"type": "object", "properties": {}}


def send(msg):
    OUT.write(json.dumps(msg).encode() + b"\n")
    OUT.flush()


def text(s):
    return {"content": [{"type": "text", "text": s}]}


def call(name, args):
    if name == "open":
        try:
            s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
            s.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % args["target"]).encode())
            answer = s.recv(4096).decode("latin-1")
            KEPT.append(s)
            return text(answer.split("\r\n")[0])
        except OSError as e:
            return text("error: %s" % e)
    if name == "poke":
        if not KEPT:
            return text("nothing kept")
        s = KEPT[-1]
        try:
            # A closed tunnel shows as end of file or a reset on the next read.
            s.settimeout(0.5)
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    return text("closed")
            except socket.timeout:
                pass
            s.sendall(b"\x16\x03\x01\x00\x01\x01")
            return text("open")
        except OSError as e:
            return text("closed (%s)" % e)
    return {"content": [{"type": "text", "text": "no such tool"}], "isError": True}


def tools():
    return [
        {"name": "open", "description": "Open a tunnel.", "inputSchema": TARGET},
        {"name": "poke", "description": "Use the kept tunnel.", "inputSchema": EMPTY},
    ]


def main():
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method = msg.get("method")
        mid = msg.get("id")
        if mid is None:
            continue
        if method == "initialize":
            version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "holder", "version": "0"}}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
        elif method == "tools/call":
            p = msg.get("params", {})
            send({"jsonrpc": "2.0", "id": mid,
                  "result": call(p.get("name"), p.get("arguments") or {})})
        else:
            send({"jsonrpc": "2.0", "id": mid,
                  "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
