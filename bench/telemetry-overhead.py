#!/usr/bin/env python3
"""What OpenTelemetry costs a call (docs/performance.md "Telemetry: on and off").

Two `boxmaker mcp` sessions over stdio, each with a gate of its own (two state directories,
one config each), the official Python MCP SDK as the client of both. `off` has no `OTEL_*`
variable (no exporter runs); `on` exports to a real OTLP/HTTP receiver on loopback
(crates/boxmaker/tests/servers/otlp_receiver.py, which decodes every request with the
OpenTelemetry project's protobuf classes and writes it to disk), with the SDK's default batch
and metric intervals, and every call carries a `traceparent` in its `_meta`. Both sessions
are open at once and called in turn, alternating which goes first, so both see the same
moment of a shared machine; `paired` is the median of the per-round ratios on/off.

Usage: tests/py/client-venv/bin/python3 bench/telemetry-overhead.py [N]
  N calls per tool (default 300). BOXMAKER_BIN=path uses that binary (default
  target/release/boxmaker, which must exist: `cargo build --release -p boxmaker`).
"""
import asyncio, json, os, socket, statistics, subprocess, sys, tempfile, time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.environ.get("BOXMAKER_BIN", os.path.join(TARGET, "release", "boxmaker"))
RECEIVER = os.path.join(ROOT, "crates", "boxmaker", "tests", "servers", "otlp_receiver.py")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

CONFIG = '''
[gate]
state = "state"

[[tool]]
name = "read_file"
builtin = "read_file"
class = "internal"

[[tool]]
name = "run"
builtin = "run"
class = "internal"

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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab(d):
    os.makedirs(d)
    with open(os.path.join(d, "boxmaker.toml"), "w") as f:
        f.write(CONFIG)
    # boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config").
    subprocess.run([BIN, "trust", "--config", os.path.join(d, "boxmaker.toml")], check=True,
                   stdout=subprocess.DEVNULL)
    # boxmaker uses a state directory only when it made it (docs/spec.md §6, "Whose state"):
    # `tools list` makes and marks it, with no gate (one started here would serve the `on`
    # session without its OTEL_* variables), before the workspace goes inside.
    subprocess.run([BIN, "tools", "list", "--config", os.path.join(d, "boxmaker.toml")],
                   check=True, stdout=subprocess.DEVNULL)
    ws = os.path.join(d, "state", "work", "bench")
    os.makedirs(ws, mode=0o700)
    with open(os.path.join(ws, "hello.txt"), "w") as f:
        f.write("hello from the workspace\n")
    return os.path.join(d, "boxmaker.toml")


def params(config, env):
    return StdioServerParameters(command=BIN, args=["mcp", "--config", config, "--session",
                                                    "bench"], env=env, cwd=os.path.dirname(config))


async def paired(off, on, tool, arguments, n):
    async with stdio_client(off) as (r1, w1), ClientSession(r1, w1) as a:
        async with stdio_client(on) as (r2, w2), ClientSession(r2, w2) as b:
            await a.initialize()
            await b.initialize()
            meta = {"traceparent": TRACEPARENT}
            calls = [(a, None), (b, meta)]
            for _ in range(max(20, n // 10)):
                for s, m in calls:
                    res = await s.call_tool(tool, arguments, meta=m)
                    assert not res.is_error, res
            ta, tb = [], []
            for i in range(n):
                for s, m in (calls if i % 2 == 0 else calls[::-1]):
                    t = time.perf_counter()
                    res = await s.call_tool(tool, arguments, meta=m)
                    (ta if s is a else tb).append(time.perf_counter() - t)
                    assert not res.is_error, res
            ratios = sorted(y / x for x, y in zip(ta, tb))
            return stats(ta), stats(tb), ratios[len(ratios) // 2]


def main():
    if not os.path.exists(BIN):
        raise SystemExit(f"no {BIN}: cargo build --release -p boxmaker")
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {os.cpu_count()} cores, "
          f"load: {' '.join(open('/proc/loadavg').read().split()[:3])}; {N} calls per tool")
    with tempfile.TemporaryDirectory(prefix="bxm-otel-bench-") as d:
        port = free_port()
        out = os.path.join(d, "received")
        receiver = subprocess.Popen([sys.executable, RECEIVER, str(port), out])
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit("the OTLP receiver did not listen")
                    time.sleep(0.05)
            base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            off = params(lab(os.path.join(d, "off")), base)
            on = params(lab(os.path.join(d, "on")),
                        dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}"))
            for tool, arguments in (("read_file", {"path": "hello.txt"}),
                                    ("run", {"argv": ["/bin/true"]})):
                a, b, ratio = asyncio.run(paired(off, on, tool, arguments, N))
                for name, s in (("off", a), ("on", b)):
                    print(f"{tool:9} {name:3}  p50 {s['p50']:7.3f} ms  p90 {s['p90']:7.3f} ms  "
                          f"p99 {s['p99']:7.3f} ms  mean {s['mean']:7.3f} ms")
                print(f"{tool:9} paired on/off (median of per-round ratios): {ratio:.3f}")
            # The on gate's exporter flushes when its gate ends (3 s after its last client).
            time.sleep(6)
            spans = 0
            path = os.path.join(out, "traces.jsonl")
            if os.path.exists(path):
                with open(path) as f:
                    spans = sum(1 for line in f
                                if json.loads(line)["name"].startswith("tools/call "))
            print(f"# the receiver got {spans} call spans")
        finally:
            receiver.terminate()
            receiver.wait()
            # The labs' trust records go with the temporary directory.
            for lab_dir in ("off", "on"):
                subprocess.run([BIN, "trust", "--revoke", "--config",
                                os.path.join(d, lab_dir, "boxmaker.toml")], capture_output=True)


main()
