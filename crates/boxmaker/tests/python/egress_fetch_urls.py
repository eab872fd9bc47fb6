"""Calls `TOOL {"url": URL}` for each TOOL URL pair on the command line (mcp-server-fetch
behind boxmaker, through the official Python MCP SDK) and prints one JSON line per call:
{"tool", "url", "is_error", "text"} — exactly what a model is shown (issue 21: the guide's
refusal example).

Environment (set by crates/boxmaker/tests/egress.rs):
  BOXMAKER_BIN, BOXMAKER_CONFIG   the binary and the lab's config
  FETCH_SESSION                   the session id for `boxmaker mcp --session`
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(urls):
    params = StdioServerParameters(
        command=os.environ["BOXMAKER_BIN"],
        args=["mcp", "--config", os.environ["BOXMAKER_CONFIG"], "--session",
              os.environ["FETCH_SESSION"]],
        env=dict(os.environ),
    )
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            for tool, url in zip(urls[::2], urls[1::2]):
                res = await session.call_tool(tool, {"url": url, "raw": True})
                text = "\n".join(getattr(b, "text", "") for b in res.content)
                print(json.dumps({"tool": tool, "url": url, "is_error": bool(res.is_error),
                                  "text": text}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
