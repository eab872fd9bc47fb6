"""The whole chain of issue 7 with a real client: the official Python MCP SDK over stdio ->
`boxmaker mcp` -> `@modelcontextprotocol/server-filesystem` inside the session's box, over a
confidential mount. Reading a file there raises the session's taint to confidential, and
then tools granted only while the taint is public — a second downstream server's tool
(`time_get_current_time`) and a builtin (`share`, a write_file) — are denied
`taint_too_high`, while the filesystem server itself goes on working.

Environment (set by crates/boxmaker/tests/downstream.rs):
  BOXMAKER_BIN, BOXMAKER_CONFIG, BOXMAKER_PLAN  as for every script here (common.py); the
                   config mounts notes/ (holding plan.txt) at /data/notes, confidential
  CHAIN_SESSION    the session id given to `boxmaker mcp --session`
"""

import json
import os

from common import BIN, CONFIG, PLAN, boxmaker, check, label_of, run, step, text_of

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SESSION = os.environ["CHAIN_SESSION"]


def taint() -> str:
    """The session's taint class, from the gate `boxmaker mcp` hosts (`boxmaker sessions`)."""
    out = boxmaker("sessions", "--json")
    check(out.returncode == 0, f"boxmaker sessions failed: {out.stderr}")
    items = json.loads(out.stdout)["body"]["items"]
    for s in items:
        if s["id"] == SESSION:
            return s["class"]
    return "public"  # a session the gate has not seen yet is clean


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
            for want in [
                "fs_read_text_file",
                "fs_list_directory",
                "fs_write_file",
                "time_get_current_time",
                "share",
            ]:
                check(want in names, f"{want} missing from tools/list: {names}")

            step("a clean session may use the public-only builtin")
            check(taint() == "public", f"taint before anything: {taint()}")
            res = await session.call_tool("share", {"path": "before.txt", "content": "hello"})
            print("share:", res.is_error, text_of(res), res.meta, flush=True)
            check(not res.is_error, f"share on a clean session: {text_of(res)}")

            step("the filesystem server in the box lists and reads the confidential notes")
            res = await session.call_tool("fs_list_directory", {"path": "/data/notes"})
            print("fs_list_directory:", res.is_error, text_of(res), res.meta, flush=True)
            check(not res.is_error, f"fs_list_directory failed: {text_of(res)}")
            check("[FILE] plan.txt" in text_of(res), f"listing: {text_of(res)!r}")
            res = await session.call_tool("fs_read_text_file", {"path": "/data/notes/plan.txt"})
            print("fs_read_text_file:", res.is_error, repr(text_of(res)), res.meta, flush=True)
            check(not res.is_error, f"fs_read_text_file failed: {text_of(res)}")
            check(text_of(res) == PLAN, f"read {text_of(res)!r}, not {PLAN!r}")
            label = label_of(res)
            check(label["class"] == "confidential", f"label of the read: {label}")
            check(label["untrusted"] is False, f"label of the read: {label}")

            step("the session's taint is now confidential, as the gate recorded it")
            check(taint() == "confidential", f"taint after the read: {taint()}")

            step("a second downstream server's tool, granted only at public, is denied")
            res = await session.call_tool("time_get_current_time", {"timezone": "UTC"})
            text = text_of(res)
            print("time_get_current_time:", res.is_error, text, flush=True)
            check(res.is_error is True, f"time_get_current_time ran after the read: {text}")
            check("taint_too_high" in text, f"denial text: {text!r}")
            check(text.startswith("denied"), f"denial text: {text!r}")

            step("the public-only builtin is denied too: the plan cannot leave")
            res = await session.call_tool("share", {"path": "leak.txt", "content": PLAN})
            text = text_of(res)
            print("share after read:", res.is_error, text, flush=True)
            check(res.is_error is True, f"share after a confidential read: {text}")
            check("taint_too_high" in text, f"denial text: {text!r}")

            step("the filesystem server (granted at any taint) still works in the session")
            res = await session.call_tool(
                "fs_write_file", {"path": "/work/summary.txt", "content": "summarised"}
            )
            print("fs_write_file:", res.is_error, text_of(res), res.meta, flush=True)
            check(not res.is_error, f"fs_write_file into /work failed: {text_of(res)}")
            check(label_of(res)["class"] == "confidential", f"label: {res.meta}")
            step("done")


run(main)
