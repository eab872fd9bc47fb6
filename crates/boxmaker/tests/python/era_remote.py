"""A client of either protocol era reaches a server that speaks only MCP 2026-07-28, behind
boxmaker (issue 31 item 4): the official Python SDK's `Client` in ERA_MODE over ERA_TRANSPORT
lists boxmaker's tools, finds the server's `modern_echo` among them, and calls it; the answer
is the server's, labelled, and what the server logged while it ran is replayed before it (on
2026-07-28, to a request that opts in).
"""

import asyncio
import json
from typing import Any

from common import check, label_of, run, step, text_of
from era import MODE, MODERN, TRANSPORT, Conn, start_http, stop


class Logged:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, params: Any) -> None:
        print("log:", params.level, params.logger, json.dumps(params.data), flush=True)
        self.messages.append(params)


async def main() -> None:
    proc, url, credential = (None, None, None)
    if TRANSPORT == "http":
        proc, url, credential = start_http()
    try:
        logged = Logged()
        opts: dict[str, Any] = {"logging_callback": logged}
        if MODERN:
            opts["log_level"] = "debug"
        else:
            pass
        async with Conn(url, credential, **opts) as c:
            if not MODERN:
                await c.set_logging_level("debug")
            step(f"{MODE} over {TRANSPORT}: the 2026-only server's tools are listed")
            names = [t.name for t in (await c.list_tools()).tools]
            print("tools:", names, flush=True)
            for want in ["modern_echo", "boxed_echo"]:
                check(want in names, f"{want} is not listed: {names}")
            for tool, label in [("boxed_echo", "public"), ("modern_echo", "internal")]:
                step(f"{tool}: called through the gate")
                res = await c.call_tool(tool, {"text": "hi"})
                print(tool, res.is_error, text_of(res), res.meta, flush=True)
                check(not res.is_error and text_of(res) == "modern: hi", text_of(res))
                got = label_of(res)
                check(got["class"] == label and got["untrusted"] is True, f"label: {got}")
                if not MODERN and TRANSPORT == "http":
                    # A legacy session over HTTP is sent log messages on its GET stream,
                    # which the client reads apart from the request's own: the message may
                    # come just after the result (docs/spec.md §5, "A server's
                    # notifications"). Over stdio, and to a 2026-07-28 request, it comes
                    # before.
                    for _ in range(100):
                        if any("echoing hi" in json.dumps(m.data) for m in logged.messages):
                            break
                        await asyncio.sleep(0.05)
                check(any("echoing hi" in json.dumps(m.data) for m in logged.messages),
                      f"the server's log was not replayed: {[m.data for m in logged.messages]}")
                logged.messages.clear()
    finally:
        stop(proc)


run(main, 90)
