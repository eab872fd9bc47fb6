"""What the two-era tests share: the official Python SDK's `Client` in either protocol era
(`mode="legacy"` or `"2026-07-28"`), over stdio or streamable HTTP, against `boxmaker mcp`.

Environment, beside common.py's:
  ERA_TRANSPORT  stdio | http
  ERA_MODE       legacy | 2026-07-28
"""

import sys
import os
import re
import subprocess
import threading
from typing import Any

import httpx2
from common import BIN, CONFIG, check
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TRANSPORT = os.environ["ERA_TRANSPORT"]
MODE = os.environ["ERA_MODE"]
MODERN = MODE != "legacy"
BANNER = re.compile(r"boxmaker mcp: (http://\S+/mcp) with `Authorization: Bearer (\S+)`")
WANT_VERSION = "2025-11-25" if MODE == "legacy" else MODE


def start_http() -> tuple[subprocess.Popen, str, str]:
    """`boxmaker mcp --http` on a free port: the process, its URL and its credential."""
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


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


class Conn:
    """An SDK client in MODE on this test's transport (a new connection each time); over
    stdio a new connection is a new conversation, over HTTP the credential is."""

    def __init__(self, url: str | None, credential: str | None, **client: Any) -> None:
        self.url, self.credential, self.options = url, credential, client

    async def __aenter__(self) -> Client:
        if TRANSPORT == "stdio":
            transport = stdio_client(StdioServerParameters(command=BIN, args=["mcp", "--config", CONFIG]))
        else:
            self.http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {self.credential}"},
                timeout=httpx2.Timeout(30.0, read=60.0),
            )
            transport = streamable_http_client(self.url, http_client=self.http)
        self.client = Client(transport, mode=MODE, **self.options)
        c = await self.client.__aenter__()
        print("protocol version:", c.protocol_version, flush=True)
        check(c.protocol_version == WANT_VERSION, f"negotiated {c.protocol_version}, not {WANT_VERSION}")
        return c

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(*exc)
        if TRANSPORT == "http":
            await self.http.aclose()
