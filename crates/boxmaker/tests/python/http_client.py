"""The official Python MCP SDK's streamable HTTP client against
`boxmaker mcp --config FILE --http 127.0.0.1:PORT`, with the bearer token boxmaker prints; and
plain HTTP requests without the token, or with a wrong one, which must be 401."""

import sys
import json
import logging
import os
import re
import socket
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.request

from common import BIN, CONFIG, Notes, check, initialize_and_list, run, scenario, step

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

BANNER = re.compile(r"boxmaker mcp: (http://\S+/mcp) with `Authorization: Bearer (\S+)`")


def free_port() -> int:
    # `--http 127.0.0.1:0` binds a free port but prints `:0` in its banner (a front bug,
    # reported), so the test picks the port itself.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str, str, list[str]]:
    port = free_port()
    proc = subprocess.Popen(
        [BIN, "mcp", "--config", CONFIG, "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    found: list[tuple[str, str]] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            # One write, to stderr: a relayed line never splits a line the client prints.
            sys.stderr.write(f"server stderr: {line.rstrip(chr(10))}\n")
            m = BANNER.search(line)
            if m and not found:
                found.append((m.group(1), m.group(2)))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(timeout=20)
    if not found:
        proc.kill()
        raise AssertionError(f"no `boxmaker mcp: http://…` line on stderr: {lines}")
    url, token = found[0]
    check(url == f"http://127.0.0.1:{port}/mcp", f"banner names {url}, not port {port}")
    return proc, url, token, lines


def post_initialize(url: str, headers: dict[str, str]) -> int:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "urllib", "version": "0"},
            },
        }
    ).encode()
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


async def main() -> None:
    proc, url, token, _lines = start_server()
    try:
        print("url:", url)
        step("the token file is 0600 and holds the printed token")
        state = os.path.join(os.path.dirname(CONFIG), ".boxmaker")
        token_file = os.path.join(state, "http.token")
        mode = stat.S_IMODE(os.stat(token_file).st_mode)
        check(mode == 0o600, f"{token_file} has mode {oct(mode)}")
        with open(token_file) as f:
            check(f.read().strip() == token, "http.token does not hold the printed token")

        step("no token: 401")
        code = post_initialize(url, {})
        print("without a token:", code)
        check(code == 401, f"without a token the answer was {code}, not 401")
        step("a wrong token: 401")
        code = post_initialize(url, {"Authorization": "Bearer " + "0" * len(token)})
        print("with a wrong token:", code)
        check(code == 401, f"with a wrong token the answer was {code}, not 401")
        code = post_initialize(url, {"Authorization": "Basic " + token})
        print("with the token under another scheme:", code)
        check(code == 401, f"with `Basic TOKEN` the answer was {code}, not 401")
        step("the right token: the server answers")
        code = post_initialize(url, {"Authorization": "Bearer " + token})
        print("with the token:", code)
        check(code == 200, f"with the token the answer was {code}, not 200")

        step("the Python SDK's streamable HTTP client with the bearer header")
        # What the SDK logs of the server's answers: a DELETE of the session it does not
        # expect (anything but 200 or 204) is "Session termination failed: STATUS".
        sdk_log: list[str] = []

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                sdk_log.append(record.getMessage())

        logging.getLogger("mcp.client.streamable_http").addHandler(Keep(logging.WARNING))
        notes = Notes()
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(30.0, read=120.0),
        ) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                r, w = streams[0], streams[1]
                async with ClientSession(r, w, logging_callback=notes.on_log) as session:
                    await initialize_and_list(session)
                    await scenario(session, notes)
        step("the session's DELETE is answered as the SDK expects")
        print("SDK warnings:", sdk_log)
        check(
            not any("Session termination failed" in m for m in sdk_log),
            f"the SDK logged {sdk_log}",
        )
        step("done")
        check(proc.poll() is None, f"the server exited: {proc.returncode}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


run(main)
