"""The official Python MCP SDK over stdio against `boxmaker mcp --config FILE`."""

from common import BIN, CONFIG, Notes, initialize_and_list, run, scenario, step

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    params = StdioServerParameters(command=BIN, args=["mcp", "--config", CONFIG])
    notes = Notes()
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w, logging_callback=notes.on_log) as session:
            await initialize_and_list(session)
            await scenario(session, notes)
            step("done")


run(main)
