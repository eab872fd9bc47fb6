#!/usr/bin/env python3
"""A tool call through boxmaker beside the server a user would otherwise run (issue 22,
docs/performance.md "Calls: warm file box, run box, throughput").

The official Python MCP SDK is the client on every path, over stdio, after a warm-up. Each
boxmaker path is timed beside its anchor, call for call: both sessions open at once, one call
on each in turn (alternating which goes first), so both see the same moment of a shared
machine; `paired` is the median of the per-round ratios:

  read_file  plain      a plain Python MCP server (the SDK's MCPServer) whose tool reads the file
             boxmaker   `boxmaker mcp`, builtin read_file (gate, runner, the session's warm box)
  time       direct     the real mcp-server-time (PyPI), started by the client on the host
             boxmaker   `boxmaker mcp` running the same server in the session's box
                        (`[[tool]] time`), tool time_get_current_time
  remote     direct     the Python SDK's streamable HTTP client straight to a Python SDK server
                        on loopback (bench/remote_echo_server.py, bearer token), tool echo
             boxmaker   `boxmaker mcp` with that server as `[[tool]] url = …` (its token a
                        [[secret]]), tool remote_echo
  run        bwrap      a plain Python MCP server whose tool runs
                        `bwrap --unshare-all --die-with-parent --ro-bind / / /bin/true` per call
             boxmaker   `boxmaker mcp`, builtin run {"argv": ["/bin/true"]} (a fresh box a call)

Then throughput: 4 client processes, each its own session, calling for a fixed time; total
calls per second, and the CPU the serving side used per call: every descendant of the
clients (the server, or boxmaker's front and broker) and boxmaker's gate and runner with
everything they started, from /proc/PID/stat (own and reaped children's time), the clients
themselves left out.

Usage: tests/py/client-venv/bin/python3 bench/calls.py [N] [SECONDS]
  N calls per latency path (default 300), SECONDS per throughput path (default 5).
  BOXMAKER_BIN=path uses that binary (default: target/dist/boxmaker, built first);
  CALLS_ONLY=read_file/boxmaker,run/bwrap runs only those paths; N or SECONDS 0 skips
  latency or throughput.
"""
import asyncio, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
N = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--worker" else 300
ONLY = [x for x in os.environ.get("CALLS_ONLY", "").split(",") if x]
# The real mcp-server-time (PyPI), in the virtualenv `make deps` makes.
VENV = os.path.join(ROOT, "tests", "py", "venv")
VENV_PY = os.path.join(VENV, "bin", "python3")
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] != "--worker" else 5.0

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

# The remote paths' server (bench/remote_echo_server.py), on loopback with a bearer token
# that boxmaker reads from its environment as a [[secret]].
REMOTE_PORT = int(os.environ.get("BENCH_REMOTE_PORT", "18733"))
REMOTE_TOKEN = "bench-remote-token-0123456789"
REMOTE_URL = f"http://127.0.0.1:{REMOTE_PORT}/mcp"
os.environ["BENCH_REMOTE_TOKEN"] = REMOTE_TOKEN

PLAIN_SERVER = r'''
import subprocess, sys
from mcp.server.mcpserver import MCPServer
m = MCPServer("plain")

@m.tool()
def read_file(path: str) -> str:
    with open(path) as f:
        return f.read()

@m.tool()
def run_true() -> str:
    p = subprocess.run(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                        "/bin/true"], capture_output=True)
    return '{"exit":%d}' % p.returncode

m.run()
'''

CONFIG = '''
[gate]
state = "state"

[box]
timeout_seconds = 60

[[tool]]
name = "read_file"
builtin = "read_file"
class = "internal"

[[tool]]
name = "run"
builtin = "run"
class = "internal"

[[secret]]
name = "remote-token"
env = "BENCH_REMOTE_TOKEN"

[[tool]]
name = "remote"
url = "http://127.0.0.1:@PORT@/mcp"
bearer = "remote-token"
egress = ["remote"]

[[egress]]
name = "remote"
host = "127.0.0.1"
ports = [@PORT@]

[[grant]]
tool = "remote_*"
effect = "allow"

[[mount]]
name = "pyvenv"
host = "@VENV@"
at = "/opt/pyvenv"
class = "public"

[[tool]]
name = "time"
mcp = ["/opt/pyvenv/bin/python3", "-m", "mcp_server_time", "--local-timezone", "UTC"]
mounts = ["pyvenv"]
class = "public"

[[grant]]
tool = "time_*"
effect = "allow"

[[grant]]
tool = "read_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "allow"
'''


def stats(samples):
    s = sorted(samples)
    p = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return {"p50": p(0.50) * 1e3, "p90": p(0.90) * 1e3, "p99": p(0.99) * 1e3,
            "mean": statistics.fmean(s) * 1e3}


def paths(d, bm):
    """(name, command, args, tool, arguments) of every path, over the files in `d`."""
    server = os.path.join(d, "plain_server.py")
    py = sys.executable
    return {
        "read_file/plain": (py, [server], "read_file", {"path": os.path.join(d, "hello.txt")}),
        "read_file/boxmaker": (bm, ["mcp", "--config", os.path.join(d, "boxmaker.toml")],
                               "read_file", {"path": "hello.txt"}),
        "run/bwrap": (py, [server], "run_true", {}),
        "run/boxmaker": (bm, ["mcp", "--config", os.path.join(d, "boxmaker.toml")], "run",
                         {"argv": ["/bin/true"]}),
        "remote/direct": (REMOTE_URL, [], "echo", {"text": "hi"}),
        "remote/boxmaker": (bm, ["mcp", "--config", os.path.join(d, "boxmaker.toml")],
                            "remote_echo", {"text": "hi"}),
        "time/direct": (VENV_PY, ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                        "get_current_time", {"timezone": "UTC"}),
        "time/boxmaker": (bm, ["mcp", "--config", os.path.join(d, "boxmaker.toml")],
                          "time_get_current_time", {"timezone": "UTC"}),
    }


def wait_port(port):
    import socket
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"the remote bench server did not listen on {port}")


def prepare(d):
    with open(os.path.join(d, "plain_server.py"), "w") as f:
        f.write(PLAIN_SERVER)
    with open(os.path.join(d, "boxmaker.toml"), "w") as f:
        f.write(CONFIG.replace("@VENV@", VENV).replace("@PORT@", str(REMOTE_PORT)))
    with open(os.path.join(d, "hello.txt"), "w") as f:
        f.write("hello from the workspace\n")


def workspaces(d, sessions):
    """The sessions' workspaces, each with hello.txt: made inside the state directory only
    after boxmaker made and marked it (docs/spec.md §6, "Whose state")."""
    for s in sessions:
        ws = os.path.join(d, "state", "work", s)
        os.makedirs(ws, mode=0o700, exist_ok=True)
        with open(os.path.join(ws, "hello.txt"), "w") as f:
            f.write("hello from the workspace\n")


async def session(command, args, session_name, body):
    if command.startswith("http://"):
        # The Python SDK's own streamable HTTP client, straight to the server.
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer " + REMOTE_TOKEN}) as http:
            async with streamable_http_client(command, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    return await body(s)
    if command.endswith("boxmaker"):
        args = args + ["--session", session_name]
    # The SDK passes a server only a few variables by default; boxmaker reads the remote
    # path's token from its own environment.
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            return await body(s)


async def latency(path, n):
    """One path alone: p50/p90/p99/mean of n calls after a warm-up."""
    command, args, tool, arguments = path

    async def body(s):
        for _ in range(max(20, n // 10)):
            res = await s.call_tool(tool, arguments)
            assert not res.is_error, res
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            res = await s.call_tool(tool, arguments)
            samples.append(time.perf_counter() - t)
            assert not res.is_error, res
        return stats(samples)

    return await session(command, args, "lat", body)


async def paired(anchor, ours, n, session_name="lat"):
    """Two paths side by side: both sessions open at once, then n rounds of one call on
    each, in alternating order, so both see the same moment of a busy machine. Returns
    each path's stats and the median of the per-round ratios (ours / anchor)."""
    a_cmd, a_args, a_tool, a_arguments = anchor
    b_cmd, b_args, b_tool, b_arguments = ours

    async def body_a(sa):
        async def body_b(sb):
            calls = [(sa, a_tool, a_arguments), (sb, b_tool, b_arguments)]
            for _ in range(max(20, n // 10)):
                for s, tool, arguments in calls:
                    res = await s.call_tool(tool, arguments)
                    assert not res.is_error, res
            ta, tb = [], []
            for i in range(n):
                order = calls if i % 2 == 0 else calls[::-1]
                for s, tool, arguments in order:
                    t = time.perf_counter()
                    res = await s.call_tool(tool, arguments)
                    (ta if s is sa else tb).append(time.perf_counter() - t)
                    assert not res.is_error, res
            ratios = sorted(b / a for a, b in zip(ta, tb))
            return stats(ta), stats(tb), ratios[len(ratios) // 2]
        return await session(b_cmd, b_args, session_name, body_b)

    return await session(a_cmd, a_args, "anchor", body_a)


def worker():
    """`calls.py --worker JSON`: calls for the given seconds after a warm-up; prints
    {"calls": N}."""
    spec = json.loads(sys.argv[2])
    command, args, tool, arguments = spec["path"]

    async def body(s):
        for _ in range(20):
            await s.call_tool(tool, arguments)
        open(spec["gate"] + "." + spec["session"], "w").close()
        # Everyone starts together: the parent removes the gate file.
        while os.path.exists(spec["gate"]):
            await asyncio.sleep(0.001)
        n, end = 0, time.perf_counter() + spec["seconds"]
        while time.perf_counter() < end:
            res = await s.call_tool(tool, arguments)
            assert not res.is_error, res
            n += 1
        # Stay connected until the parent has read the servers' CPU (a server that exits
        # moves its time to this process, which is not counted).
        open(spec["gate"] + "." + spec["session"] + ".done", "w").close()
        while not os.path.exists(spec["gate"] + ".stop"):
            await asyncio.sleep(0.01)
        return n

    n = asyncio.run(session(command, args, spec["session"], body))
    print(json.dumps({"calls": n}))


def proc_stat(pid):
    """(ppid, CPU seconds of the process and of its reaped children), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return int(fields[1]), ticks / os.sysconf("SC_CLK_TCK")


def is_gate(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return False
    return len(args) > 1 and args[0].endswith(b"boxmaker") and args[1] in (b"__gate", b"__runner")


def path_cpu(clients):
    """CPU seconds so far of everything that serves `clients` (their descendants, and any
    boxmaker gate and runner with theirs), not of the clients themselves: a counter whose
    difference over a window is the CPU used in it (a process that ends is counted in its
    parent's reaped-children time)."""
    table = {}
    for e in os.listdir("/proc"):
        if e.isdigit() and (st := proc_stat(int(e))) is not None:
            table[int(e)] = st
    roots = set(clients) | {p for p in table if is_gate(p)}
    children = {}
    for p, (pp, _) in table.items():
        children.setdefault(pp, []).append(p)
    total, todo, seen = 0.0, list(roots), set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        if p not in clients and p in table:
            total += table[p][1]
        if p not in clients and p in roots:
            continue  # a gate's time already holds its reaped children
        todo.extend(children.get(p, []))
    # A gate's children (the runner, its helpers, boxes) that still run.
    todo = [c for p in roots if p not in clients for c in children.get(p, [])]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += table[p][1]
        todo.extend(children.get(p, []))
    return total


def throughput(path, sessions, d, seconds):
    gate = os.path.join(d, "start-gate")
    open(gate, "w").close()
    procs = [subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--worker",
         json.dumps({"path": path, "session": s, "seconds": seconds, "gate": gate})],
        stdout=subprocess.PIPE, text=True) for s in sessions]
    # Every client started, initialized and warmed up.
    while not all(os.path.exists(gate + "." + s) for s in sessions):
        time.sleep(0.01)
    clients = {p.pid for p in procs}
    before = path_cpu(clients)
    os.remove(gate)
    time.sleep(seconds)
    while not all(os.path.exists(gate + "." + s + ".done") for s in sessions):
        time.sleep(0.001)
    used = path_cpu(clients) - before
    open(gate + ".stop", "w").close()
    outs = [json.loads(p.communicate()[0]) for p in procs]
    for f in os.listdir(d):
        if f.startswith("start-gate"):
            os.remove(os.path.join(d, f))
    calls = sum(o["calls"] for o in outs)
    return {"calls_per_s": calls / seconds, "cpu_ms_per_call": used / calls * 1e3}


async def main():
    bm = os.environ.get("BOXMAKER_BIN")
    if not bm:
        subprocess.run(["cargo", "build", "--profile", "dist", "-q", "-p", "boxmaker"], cwd=ROOT, check=True)
        bm = os.path.join(TARGET, "dist", "boxmaker")
    sessions = [f"t{i}" for i in range(4)]
    results, rates = {}, {}
    with tempfile.TemporaryDirectory() as d:
        prepare(d)
        ps = paths(d, bm)
        names = [n for n in ps if not ONLY or n in ONLY]
        # Paired: each boxmaker path beside its anchor, call for call (`paired`); a path
        # asked for without its partner runs alone.
        pairs = [("read_file/plain", "read_file/boxmaker"), ("run/bwrap", "run/boxmaker"),
                 ("time/direct", "time/boxmaker"), ("remote/direct", "remote/boxmaker")]
        remote = None
        if any(n.startswith("remote/") for n in names):
            remote = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "remote_echo_server.py"),
                                       str(REMOTE_PORT), REMOTE_TOKEN])
            wait_port(REMOTE_PORT)
        config = os.path.join(d, "boxmaker.toml")
        try:
            # boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config"); the
            # record goes when the directory does.
            subprocess.run([bm, "trust", "--config", config], check=True, stdout=subprocess.DEVNULL)
            # boxmaker uses a state directory only when it made it (docs/spec.md §6, "Whose
            # state"): a cheap command makes and marks it before the workspaces go inside.
            subprocess.run([bm, "grants", "--config", config], check=True, stdout=subprocess.DEVNULL)
            workspaces(d, sessions + ["lat"])
            await measure(pairs, names, ps, results, rates, sessions, d)
        finally:
            subprocess.run([bm, "trust", "--revoke", "--config", config], capture_output=True)
            if remote:
                remote.terminate()
                remote.wait()
    report(results, rates)


async def measure(pairs, names, ps, results, rates, sessions, d):
    for anchor, ours in pairs:
        if not N:
            break
        if anchor in names and ours in names:
            # A session of its own per pair: what one pair's calls read (read_file's
            # internal file) must not decide another's (remote is cleared for public).
            name = "lat" if anchor.startswith("read_file") else "lat-" + anchor.split("/")[0]
            a, b, r = await paired(ps[anchor], ps[ours], N, name)
            results[anchor], results[ours] = a, b
            results[ours]["paired_ratio"] = r
        else:
            for name in (anchor, ours):
                if name in names:
                    results[name] = await latency(ps[name], N)
    for name in names:
        if SECONDS and not name.startswith("remote/"):
            rates[name] = throughput(ps[name], sessions, d, SECONDS)


def report(results, rates):
    print(f"{'path':<20} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'paired':>7}")
    for k, v in results.items():
        r = f"{v['paired_ratio']:7.2f}" if "paired_ratio" in v else ""
        print(f"{k:<20} {v['p50']:8.3f} {v['p90']:8.3f} {v['p99']:8.3f} {v['mean']:8.3f} {r}")
    if len(results) < 8:
        print(json.dumps({"latency": results, "throughput": rates}, indent=1))
        return
    print(f"\nread_file: boxmaker / plain p50 = {results['read_file/boxmaker']['p50'] / results['read_file/plain']['p50']:.2f} (goal <= 1.2)")
    print(f"run: boxmaker / bwrap-per-call p50 = {results['run/boxmaker']['p50'] / results['run/bwrap']['p50']:.2f} (goal <= 0.8)")
    print(f"mcp-server-time: boxmaker - direct p50 = {results['time/boxmaker']['p50'] - results['time/direct']['p50']:+.2f} ms (goal <= +1 ms)")
    print(f"remote: boxmaker - direct p50 = {results['remote/boxmaker']['p50'] - results['remote/direct']['p50']:+.2f} ms (goal < +1 ms)")
    print(f"\n{'throughput, 4 sessions':<24} {'calls/s':>9} {'server-side CPU ms/call':>24}")
    for k, v in rates.items():
        print(f"{k:<24} {v['calls_per_s']:9.0f} {v['cpu_ms_per_call']:24.2f}")
    print(json.dumps({"latency": results, "throughput": rates}), file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker()
    else:
        asyncio.run(main())
