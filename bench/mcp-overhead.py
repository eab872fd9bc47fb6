#!/usr/bin/env python3
"""What boxmaker adds to an MCP tool call, measured side by side with the official Python
MCP SDK as the client (issue 6, docs/performance.md "Front: MCP overhead").

Paths, each timed per call (p50, p99, mean), N calls after a warm-up:
  direct        the same work without MCP: Python reads the file itself
  plain MCP     a plain rmcp server with one trivial tool (crates/front/examples/trivial_server.rs)
  front only    `boxmaker mcp` in front of a gate that answers at once
                (crates/front/examples/instant_gate.rs): the front's own cost, no box
  full, boxed   `boxmaker mcp` with the real gate and runner: read_file in a box

Usage: tests/py/client-venv/bin/python3 bench/mcp-overhead.py [N]
  (builds the dist (shipped) binaries first; needs `make deps`, which makes that virtualenv)
"""
import asyncio, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 300

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def build():
    subprocess.run(["cargo", "build", "--profile", "dist", "-q", "-p", "boxmaker", "-p", "front", "--bins", "--examples"],
                   cwd=ROOT, check=True)


def stats(samples):
    s = sorted(samples)
    p = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return {"p50": p(0.50) * 1e3, "p99": p(0.99) * 1e3, "mean": statistics.fmean(s) * 1e3}


async def time_mcp(command, args, tool, arguments, n, env=None):
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            for _ in range(max(10, n // 10)):
                res = await s.call_tool(tool, arguments)
                assert not res.is_error, res
            samples = []
            for _ in range(n):
                t = time.perf_counter()
                res = await s.call_tool(tool, arguments)
                samples.append(time.perf_counter() - t)
                assert not res.is_error, res
            return stats(samples)


def setup(d):
    bm = os.path.join(TARGET, "dist", "boxmaker")
    subprocess.run([bm, "init", d], check=True, stdout=subprocess.DEVNULL)
    # boxmaker uses a state directory only when it made it (docs/spec.md §6, "Whose state"):
    # `tools list` makes and marks it, with no gate (one would hold the lock the instant gate
    # takes), before the workspace, or the instant gate's lock and socket, go inside.
    subprocess.run([bm, "tools", "list", "--config", os.path.join(d, "boxmaker.toml")],
                   check=True, stdout=subprocess.DEVNULL)
    ws = os.path.join(d, ".boxmaker", "work", "bench")
    os.makedirs(ws, exist_ok=True)
    with open(os.path.join(ws, "hello.txt"), "w") as f:
        f.write("hello from the workspace\n")
    return bm, os.path.join(d, "boxmaker.toml"), os.path.join(ws, "hello.txt")


async def main():
    build()
    ex = os.path.join(TARGET, "dist", "examples")
    results = {}
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        try:
            bm, cfg, path = setup(d1)
            samples = []
            for _ in range(n_direct := N * 10):
                t = time.perf_counter()
                with open(path) as f:
                    f.read()
                samples.append(time.perf_counter() - t)
            results["direct (Python reads the file)"] = stats(samples)
            results["plain MCP server, trivial tool"] = await time_mcp(
                os.path.join(ex, "trivial_server"), [], "read_file", {"path": "hello.txt"}, N)
            # The front alone: an instant gate holds the state directory's lock and socket.
            bm2, cfg2, _ = setup(d2)
            gate = subprocess.Popen([os.path.join(ex, "instant_gate"), os.path.join(d2, ".boxmaker")],
                                    stderr=subprocess.DEVNULL)
            try:
                for _ in range(200):
                    if os.path.exists(os.path.join(d2, ".boxmaker", "agent.sock")):
                        break
                    time.sleep(0.01)
                results["boxmaker mcp, instant gate (no box)"] = await time_mcp(
                    bm2, ["mcp", "--config", cfg2, "--session", "bench"], "read_file",
                    {"path": "hello.txt"}, N)
            finally:
                gate.kill()
                gate.wait()
            results["boxmaker mcp, real gate + box"] = await time_mcp(
                bm, ["mcp", "--config", cfg, "--session", "bench"], "read_file",
                {"path": "hello.txt"}, max(50, N // 3))
        finally:
            # `init` trusted the configs (docs/spec.md §6, "Whose config"); their records go
            # with the temporary directories.
            for d in (d1, d2):
                subprocess.run([os.path.join(TARGET, "dist", "boxmaker"), "trust", "--revoke", "--config",
                                os.path.join(d, "boxmaker.toml")], capture_output=True)
    width = max(len(k) for k in results)
    print(f"{'path':<{width}}  {'p50 ms':>8}  {'p99 ms':>8}  {'mean ms':>8}")
    for k, v in results.items():
        print(f"{k:<{width}}  {v['p50']:8.3f}  {v['p99']:8.3f}  {v['mean']:8.3f}")
    plain = results["plain MCP server, trivial tool"]["p50"]
    front = results["boxmaker mcp, instant gate (no box)"]["p50"]
    print(f"\nadded by boxmaker's front per call, p50, no box: {front - plain:.3f} ms (goal: under 1 ms)")


asyncio.run(main())
