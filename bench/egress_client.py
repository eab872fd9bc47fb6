"""The egress bench's client (bench/egress.sh): time to first byte over fresh connections,
and one bulk download, either straight to the origin or through boxmaker's egress proxy
(a CONNECT tunnel from inside a box). Prints one JSON line.

Usage: egress_client.py direct|proxy ORIGIN_PORT CONNECTIONS BULK_BYTES
(proxy: the one HTTPS_PROXY names.)
"""

import base64
import json
import os
import socket
import sys
import time
import urllib.parse

mode, port, conns, bulk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ORIGIN = ("127.0.0.1", port)
# The proxy the box names in its environment (boxmaker: 127.0.0.1:3128; srt: its own).
_proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or "http://127.0.0.1:3128"
_url = urllib.parse.urlsplit(_proxy)
PROXY = (_url.hostname, _url.port or 80)
# srt's proxy wants the credentials its URL carries.
AUTH = b""
if _url.username:
    _cred = "%s:%s" % (urllib.parse.unquote(_url.username), urllib.parse.unquote(_url.password or ""))
    AUTH = b"Proxy-Authorization: Basic " + base64.b64encode(_cred.encode()) + b"\r\n"


def open_conn():
    if mode == "direct":
        return socket.create_connection(ORIGIN)
    s = socket.create_connection(PROXY)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (port, port, AUTH))
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        if not b:
            raise SystemExit("proxy closed: %r" % head)
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("proxy refused: %r" % head)
    return s


def get(s, n):
    # The Host names the tunnel's destination: boxmaker's proxy checks it.
    s.sendall(b"GET /%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (n, port))


ttfb = []
for _ in range(conns):
    t0 = time.perf_counter()
    s = open_conn()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    get(s, 1)
    s.recv(1)
    ttfb.append(time.perf_counter() - t0)
    s.close()
ttfb.sort()

rates = []
for _ in range(3):
    s = open_conn()
    t0 = time.perf_counter()
    get(s, bulk)
    got = 0
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    while True:
        n = s.recv_into(view)
        if not n:
            break
        got += n
    took = time.perf_counter() - t0
    s.close()
    rates.append(got / took / 1e6)
rates.sort()


def pct(xs, p):
    return xs[min(len(xs) - 1, int(len(xs) * p))]


print(json.dumps({
    "mode": mode,
    "ttfb_p50_ms": round(pct(ttfb, 0.5) * 1000, 3),
    "ttfb_p90_ms": round(pct(ttfb, 0.9) * 1000, 3),
    "bulk_mb_per_s": round(rates[1], 1),
    "bulk_bytes": got,
}))
