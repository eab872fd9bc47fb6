#!/usr/bin/env python3
"""N tool calls through `boxmaker mcp` in front of an instant gate, then exit: one whole
process for hyperfine to time side by side (docs/performance.md, "Front: confined, alone").

Usage: bench/front-calls.py TARGET_DIR N
  TARGET_DIR  a cargo target dir with dist/boxmaker and dist/examples/instant_gate
  (`cargo build --profile dist -p boxmaker -p front --bins --examples`)

Compare two builds (the per-call difference is the difference of the medians over N):
  hyperfine -N --runs 10 'python3 bench/front-calls.py A/target 1000' \\
             'python3 bench/front-calls.py B/target 1000'
"""
import asyncio, os, subprocess, sys, tempfile, time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(target, n):
    bm = os.path.join(target, "dist", "boxmaker")
    gate_bin = os.path.join(target, "dist", "examples", "instant_gate")
    with tempfile.TemporaryDirectory() as d:
        # boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config"): `init`
        # trusts what it writes; the record goes with the temporary directory.
        subprocess.run([bm, "init", d], check=True, stdout=subprocess.DEVNULL)
        # boxmaker uses a state directory only when it made it (docs/spec.md §6, "Whose
        # state"): `tools list` makes and marks it, with no gate (one would hold the lock the
        # instant gate takes), before the instant gate puts its lock and socket inside.
        subprocess.run([bm, "tools", "list", "--config", os.path.join(d, "boxmaker.toml")],
                       check=True, stdout=subprocess.DEVNULL)
        state = os.path.join(d, ".boxmaker")
        gate = subprocess.Popen([gate_bin, state], stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(os.path.join(state, "agent.sock")):
                time.sleep(0.005)
            params = StdioServerParameters(
                command=bm, args=["mcp", "--config", os.path.join(d, "boxmaker.toml"),
                                  "--session", "bench"])
            async with stdio_client(params, errlog=open(os.devnull, "w")) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    for _ in range(n):
                        res = await s.call_tool("read_file", {"path": "hello.txt"})
                        assert not res.is_error, res
        finally:
            gate.kill()
            gate.wait()
            subprocess.run([bm, "trust", "--revoke", "--config", os.path.join(d, "boxmaker.toml")],
                           capture_output=True)


asyncio.run(main(sys.argv[1], int(sys.argv[2])))
