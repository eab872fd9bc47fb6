"""Label rules through the whole chain (docs/spec.md §3.6): the official Python MCP SDK over
stdio -> `boxmaker mcp` -> `tests/servers/chat_server.py` inside the session's box. One
server, tools that are not one kind of data: a label rule makes #general internal and the
inbox confidential. Reading #general and posting there go on; posting after the inbox was
read is denied `taint_too_high`; the server's other tools never raise the taint.

Environment (set by crates/boxmaker/tests/label_rules.rs):
  BOXMAKER_BIN, BOXMAKER_CONFIG  as for every script here (common.py)
  CHAIN_SESSION                  the session id given to `boxmaker mcp --session`
"""

import json
import os

from common import BIN, CONFIG, boxmaker, check, label_of, run, step, text_of

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SESSION = os.environ["CHAIN_SESSION"]


def taint() -> tuple:
    """The session's taint, from the gate `boxmaker mcp` hosts (`boxmaker sessions`)."""
    out = boxmaker("sessions", "--json")
    check(out.returncode == 0, f"boxmaker sessions failed: {out.stderr}")
    for s in json.loads(out.stdout)["body"]["items"]:
        if s["id"] == SESSION:
            return (s["class"], s["untrusted"])
    return ("public", False)  # a session the gate has not seen yet is clean


async def main() -> None:
    params = StdioServerParameters(
        command=BIN, args=["mcp", "--config", CONFIG, "--session", SESSION]
    )
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            step("initialize and list")
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            print("tools:", names, flush=True)
            for want in ["chat_read_channel_messages", "chat_read_inbox", "chat_send_message"]:
                check(want in names, f"{want} missing from tools/list: {names}")

            step("another channel: no rule matches, the answer keeps the tool's own label")
            res = await session.call_tool("chat_read_channel_messages", {"channel": "random"})
            print("random:", res.is_error, text_of(res), res.meta, flush=True)
            check(not res.is_error, f"read #random: {text_of(res)}")
            check(label_of(res)["class"] == "public", f"label of #random: {res.meta}")
            check(taint() == ("public", False), f"taint after #random: {taint()}")

            step("#general: its rule makes the answer internal")
            res = await session.call_tool("chat_read_channel_messages", {"channel": "general"})
            print("general:", res.is_error, text_of(res), res.meta, flush=True)
            check(not res.is_error, f"read #general: {text_of(res)}")
            check(label_of(res)["class"] == "internal", f"label of #general: {res.meta}")
            check(taint() == ("internal", False), f"taint after #general: {taint()}")

            step("#general is cleared for internal: posting there goes, and raises nothing")
            res = await session.call_tool(
                "chat_send_message", {"channel": "general", "body": "see you at lunch"}
            )
            print("send:", res.is_error, text_of(res), res.meta, flush=True)
            check(not res.is_error, f"send to #general at internal: {text_of(res)}")
            # No rule: the server's answer is only at the session's own label (what its box
            # could read), which it does not raise.
            check(label_of(res)["class"] == "internal", f"label of the send: {res.meta}")
            check(taint() == ("internal", False), f"taint after the send: {taint()}")

            step("the inbox: its rule makes the answer confidential")
            res = await session.call_tool("chat_read_inbox", {"user": "me"})
            print("inbox:", res.is_error, text_of(res), res.meta, flush=True)
            check(not res.is_error, f"read the inbox: {text_of(res)}")
            check(label_of(res)["class"] == "confidential", f"label of the inbox: {res.meta}")
            check(taint() == ("confidential", False), f"taint after the inbox: {taint()}")

            step("the DMs cannot go to #general: the grant's max_class is internal")
            res = await session.call_tool(
                "chat_send_message", {"channel": "general", "body": text_of(res)}
            )
            text = text_of(res)
            print("send after inbox:", res.is_error, text, flush=True)
            check(res.is_error is True, f"the DMs were posted: {text}")
            check(text.startswith("denied") and "taint_too_high" in text, f"denial: {text!r}")
            step("done")


run(main)
