"""mcp-server-fetch behind boxmaker, driven by the official Python MCP SDK (issue 14).

The server runs in its session's box with `network = true` and its own guard switched off
(`--allow-private-ips`: a server that would go anywhere), so what stops it is boxmaker's
egress proxy alone. The client sees:
- an allowed page fetched;
- an unlisted destination refused, the proxy's one-line reason in the tool error;
- the metadata address refused, by address and by a name that resolves to it;
- after the session reads a confidential file, the same public destination refused with
  the clearance sentence, while a destination cleared for confidential still works.

Environment (set by crates/boxmaker/tests/egress.rs):
  BOXMAKER_BIN, BOXMAKER_CONFIG   the binary and the lab's config
  FETCH_SESSION                   the session id for `boxmaker mcp --session`
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN = os.environ["BOXMAKER_BIN"]
CONFIG = os.environ["BOXMAKER_CONFIG"]
SESSION = os.environ["FETCH_SESSION"]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def text_of(res):
    return "\n".join(getattr(b, "text", "") for b in res.content)


async def fetch(session, url):
    # raw: the page as the origin sent it. Simplified markdown goes through readabilipy,
    # which runs `npm install` on first use when a `node` is on the PATH: a destination
    # (registry.npmjs.org) this config does not allow, so it fails before any page would.
    res = await session.call_tool("fetch_fetch", {"url": url, "raw": True})
    text = text_of(res)
    print(f"-- fetch {url}: is_error={res.is_error}: {text[:400]}", flush=True)
    return res, text


async def main():
    # The SDK passes a server only a few variables (HOME, PATH, ...) unless told: boxmaker
    # needs the lab's SSL_CERT_FILE to hand to the fetch server's box (`env = [...]`).
    params = StdioServerParameters(
        command=BIN,
        args=["mcp", "--config", CONFIG, "--session", SESSION],
        env=dict(os.environ),
    )
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            check("fetch_fetch" in names, f"fetch_fetch missing from {names}")

            res, text = await fetch(session, "https://allowed.test/")
            check(not res.is_error, f"allowed page: {text}")
            check("origin page for allowed.test" in text, f"allowed page: {text}")

            res, text = await fetch(session, "https://other.test/")
            check(res.is_error, f"unlisted page was fetched: {text}")
            check(
                "boxmaker refused other.test:443: it is not in the config's egress rules"
                in text,
                f"unlisted page: {text}",
            )

            res, text = await fetch(session, "http://169.254.169.254/latest/meta-data/")
            check(res.is_error, f"metadata address was fetched: {text}")
            check("403" in text, f"metadata address: {text}")

            res, text = await fetch(session, "https://meta.test/latest/meta-data/")
            check(res.is_error, f"name of the metadata address was fetched: {text}")
            check("169.254.169.254" in text, f"metadata name: {text}")

            res = await session.call_tool("read_file", {"path": "/data/secrets/plan.txt"})
            check(not res.is_error, f"read_file: {text_of(res)}")
            print("-- read the confidential file", flush=True)

            res, text = await fetch(session, "https://allowed.test/")
            check(res.is_error, f"a confidential session fetched a public page: {text}")
            check(
                "boxmaker refused allowed.test:443: this session holds confidential data "
                "and that destination is cleared for public" in text,
                f"clearance: {text}",
            )

            res, text = await fetch(session, "https://cleared.test/")
            check(not res.is_error, f"cleared page: {text}")
            check("origin page for cleared.test" in text, f"cleared page: {text}")
    print("fetch client: ok", flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
