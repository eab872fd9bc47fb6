"""One conversation's taint, held by the official Python SDK in either protocol era, over
stdio or streamable HTTP (docs/spec.md §5, "A conversation over HTTP").

Environment, beside common.py's:
  ERA_TRANSPORT  stdio | http
  ERA_MODE       legacy | 2026-07-28 (the SDK's `Client(mode=...)`)

The attack (issue 29, item 1): a 2026-07-28 request carries no session, and a front that
made a session per request let a client read a confidential file and then call a tool
cleared only for public on its next request. Every path must refuse that second call.
"""

import sys
import asyncio
import json
import os
import re
import subprocess
import threading

import httpx2
from common import BIN, CONFIG, PLAN, boxmaker, check, label_of, run, step, text_of
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TRANSPORT = os.environ["ERA_TRANSPORT"]
MODE = os.environ["ERA_MODE"]
BANNER = re.compile(r"boxmaker mcp: (http://\S+/mcp) with `Authorization: Bearer (\S+)`")
WANT_VERSION = "2025-11-25" if MODE == "legacy" else MODE


def start_http() -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen(
        [BIN, "mcp", "--config", CONFIG, "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: list[tuple[str, str]] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            # One write, to stderr: a relayed line never splits a line the client prints.
            sys.stderr.write(f"server stderr: {line.rstrip(chr(10))}\n")
            m = BANNER.search(line)
            if m and not found:
                found.append((m.group(1), m.group(2)))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(timeout=30)
    if not found:
        proc.kill()
        raise AssertionError("no `boxmaker mcp: http://…` line on stderr")
    return proc, found[0][0], found[0][1]


class Conn:
    """An SDK client in MODE on this test's transport (a new connection each time)."""

    def __init__(self, url: str | None, credential: str | None) -> None:
        self.url, self.credential = url, credential

    async def __aenter__(self) -> Client:
        if TRANSPORT == "stdio":
            transport = stdio_client(StdioServerParameters(command=BIN, args=["mcp", "--config", CONFIG]))
        else:
            self.http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {self.credential}"},
                timeout=httpx2.Timeout(30.0, read=60.0),
            )
            transport = streamable_http_client(self.url, http_client=self.http)
        self.client = Client(transport, mode=MODE)
        c = await self.client.__aenter__()
        print("protocol version:", c.protocol_version, flush=True)
        check(c.protocol_version == WANT_VERSION, f"negotiated {c.protocol_version}, not {WANT_VERSION}")
        return c

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(*exc)
        if TRANSPORT == "http":
            await self.http.aclose()


async def share(c: Client, name: str) -> tuple[bool, str]:
    res = await c.call_tool("share", {"path": name, "content": "leak"})
    text = text_of(res)
    print(f"share {name}:", res.is_error, text, flush=True)
    return res.is_error, text


def mcp_sessions() -> list[str]:
    out = boxmaker("sessions", "--json")
    check(out.returncode == 0, f"boxmaker sessions failed: {out.stderr}")
    return sorted(re.findall(r'"(mcp-[0-9a-f]{16})"', out.stdout))


async def main() -> None:
    proc, url, credential = (None, None, None)
    if TRANSPORT == "http":
        proc, url, credential = start_http()
    try:
        async with Conn(url, credential) as c:
            step("tools/list")
            names = [t.name for t in (await c.list_tools()).tools]
            check("share" in names and "read_file" in names, f"tools: {names}")
            step("share on a clean conversation: allowed")
            is_error, text = await share(c, "a.txt")
            check(not is_error, f"share on a clean conversation was refused: {text}")
            step("a confidential read")
            res = await c.call_tool("read_file", {"path": "/data/notes/plan.txt"})
            check(not res.is_error and text_of(res) == PLAN, f"read_file: {text_of(res)!r}")
            check(label_of(res)["class"] == "confidential", f"label: {res.meta}")
            step("share on the next request: denied (the conversation keeps its taint)")
            for n in range(3):
                is_error, text = await share(c, f"b{n}.txt")
                check(is_error and text.startswith("denied: taint_too_high"), f"request {n}: {text!r}")
        if TRANSPORT == "http":
            step("a new connection with the same credential is the same conversation")
            async with Conn(url, credential) as c:
                is_error, text = await share(c, "c.txt")
                check(is_error and text.startswith("denied: taint_too_high"), f"new connection: {text!r}")
            step("a credential from `boxmaker token` is another conversation")
            out = boxmaker("token")
            check(out.returncode == 0, f"boxmaker token failed: {out.stderr}")
            other = out.stdout.strip()
            check(other != credential, "boxmaker token printed the same credential")
            async with Conn(url, other) as c:
                is_error, text = await share(c, "d.txt")
                check(not is_error, f"a new conversation's share was refused: {text}")
            step("a forged credential is refused")
            conv, mac = credential.split(".")
            forged = f"{conv}.{'0' * len(mac)}"
            try:
                async with Conn(url, forged) as c:
                    await c.list_tools()
                raise AssertionError("a forged credential was served")
            except AssertionError:
                raise
            except BaseException as e:  # noqa: BLE001 - the SDK wraps the 401 in groups
                print("forged credential:", type(e).__name__, flush=True)
        step("no request started a session of its own")
        sessions = mcp_sessions()
        print("sessions:", json.dumps(sessions), flush=True)
        want = 2 if TRANSPORT == "http" else 1
        check(len(sessions) == want, f"{len(sessions)} sessions, not {want}: {sessions}")
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


run(main)
