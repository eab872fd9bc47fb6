"""A client that does not declare the elicitation capability is never sent an elicitation
(issue 16), even with `[gate] approve_in_client = true`: a raw JSON-RPC client over stdio that
records every message the server sends while a call waits, then approves it the other way.

Environment: BOXMAKER_BIN, BOXMAKER_CONFIG (crates/boxmaker/tests/approvals.rs).
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

BIN = os.environ["BOXMAKER_BIN"]
CONFIG = os.environ["BOXMAKER_CONFIG"]


def check(cond: bool, what: str) -> None:
    if not cond:
        print(f"FAILED: {what}", flush=True)
        sys.exit(1)


server = subprocess.Popen(
    [BIN, "mcp", "--config", CONFIG],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    text=True,
)
lines: "queue.Queue[dict]" = queue.Queue()


def reader() -> None:
    assert server.stdout is not None
    for line in server.stdout:
        lines.put(json.loads(line))


threading.Thread(target=reader, daemon=True).start()


def send(msg: dict) -> None:
    assert server.stdin is not None
    server.stdin.write(json.dumps(msg) + "\n")
    server.stdin.flush()


def until(pred, timeout: float, seen: list) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        check(left > 0, f"timed out; the server sent: {seen}")
        msg = lines.get(timeout=left)
        seen.append(msg)
        if pred(msg):
            return msg


seen: list = []
send(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            # No `elicitation` here: this client cannot show a form.
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
)
init = until(lambda m: m.get("id") == 1, 20, seen)
print("initialized:", init["result"]["protocolVersion"], flush=True)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "run", "arguments": {"argv": ["/bin/echo", "plain"]}},
    }
)
note = until(lambda m: m.get("method") == "notifications/message", 20, seen)
approval = re.search(r"ap-[0-9a-f]{16}", json.dumps(note)).group(0)
print("waiting on", approval, flush=True)
# Give the server every chance to send an elicitation it should not send.
time.sleep(1.5)
while not lines.empty():
    seen.append(lines.get())
requests = [m for m in seen if "method" in m and "id" in m]
print("server requests while waiting:", requests, flush=True)
check(not any(m["method"] == "elicitation/create" for m in requests), "an elicitation was sent")
out = subprocess.run([BIN, "approve", approval, "--config", CONFIG], capture_output=True, text=True)
check(out.returncode == 0, out.stderr)
done = until(lambda m: m.get("id") == 2, 20, seen)
text = done["result"]["content"][0]["text"]
print("run:", text, flush=True)
check(json.loads(text)["stdout"] == "plain\n", text)
server.stdin.close()
server.wait(timeout=20)
print("ok", flush=True)
