"""A conversation spread over the two replicas of deploy/compose.yaml, as a client behind a
load balancer would make it (deploy/podman-fleet.sh runs it; the official Python MCP SDK).

    python3 fleet_client.py URL1 URL2 TOKEN EXEC1 EXEC2 [cut]

URL1, URL2: the replicas' MCP endpoints; TOKEN: a conversation credential minted by replica
1; EXEC1, EXEC2: a command prefix that runs `boxmaker` in each replica's container (`podman
exec NAME`). Checks, each or exit 1:

- replica 2 serves the credential replica 1 minted, in the same conversation;
- a `run` asked on replica 1 waits for a person, shows on replica 2's `boxmaker approvals`,
  is approved there, and runs once, in a box; the approval cannot be answered again on
  either replica;
- the conversation's taint, raised by that answer on replica 1, is what replica 2's
  `boxmaker sessions` shows.

With `cut` (PostgreSQL taken off the network by the caller) it checks only that a call on
replica 2 is refused, saying the state database could not be read, within a minute.
"""

import asyncio
import json
import re
import shlex
import subprocess
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

URL1, URL2, TOKEN, EXEC1, EXEC2 = sys.argv[1:6]
CONFIG = "/etc/boxmaker/boxmaker.toml"
APPROVAL_ID = re.compile(r"\bap-[A-Za-z0-9_-]+")


def check(ok: bool, what: str) -> None:
    if not ok:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def boxmaker(prefix: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*shlex.split(prefix), "boxmaker", *args, "--config", CONFIG],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def conversation(url: str, body):
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=httpx2.Timeout(30.0, read=120.0),
    ) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return await body(session)


async def cut() -> None:
    """Replica 2 cut from the store: a call there fails closed, saying why, in bounded time."""

    async def one_call(session):
        started = asyncio.get_running_loop().time()
        res = await session.call_tool("list_dir", {"path": "/"})
        text = "".join(getattr(c, "text", "") for c in res.content)
        return res.is_error, text, asyncio.get_running_loop().time() - started

    is_error, text, took = await conversation(URL2, one_call)
    check(is_error and "state database" in text,
          f"cut from the store, replica 2 refused the call in {took:.0f} s: {text.strip()[:200]!r}")
    check(took < 60, f"and did not wait on the kernel's retransmissions ({took:.0f} s)")


async def main() -> None:
    if len(sys.argv) > 6 and sys.argv[6] == "cut":
        await cut()
        return
    conversation_id = "mcp-" + TOKEN.split(".")[0]

    async def tools(session):
        return sorted(t.name for t in (await session.list_tools()).tools)

    names1 = await conversation(URL1, tools)
    names2 = await conversation(URL2, tools)
    check(names1 == names2 and "run" in names1, f"both replicas serve the credential: {names2}")

    async def asked_run(session):
        call = asyncio.create_task(
            session.call_tool("run", {"argv": ["/bin/echo", "ran-in-a-box"]})
        )
        approval = None
        for _ in range(100):
            out = boxmaker(EXEC2, "approvals", "--json")
            ids = APPROVAL_ID.findall(out.stdout)
            if ids:
                approval = ids[0]
                break
            await asyncio.sleep(0.2)
        check(approval is not None, "the run asked on replica 1 is pending on replica 2")
        check(not call.done(), "the run waits for a person")
        out = boxmaker(EXEC2, "approve", approval)
        check(out.returncode == 0, f"approved on replica 2 ({out.stdout.strip()}{out.stderr.strip()})")
        res = await asyncio.wait_for(call, 60)
        text = "".join(getattr(c, "text", "") for c in res.content)
        check(not res.is_error and "ran-in-a-box" in text, f"the run ran on replica 1: {text.strip()!r}")
        return approval

    approval = await conversation(URL1, asked_run)
    for name, prefix in (("replica 1", EXEC1), ("replica 2", EXEC2)):
        again = boxmaker(prefix, "approve", approval)
        check(again.returncode != 0, f"{name} refuses to answer it again: {again.stderr.strip()}")

    out = boxmaker(EXEC2, "sessions", "--json")
    check(out.returncode == 0, "replica 2 lists the sessions")
    rows = json.loads(out.stdout)["body"]["items"]
    row = next((r for r in rows if r.get("id") == conversation_id), None)
    check(row is not None, f"replica 2 knows {conversation_id}: {out.stdout.strip()[:300]}")
    # The deploy config's `run` is `internal`: its answer raised the conversation there.
    check(
        row.get("class") == "internal",
        f"replica 2 sees the taint replica 1 raised: {json.dumps(row)}",
    )


asyncio.run(main())
