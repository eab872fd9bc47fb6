"""Runs exactly the stdio command line an MCP client config names (the Rust test takes it from
the guide's Claude Desktop snippet, with the real paths put in) with the official Python
SDK's stdio client: initialize, tools/list, and one allowed call.

BOXMAKER_SERVER: JSON {"command": "...", "args": [...]}, as in `mcpServers.boxmaker`.
"""

import json
import os

from common import check, initialize_and_list, label_of, run, step, text_of

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    server = json.loads(os.environ["BOXMAKER_SERVER"])
    print("command line:", server["command"], *server["args"])
    params = StdioServerParameters(command=server["command"], args=server["args"])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            await initialize_and_list(session)
            step("an allowed call")
            res = await session.call_tool("write_file", {"path": "hello.txt", "content": "hi"})
            text = text_of(res)
            print("write_file:", res.is_error, text, res.meta)
            check(not res.is_error, f"write_file failed: {text}")
            check(label_of(res)["class"] == "public", f"label: {res.meta}")
            step("done")


run(main)
