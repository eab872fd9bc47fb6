"""A stdio MCP server (the official `mcp` SDK) serving one AgentDojo suite's tools.

    python3 server.py SUITE tools|readers

`readers` serves the suite's readers of third-party content (suites.READERS), `tools` the
rest; boxmaker runs each as its own `[[tool]]` in the session's box, the readers labelled
`untrusted = true`. Both share one environment: AgentDojo's environment for this session,
loaded with the pair's injection, which the driver (replay.py) puts in the session's
workspace as `/work/env.pickle` before the first call. Every call takes an exclusive lock
(`/work/env.lock`), loads the environment, runs AgentDojo's own function on it and saves it
back (pickle: a JSON round trip would rebuild some models from their `initial_*` fields and
lose what the calls changed). The result text is AgentDojo's rendering (`tool_result_to_str`:
YAML of the result); an AgentDojo error is an `isError` result with its message.

Only the light tool modules are imported (`suites.py`): the suite modules import every model
SDK (~6 s), the tool modules and the SDK ~1.5 s.
"""

import asyncio
import fcntl
import importlib
import os
import pickle
import sys
import tempfile

import yaml
from pydantic import BaseModel

import mcp.server.stdio
from mcp import types
from mcp.server.lowlevel import Server

from agentdojo.functions_runtime import FunctionsRuntime, make_function

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suites  # noqa: E402

WORK = os.environ.get("AGENTDOJO_WORK", "/work")
ENV_FILE = os.path.join(WORK, "env.pickle")
LOCK_FILE = os.path.join(WORK, "env.lock")


class Env:
    """The environment's fields as attributes: what AgentDojo's `Depends("inbox")` reads."""

    def __init__(self, fields):
        self.__dict__.update(fields)


def tool_result_to_str(result) -> str:
    """AgentDojo's `agent_pipeline.tool_execution.tool_result_to_str` (YAML dump), which
    cannot be imported without the model SDKs."""
    if isinstance(result, BaseModel):
        return yaml.safe_dump(result.model_dump()).strip()
    if isinstance(result, list):
        items = []
        for item in result:
            if type(item) in [str, int]:
                items.append(str(item))
            elif isinstance(item, BaseModel):
                items.append(item.model_dump())
            else:
                raise TypeError("Not valid type for item tool result: " + str(type(item)))
        return yaml.safe_dump(items).strip()
    return str(result)


def load_functions(suite, role):
    readers = suites.READERS[suite]
    out = []
    for module, names in suites.SUITES[suite]:
        mod = importlib.import_module(suites.TOOLS + module)
        for name in names:
            if (name in readers) == (role == "readers"):
                out.append(make_function(getattr(mod, name)))
    return out


def call(runtime, name, arguments):
    """Runs `name` on the session's environment under the lock; (text, is_error)."""
    with open(LOCK_FILE, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(ENV_FILE, "rb") as f:
            fields = pickle.load(f)
        env = Env(fields)
        result, error = runtime.run_function(env, name, arguments)
        fd, tmp = tempfile.mkstemp(dir=WORK, prefix=".env-")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(env.__dict__, f)
        os.replace(tmp, ENV_FILE)
    if error is not None:
        return error, True
    return tool_result_to_str(result), False


def main():
    suite, role = sys.argv[1], sys.argv[2]
    functions = load_functions(suite, role)
    runtime = FunctionsRuntime(functions)
    listed = [
        types.Tool(
            name=f.name,
            description=f.description,
            input_schema=f.parameters.model_json_schema(),
        )
        for f in functions
    ]

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params):
        text, is_error = call(runtime, params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=is_error
        )

    server = Server(f"agentdojo-{suite}-{role}", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run():
        async with mcp.server.stdio.stdio_server() as (r, w):
            await server.run(r, w, server.create_initialization_options())

    asyncio.run(run())


if __name__ == "__main__":
    main()
