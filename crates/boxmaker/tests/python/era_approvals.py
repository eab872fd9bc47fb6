"""Approving in the agent's own client, in both protocol eras (issue 31; docs/spec.md §5,
"Approving in the client"): the official Python SDK's `Client` in `legacy` mode is asked with
an `elicitation/create`; in `2026-07-28` mode, which forbids a server's requests, the call is
answered `input_required` with the same form and a sealed `requestState`, and the SDK retries
it with the person's answer. Over stdio and streamable HTTP.

On 2026-07-28 the retry is also played by hand (`allow_input_required=True`) with what a
hostile client sends: a forged or altered state, the state with other arguments, the state
in another conversation, a state replayed after it was used, and a retry after the call was
decided on the page meanwhile. Each is refused, decides nothing, and nothing runs twice.

Logging follows each request's opt-in on 2026-07-28 (none without it), and the config's
warnings reach a client of either era.
"""

import asyncio
import json
from typing import Any

import mcp.types as types
from common import APPROVAL_ID, boxmaker, check, pending_ids, run, step, text_of
from era import MODE, MODERN, TRANSPORT, Conn, start_http, stop
from mcp.shared.exceptions import MCPError

KEY = "boxmaker_approval"
ONCE = types.ElicitResult(action="accept", content={"decision": "approve_once"})
DECLINE = types.ElicitResult(action="decline")


class Person:
    """The elicitation callback: answers as planned, and keeps what it was shown."""

    def __init__(self) -> None:
        self.plan: list[Any] = []
        self.shown: list[str] = []
        self.asked = asyncio.Event()

    async def __call__(self, context: Any, params: Any) -> Any:
        self.shown.append(params.message)
        print("asked:", json.dumps(params.message), flush=True)
        choices = [c["const"] for c in params.requested_schema["properties"]["decision"]["oneOf"]]
        check(choices == ["approve_once", "approve_for_session", "refuse"], f"choices: {choices}")
        self.asked.set()
        answer = self.plan.pop(0)
        if answer == "cancel":
            return types.ElicitResult(action="cancel")
        if answer == "decline":
            return DECLINE
        if isinstance(answer, tuple):
            return types.ElicitResult(action="accept", content={"decision": "approve_for_session", "minutes": answer[1]})
        return types.ElicitResult(action="accept", content={"decision": answer})


class Logged:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, params: Any) -> None:
        print("log:", params.level, params.logger, json.dumps(params.data), flush=True)
        self.messages.append(params)


async def call(c: Any, person: Person, args: dict, plan: list[Any]) -> Any:
    person.plan = list(plan)
    person.asked.clear()
    return await c.call_tool("run", args)


def stdout_of(res: Any) -> str:
    check(not res.is_error, f"the call failed: {text_of(res)}")
    return json.loads(text_of(res))["stdout"]


async def wait_pending(n: int = 1) -> list[str]:
    for _ in range(200):
        ids = pending_ids()
        if len(ids) >= n:
            return ids
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {n} approvals pending: {pending_ids()}")


async def refused(c: Any, args: dict, state: str, why: str) -> None:
    try:
        res = await c.session.call_tool(
            "run", args, input_responses={KEY: ONCE}, request_state=state, allow_input_required=True
        )
    except MCPError as e:
        print(f"{why}: refused {e.code}: {e.message}", flush=True)
        check(e.code == -32602, f"{why}: code {e.code}")
        check("nothing was decided" in e.message, f"{why}: {e.message}")
        return
    raise AssertionError(f"{why}: the retry was served: {res!r}")


async def hostile_retries(c: Any, url: str | None, person: Person) -> None:
    step("2026-07-28 by hand: the first request is answered input_required, the call is held")
    args = {"argv": ["/bin/sh", "-c", "echo ran >> /work/ran.txt; echo ran"]}
    first = await c.session.call_tool("run", args, allow_input_required=True)
    check(isinstance(first, types.InputRequiredResult), f"not input_required: {first!r}")
    asked = first.input_requests[KEY]
    message = asked.params.message
    print("form:", json.dumps(message), flush=True)
    check("tool: run" in message and "echo ran >> /work/ran.txt" in message, message)
    check(person.shown and message.split("expires:")[0].split("arguments:")[0] == person.shown[0].split("arguments:")[0],
          "the input_required form is not the elicitation's")
    state = first.request_state
    check(bool(state), "no requestState")
    approval = first.meta["boxmaker"]["approval"]
    check(APPROVAL_ID.fullmatch(approval) is not None, f"approval: {approval}")
    check(pending_ids() == [approval], f"pending: {pending_ids()}")

    step("a forged, altered or malformed state is refused and decides nothing")
    flipped = state[:-1] + ("0" if state[-1] != "0" else "1")
    await refused(c, args, flipped, "a flipped MAC digit")
    parts = state.split(".")
    await refused(c, args, ".".join([parts[0], parts[1], str(int(parts[2]) + 3600), parts[3]]), "a later expiry")
    await refused(c, args, "rs1.ap-x.1.00", "a malformed state")
    step("the state with other arguments (a swapped call) is refused")
    await refused(c, {"argv": ["/bin/sh", "-c", "echo evil >> /work/ran.txt"]}, state, "other arguments")
    step("the state in another conversation is refused")
    if TRANSPORT == "http":
        other = boxmaker("token").stdout.strip()
        async with Conn(url, other) as c2:
            await refused(c2, args, state, "another conversation's credential")
    else:
        async with Conn(None, None) as c2:
            await refused(c2, args, state, "another stdio conversation")
    check(pending_ids() == [approval], f"something was decided: {pending_ids()}")

    step("decided with `boxmaker approve` meanwhile: the retry gets that call's answer")
    out = boxmaker("approve", approval)
    check(out.returncode == 0, out.stderr)
    if TRANSPORT == "http":
        # Another connection of the same credential: the same conversation, and the call
        # outlived the first request's stream.
        c3 = Conn(url, c._credential)
        retry_client = await c3.__aenter__()
    else:
        c3, retry_client = None, c
    res = await retry_client.session.call_tool(
        "run", args, input_responses={KEY: DECLINE}, request_state=state
    )
    print("retry after the CLI approved:", res.is_error, text_of(res), flush=True)
    check(stdout_of(res) == "ran\n", text_of(res))
    step("the same state again: used once, nothing runs twice")
    res = await retry_client.session.call_tool("run", args, input_responses={KEY: ONCE}, request_state=state)
    print("replayed:", res.is_error, text_of(res), flush=True)
    check(res.is_error and "already answered" in text_of(res), text_of(res))
    if c3 is not None:
        await c3.__aexit__(None, None, None)
    res = await c.call_tool("read_file", {"path": "/work/ran.txt"})
    check(text_of(res) == "ran\n", f"ran.txt: {text_of(res)!r}")


async def scenario(url: str | None, credential: str | None) -> None:
    person = Person()
    logged = Logged()
    opts: dict[str, Any] = {"elicitation_callback": person, "logging_callback": logged}
    if MODERN:
        opts["log_level"] = "warning"
    conn = Conn(url, credential, **opts)
    async with conn as c:
        c._credential = credential  # for the hostile retries over HTTP
        step(f"{MODE} over {TRANSPORT}: tools/list")
        names = [t.name for t in (await c.list_tools()).tools]
        check("run" in names, f"tools: {names}")
        step("the config's warnings reach the client")
        for _ in range(50):
            if any("grants nothing" in json.dumps(m.data) for m in logged.messages):
                break
            await asyncio.sleep(0.05)
        check(any("grants nothing" in json.dumps(m.data) for m in logged.messages),
              f"no config warning: {[m.data for m in logged.messages]}")

        step("approve once in the client: the call runs")
        res = await call(c, person, {"argv": ["/bin/echo", "once"]}, ["approve_once"])
        check(stdout_of(res) == "once\n", text_of(res))
        shown = person.shown[-1]
        for want in ["tool: run", 'arguments: {"argv":["/bin/echo","once"]}', "taint: public",
                     "why: a grant says to ask", "expires:"]:
            check(want in shown, f"{want!r} not in {shown!r}")
        # On a legacy session over HTTP the notice rides the GET stream, read apart from
        # the request's own (docs/spec.md §5): it may come just after the result.
        for _ in range(100):
            if any(APPROVAL_ID.search(json.dumps(m.data)) for m in logged.messages):
                break
            await asyncio.sleep(0.05)
        check(any(APPROVAL_ID.search(json.dumps(m.data)) for m in logged.messages),
              "no approval notice in the log")

        step("decline in the client: approval_refused")
        res = await call(c, person, {"argv": ["/bin/echo", "no"]}, ["decline"])
        check(res.is_error and text_of(res).startswith("denied: approval_refused"), text_of(res))

        step("approve for this session: the same call runs again without asking")
        asked = len(person.shown)
        res = await call(c, person, {"argv": ["/bin/echo", "again"]}, [("session", 5)])
        check(stdout_of(res) == "again\n", text_of(res))
        res = await call(c, person, {"argv": ["/bin/echo", "again"]}, [])
        check(stdout_of(res) == "again\n", text_of(res))
        check(len(person.shown) == asked + 1, "the identical call asked again")

        step("no answer (cancel): the call waits for `boxmaker approve`")
        task = asyncio.create_task(call(c, person, {"argv": ["/bin/echo", "fallback"]}, ["cancel"]))
        await asyncio.wait_for(person.asked.wait(), 15)
        ids = await wait_pending()
        out = boxmaker("approve", ids[0])
        check(out.returncode == 0, out.stderr)
        res = await asyncio.wait_for(task, 30)
        check(stdout_of(res) == "fallback\n", text_of(res))
        check(pending_ids() == [], f"left pending: {pending_ids()}")

        if MODERN:
            await hostile_retries(c, url, person)

    step("a client that cannot answer waits for `boxmaker approve`; logs only when opted in")
    quiet = Logged()
    async with Conn(url, credential, logging_callback=quiet) as c:
        task = asyncio.create_task(c.call_tool("run", {"argv": ["/bin/echo", "page"]}))
        ids = await wait_pending()
        out = boxmaker("approve", ids[0])
        check(out.returncode == 0, out.stderr)
        res = await asyncio.wait_for(task, 30)
        check(stdout_of(res) == "page\n", text_of(res))
        if MODERN:
            check(quiet.messages == [], f"log messages without an opt-in: {[m.data for m in quiet.messages]}")
        else:
            check(any(ids[0] in json.dumps(m.data) for m in quiet.messages), "no approval notice")


async def main() -> None:
    proc, url, credential = (None, None, None)
    if TRANSPORT == "http":
        proc, url, credential = start_http()
    try:
        await scenario(url, credential)
    finally:
        stop(proc)


run(main, 110)
