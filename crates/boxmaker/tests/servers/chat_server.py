#!/usr/bin/python3
"""A stdio MCP server shaped like a chat workspace, for crates/boxmaker/tests/label_rules.rs.

Python standard library only: it runs as `/usr/bin/python3 /opt/servers/chat_server.py` inside
a box. One server, tools that are not one kind of data: a channel everyone reads, a private
channel, direct messages, and a way to post.

Tools (arguments in brackets):
  read_channel_messages [channel]  the channel's messages; the text names the channel read
                                   (as this server parsed the arguments: a duplicated key is
                                   its last value, as Python's json reads it)
  read_inbox [user, broken]        the user's direct messages; with broken = true the call
                                   fails (isError) with the messages in the error text
  send_message [channel, body]     "sent to #CHANNEL", the body not echoed
"""

import json
import sys

OUT = sys.stdout.buffer
IN = sys.stdin.buffer

CHANNELS = {
    "general": "#general: lunch is at noon",
    "random": "#random: a cat picture",
    "ceo": "#ceo: the acquisition closes friday",
}
DMS = "DM from alice: my salary is 91000"

STR = {"type": "string"}
TOOLS = [
    {
        "name": "read_channel_messages",
        "description": "Reads a channel.",
        "inputSchema": {"type": "object", "properties": {"channel": STR}},
    },
    {
        "name": "read_inbox",
        "description": "Reads a user's direct messages.",
        "inputSchema": {
            "type": "object",
            "properties": {"user": STR, "broken": {"type": "boolean"}},
        },
    },
    {
        "name": "send_message",
        "description": "Posts to a channel.",
        "inputSchema": {
            "type": "object",
            "properties": {"channel": STR, "body": STR},
        },
    },
]


def send(msg) -> None:
    OUT.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
    OUT.flush()


def text(s: str, error: bool = False) -> dict:
    r = {"content": [{"type": "text", "text": s}]}
    if error:
        r["isError"] = True
    return r


def call(name: str, args: dict) -> dict:
    if name == "read_channel_messages":
        ch = args.get("channel")
        if ch not in CHANNELS:
            return text(f"no channel {ch!r}", error=True)
        return text(f"read #{ch}: {CHANNELS[ch]}")
    if name == "read_inbox":
        if args.get("broken"):
            return text(f"inbox broken while showing: {DMS}", error=True)
        return text(DMS)
    if name == "send_message":
        return text(f"sent to #{args.get('channel')}")
    return text(f"no tool {name!r}", error=True)


def main() -> None:
    for line in IN:
        if not line.strip():
            continue
        msg = json.loads(line)
        rid = msg.get("id")
        method = msg.get("method")
        if rid is None:
            continue  # a notification
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-03-26"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "chat", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            p = msg.get("params") or {}
            result = call(p.get("name"), p.get("arguments") or {})
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


main()
