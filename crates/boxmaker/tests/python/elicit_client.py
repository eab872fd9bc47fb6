"""Approving in the agent's own client (issue 16): the official Python SDK over stdio, with an
elicitation callback, against `boxmaker mcp` on a config that says
`[gate] approve_in_client = true`.

Each call below plans the person's answer before it is made; the callback records what it
was shown and when. Environment (crates/boxmaker/tests/approvals.rs):
  BOXMAKER_BIN, BOXMAKER_CONFIG   the binary and the config (approval_ttl is short)
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
import mcp.types as types

BIN = os.environ["BOXMAKER_BIN"]
CONFIG = os.environ["BOXMAKER_CONFIG"]
APPROVAL_ID = re.compile(r"\bap-[0-9a-f]{16}\b")
# The promise is 100 ms (docs/performance.md, measured on a release build by
# bench/approvals-latency.sh); the test suite runs a debug build on a shared machine.
SEEN_BUDGET_MS = float(os.environ.get("BOXMAKER_SEEN_BUDGET_MS", "100"))


def step(what: str) -> None:
    print(f"-- {what}", flush=True)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def boxmaker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *args, "--config", CONFIG], capture_output=True, text=True, timeout=30)


def text_of(res: Any) -> str:
    return res.content[0].text


class Person:
    """The elicitation callback: answers as planned, and keeps what it was shown."""

    def __init__(self) -> None:
        self.plan: list[Any] = []
        self.shown: list[str] = []
        self.latencies_ms: list[float] = []
        self.call_started = 0.0
        self.asked = asyncio.Event()
        # When the front said the call asks (its pending_approval log notification), and
        # how long after that the elicitation came (negative: it came first).
        self.noted = 0.0
        self.after_ask_ms: list[float] = []

    async def on_log(self, params: Any) -> None:
        self.noted = time.monotonic()

    async def __call__(self, context: Any, params: Any) -> Any:
        seen = time.monotonic()
        self.latencies_ms.append((seen - self.call_started) * 1000)
        # The notification and the elicitation leave the front together; let a notification
        # still on its way arrive before comparing.
        await asyncio.sleep(0.05)
        if self.noted >= self.call_started:
            self.after_ask_ms.append((seen - self.noted) * 1000)
        self.shown.append(params.message)
        print("elicitation:", json.dumps(params.message), flush=True)
        schema = params.requested_schema
        choices = [c["const"] for c in schema["properties"]["decision"]["oneOf"]]
        check(choices == ["approve_once", "approve_for_session", "refuse"], f"choices: {choices}")
        self.asked.set()
        answer = self.plan.pop(0)
        if answer == "hang":
            # The person never answers: the call must fall back, and then expire.
            await asyncio.sleep(3600)
        if answer == "cancel":
            return types.ElicitResult(action="cancel")
        if isinstance(answer, tuple):
            return types.ElicitResult(
                action="accept", content={"decision": "approve_for_session", "minutes": answer[1]}
            )
        return types.ElicitResult(action="accept", content={"decision": answer})

    async def call(self, session: ClientSession, args: dict, plan: list[Any]) -> Any:
        self.plan = list(plan)
        self.asked.clear()
        self.call_started = time.monotonic()
        return await session.call_tool("run", args)


def pending() -> list[str]:
    out = boxmaker("approvals", "--json")
    check(out.returncode == 0, out.stderr)
    return APPROVAL_ID.findall(out.stdout)


async def main() -> None:
    person = Person()
    params = StdioServerParameters(command=BIN, args=["mcp", "--config", CONFIG])
    async with stdio_client(params) as (r, w):
        async with ClientSession(
            r, w, elicitation_callback=person, logging_callback=person.on_log
        ) as session:
            await session.initialize()

            step("approve once: the call runs, and the client was shown the exact call")
            res = await person.call(session, {"argv": ["/bin/echo", "once"]}, ["approve_once"])
            check(not res.is_error, f"approved call failed: {text_of(res)}")
            check(json.loads(text_of(res))["stdout"] == "once\n", text_of(res))
            shown = person.shown[-1]
            check('tool: run' in shown, shown)
            check('arguments: {"argv":["/bin/echo","once"]}' in shown, shown)
            check("taint: public" in shown, shown)
            check("why: a grant says to ask" in shown, shown)
            check("expires:" in shown and "(in " in shown, shown)

            step("approve for this session: the same call runs again without asking")
            asked_before = len(person.shown)
            res = await person.call(session, {"argv": ["/bin/echo", "again"]}, [("session", 5)])
            check(not res.is_error, text_of(res))
            check(len(person.shown) == asked_before + 1, "approve_for_session asked once")
            res = await person.call(session, {"argv": ["/bin/echo", "again"]}, [])
            check(not res.is_error, text_of(res))
            check(len(person.shown) == asked_before + 1, "the identical call asked again")
            grants = boxmaker("grants")
            print("grants:", grants.stdout.strip())
            check("remembered" in grants.stdout and "/bin/echo" in grants.stdout, grants.stdout)

            step("a different argument asks again (and is refused)")
            res = await person.call(session, {"argv": ["/bin/echo", "again", "and more"]}, ["refuse"])
            check(len(person.shown) == asked_before + 2, "a different argument did not ask")
            check(res.is_error and text_of(res).startswith("denied: approval_refused"), text_of(res))

            step("refuse")
            res = await person.call(session, {"argv": ["/bin/rm", "-rf", "/work"]}, ["refuse"])
            check(res.is_error and text_of(res).startswith("denied: approval_refused"), text_of(res))

            step("the elicitation shows control, bidi and zero-width characters escaped")
            sneaky = ["/bin/echo", "\x1b[2J\u202e~ fr- mr\u200b"]
            res = await person.call(session, {"argv": sneaky}, ["refuse"])
            shown = person.shown[-1]
            # The escape character arrives JSON-escaped (\u001b: the arguments are JSON); the
            # bidi override and the zero-width space are shown as \u{…} by boxmaker.
            check("\\u001b[2J\\u{202e}~ fr- mr\\u{200b}" in shown, shown)
            check("\x1b" not in shown and "\u202e" not in shown and "\u200b" not in shown, shown)
            check("2 hidden or control characters" in shown, shown)

            step("no answer (cancelled): the call falls back to `boxmaker approve`")
            call = asyncio.create_task(person.call(session, {"argv": ["/bin/echo", "fallback"]}, ["cancel"]))
            await asyncio.wait_for(person.asked.wait(), 10)
            ids: list[str] = []
            for _ in range(100):
                ids = pending()
                if ids:
                    break
                await asyncio.sleep(0.05)
            check(len(ids) == 1, f"pending after a cancelled elicitation: {ids}")
            out = boxmaker("approve", ids[0])
            check(out.returncode == 0, out.stderr)
            res = await asyncio.wait_for(call, 20)
            check(not res.is_error, text_of(res))
            check(json.loads(text_of(res))["stdout"] == "fallback\n", text_of(res))

            step("no answer at all: the call falls back, then expires")
            start = time.monotonic()
            res = await asyncio.wait_for(
                person.call(session, {"argv": ["/bin/echo", "never"]}, ["hang"]), 30
            )
            took = time.monotonic() - start
            print(f"expired after {took:.1f} s:", text_of(res))
            check(res.is_error and text_of(res).startswith("denied: approval_expired"), text_of(res))

            lat = sorted(person.latencies_ms)
            print(
                f"elicitation latency from tools/call ({len(lat)} calls; an upper bound: it "
                "includes the gate's durable decision and approval records): "
                f"min {lat[0]:.1f} ms, median {lat[len(lat) // 2]:.1f} ms, max {lat[-1]:.1f} ms",
                flush=True,
            )
            gap = sorted(person.after_ask_ms)
            check(len(gap) >= 5, f"too few notifications to compare: {gap}")
            print(
                "elicitation after the call's pending_approval notification: "
                f"min {gap[0]:.1f} ms, median {gap[len(gap) // 2]:.1f} ms, max {gap[-1]:.1f} ms",
                flush=True,
            )
            check(gap[-1] < SEEN_BUDGET_MS,
                  f"an elicitation came {gap[-1]:.1f} ms after the call asked")
            check(lat[len(lat) // 2] < SEEN_BUDGET_MS,
                  f"median from tools/call: {lat[len(lat) // 2]:.1f} ms")
    print("ok", flush=True)


try:
    asyncio.run(asyncio.wait_for(main(), timeout=80))
except BaseException as e:  # noqa: BLE001 - the Rust test shows this output
    import traceback

    traceback.print_exc()
    sys.exit(1)
