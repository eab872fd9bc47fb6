#!/usr/bin/env python3
"""What boxmaker adds to a downstream MCP server's tool call (issue 7, docs/performance.md),
measured side by side with the official Python MCP SDK as the client and the real
`mcp-server-time` (PyPI, installed by `make deps` into tests/py/venv) as the server.

Paths, each timed per call (p50, p90, p99, mean), N calls after W warm-up calls:
  direct         the client starts mcp-server-time itself (on the host, no box) and calls
                 its `get_current_time` over stdio
  boxmaker mcp   the client starts `boxmaker mcp`, whose config runs the same server inside
                 the session's box as the downstream tool `time`: `time_get_current_time`

First-call cost, each the median of R runs: the time from starting the client's stdio
transport (a new process) to the first result, with no server running yet:
  direct                       start the server, initialize, one call
  boxmaker mcp, cold           a fresh state dir: discovery runs, then box + server start
  boxmaker mcp, warm discovery the discovery cache is in place: only box + server start

Usage: tests/py/client-venv/bin/python3 bench/downstream-overhead.py [N] [W] [--direct-only]
  (builds the dist (shipped) binary first unless --direct-only; needs `make deps`)
"""
import asyncio, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(ARGS[0]) if len(ARGS) > 0 else 300
WARMUP = int(ARGS[1]) if len(ARGS) > 1 else 20
FIRST_RUNS = 5
DIRECT_ONLY = "--direct-only" in sys.argv

VENV = os.path.join(ROOT, "tests", "py", "venv")
VENV_PY = os.path.join(VENV, "bin", "python3")
SERVER_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
ARGUMENTS = {"timezone": "UTC"}

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def build():
    subprocess.run(["cargo", "build", "--profile", "dist", "-q", "-p", "boxmaker"], cwd=ROOT, check=True)
    return os.path.join(TARGET, "dist", "boxmaker")


def stats(samples):
    s = sorted(samples)
    p = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return {"p50": p(0.50) * 1e3, "p90": p(0.90) * 1e3, "p99": p(0.99) * 1e3,
            "mean": statistics.fmean(s) * 1e3}


def check(res):
    if res.is_error:
        raise SystemExit(f"the call failed: {res.content}")
    if "UTC" not in res.content[0].text:
        raise SystemExit(f"unexpected answer: {res.content}")


# The servers' and boxmaker's stderr (session banners, server logs) would clutter the table.
QUIET = open(os.devnull, "w")


async def per_call(params, tool):
    async with stdio_client(params, errlog=QUIET) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            for _ in range(WARMUP):
                check(await s.call_tool(tool, ARGUMENTS))
            samples = []
            for _ in range(N):
                t = time.perf_counter()
                res = await s.call_tool(tool, ARGUMENTS)
                samples.append(time.perf_counter() - t)
                check(res)
            return stats(samples)


async def first_call(params, tool):
    t = time.perf_counter()
    async with stdio_client(params, errlog=QUIET) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            check(await s.call_tool(tool, ARGUMENTS))
            took = time.perf_counter() - t
    return took * 1e3


def config(d, bm):
    subprocess.run([bm, "init", d], check=True, stdout=subprocess.DEVNULL)
    path = os.path.join(d, "boxmaker.toml")
    with open(path, "a") as f:
        f.write(f"""
[[mount]]
host = "{VENV}"
at = "/opt/pyvenv"
class = "public"

[[tool]]
name = "time"
mcp = ["/opt/pyvenv/bin/python3", {", ".join('"%s"' % a for a in SERVER_ARGS)}]
class = "public"

[[grant]]
tool = "time_*"
effect = "allow"
""")
    # boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config"): `init`
    # trusted what it wrote, the lines added here need the word again.
    subprocess.run([bm, "trust", "--config", path], check=True, stdout=subprocess.DEVNULL)
    return path


def boxmaker_params(bm, cfg, session):
    return StdioServerParameters(command=bm, args=["mcp", "--config", cfg, "--session", session])


async def main():
    if not os.path.exists(VENV_PY):
        raise SystemExit(f"no {VENV_PY}: run `make deps`")
    direct = StdioServerParameters(command=VENV_PY, args=SERVER_ARGS)
    per, first = {}, {}
    per["direct: client -> mcp-server-time"] = await per_call(direct, "get_current_time")
    first["direct: start server, initialize, call"] = statistics.median(
        [await first_call(direct, "get_current_time") for _ in range(FIRST_RUNS)])
    if not DIRECT_ONLY:
        bm = build()
        with tempfile.TemporaryDirectory() as d:
            cfg = config(d, bm)
            try:
                cold = []
                for i in range(FIRST_RUNS):
                    shutil.rmtree(os.path.join(d, ".boxmaker"), ignore_errors=True)
                    cold.append(await first_call(boxmaker_params(bm, cfg, f"cold-{i}"), "time_get_current_time"))
                first["boxmaker mcp, cold (discovery + box + server)"] = statistics.median(cold)
                first["boxmaker mcp, warm discovery (box + server)"] = statistics.median(
                    [await first_call(boxmaker_params(bm, cfg, f"first-{i}"), "time_get_current_time")
                     for i in range(FIRST_RUNS)])
                per["boxmaker mcp -> box -> mcp-server-time"] = await per_call(
                    boxmaker_params(bm, cfg, "bench"), "time_get_current_time")
            finally:
                # The trust record goes with the temporary directory.
                subprocess.run([bm, "trust", "--revoke", "--config", cfg], capture_output=True)

    print(f"\nPer call, {N} calls after {WARMUP} warm-up calls (ms):\n")
    print("| path | p50 | p90 | p99 | mean |")
    print("|---|---:|---:|---:|---:|")
    for k, v in per.items():
        print(f"| {k} | {v['p50']:.3f} | {v['p90']:.3f} | {v['p99']:.3f} | {v['mean']:.3f} |")
    print(f"\nFirst call, median of {FIRST_RUNS} runs, from the client's start to the first result (ms):\n")
    print("| path | ms |")
    print("|---|---:|")
    for k, v in first.items():
        print(f"| {k} | {v:.1f} |")
    if len(per) == 2:
        (_, d), (_, b) = per.items()
        print(f"\nadded by boxmaker per call, p50: {b['p50'] - d['p50']:.3f} ms "
              f"(p90 {b['p90'] - d['p90']:.3f}, p99 {b['p99'] - d['p99']:.3f}; goal: under 2 ms p50)")


asyncio.run(main())
