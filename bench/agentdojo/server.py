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
SDK (~6 s), the tool modules and the SDK ~1 s of CPU — twice a session, more than all the
rest of a session costs. So the replay runs one **template** per suite and run:

    python3 server.py --template SOCKET SUITE      # outside every box, started by replay.py
    python3 -S -I stub.py SOCKET SUITE ROLE        # the [[tool]]'s command, in the box

The template imports the modules and builds both roles' functions once, then waits on a Unix
socket (mounted read-only into the boxes). The stub, in the session's box (a bare
interpreter: ~10 ms), hands it its standard input, output and error and a descriptor of the
box's `/work` (SCM_RIGHTS), and waits. For each stub the template forks: the child serves
that one server on those descriptors, its working directory that `/work`, exactly as
`server.py SUITE ROLE` would in the box, and ends with its standard input or its stub. The
template holds no session's anything — no environment, no descriptor once a child is
forked — so no state passes between sessions: each child starts from the same imported
modules, and everything a session changes lives in its own `/work`.
"""

import asyncio
import fcntl
import importlib
import os
import pickle
import sys

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
ROLES = ("tools", "readers")


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
        # Under the lock, so one name will do (and a template's child cannot ask for its
        # working directory's path: it lies in the box's mount namespace).
        tmp = os.path.join(WORK, ".env-new")
        with open(tmp, "wb") as f:
            pickle.dump(env.__dict__, f)
        os.replace(tmp, ENV_FILE)
    if error is not None:
        return error, True
    return tool_result_to_str(result), False


def serve(suite, role, functions):
    """Serves `functions` over MCP on standard input and output until the input ends."""
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


def child(conn, suite, functions):
    """One stub's server, in a child forked from the template: takes the stub's descriptors
    (standard input, output, error, and its box's `/work`), serves, and exits."""
    import signal
    import socket
    import threading

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        msg, fds, _, _ = socket.recv_fds(conn, 256, 4)
        role = msg.decode().split()[-1]
        if len(fds) != 4 or role not in ROLES:
            raise ValueError(f"a stub sent {msg!r} and {len(fds)} descriptors")
    except Exception as e:  # noqa: BLE001 — a stub that went wrong ends its own server
        print(f"template: {e}", file=sys.stderr)
        os._exit(1)
    for fd, to in zip(fds[:3], (0, 1, 2)):
        os.dup2(fd, to)
        os.close(fd)
    os.fchdir(fds[3])
    os.close(fds[3])
    global WORK, ENV_FILE, LOCK_FILE
    WORK, ENV_FILE, LOCK_FILE = ".", "env.pickle", "env.lock"

    # The stub's box may end first (its session's reset, its timeout): then so does this.
    def watch():
        try:
            conn.recv(1)
        finally:
            os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    try:
        serve(suite, role, functions[role])
    finally:
        os._exit(0)


def template(path, suite):
    """Imports once, then forks a server per stub that connects (see the module's text)."""
    import gc
    import signal
    import socket

    functions = {role: load_functions(suite, role) for role in ROLES}
    # The children never return here; they are reaped by the kernel.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = f"{path}.{os.getpid()}"
    listener.bind(tmp)
    # The stubs run as a box's user (another uid than the template's, when it is root).
    os.chmod(tmp, 0o666)
    os.rename(tmp, path)
    listener.listen(64)
    # What the children share with the template is never written again: keep the
    # collector from touching (and so copying) it in every child.
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            child(conn, suite, functions)
        conn.close()


def main():
    if sys.argv[1] == "--template":
        template(sys.argv[2], sys.argv[3])
        return
    suite, role = sys.argv[1], sys.argv[2]
    serve(suite, role, load_functions(suite, role))


if __name__ == "__main__":
    main()
