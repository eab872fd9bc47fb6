"""The egress tests' origin: HTTP and HTTPS servers the tests start themselves, in a network
namespace they made (crates/boxmaker/tests/netlab/mod.rs), and nowhere else. Every request
that reaches it is logged, one JSON line each, so a test can show that a refused request
never arrived.

Usage: egress_origin.py --log FILE --ready FILE --bind ADDR[,ADDR...] [--cert PEM --key PEM]
                        [--static DIR] [--http-port N] [--https-port N]

Routes (any Host):
  /             an HTML page naming the Host it was asked for ("origin page for HOST")
  /robots.txt   allows everything
  /echo         the request line and headers as the server got them, as text
  /bytes/N      N bytes of "x" (throughput)
  /sink         (POST or PUT) reads the body, answers how many bytes it got
  /hold/S       answers at once, then keeps the connection S seconds (a byte every 0.5 s)
  /static/...   files under --static (a dumb-HTTP git repository, a pip index, a wheel)
"""

import argparse
import json
import os
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
ARGS = None


def log(entry):
    with LOCK:
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "origin"

    def log_message(self, *a):
        pass

    def record(self):
        log(
            {
                "scheme": self.server.scheme,
                "local": "%s:%d" % self.connection.getsockname()[:2],
                "peer": self.client_address[0],
                "method": self.command,
                "path": self.path,
                "host": self.headers.get("Host"),
                "headers": [[k, v] for k, v in self.headers.items()],
            }
        )

    def send(self, status, body, ctype="text/plain; charset=utf-8"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record()
        path = self.path.split("?", 1)[0]
        host = self.headers.get("Host", "")
        if path == "/" or path == "/index.html":
            body = (
                "<html><head><title>origin</title></head><body><h1>Origin page</h1>"
                "<p>origin page for %s over %s</p></body></html>" % (host, self.server.scheme)
            ).encode()
            self.send(200, body, "text/html; charset=utf-8")
        elif path == "/robots.txt":
            self.send(200, b"User-agent: *\nAllow: /\n")
        elif path == "/echo":
            lines = [self.requestline] + ["%s: %s" % kv for kv in self.headers.items()]
            self.send(200, ("\n".join(lines) + "\n").encode())
        elif path.startswith("/bytes/"):
            n = int(path.rsplit("/", 1)[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            left = n
            while left > 0:
                w = min(left, len(chunk))
                self.wfile.write(chunk[:w])
                left -= w
        elif path.startswith("/hold/"):
            secs = float(path.rsplit("/", 1)[1])
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            end = time.time() + secs
            try:
                while time.time() < end:
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass
            self.close_connection = True
        elif path.startswith("/static/") and ARGS.static:
            rel = os.path.normpath(path[len("/static/") :]).lstrip("/")
            full = os.path.join(ARGS.static, rel)
            if rel.startswith("..") or not os.path.isfile(full):
                if os.path.isdir(full) and os.path.isfile(os.path.join(full, "index.html")):
                    full = os.path.join(full, "index.html")
                else:
                    self.send(404, b"not found\n")
                    return
            with open(full, "rb") as f:
                data = f.read()
            ctype = "text/html" if full.endswith(".html") else "application/octet-stream"
            self.send(200, data, ctype)
        else:
            self.send(404, b"not found\n")

    def read_body(self):
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return n
                left = size
                while left:
                    got = self.rfile.read(min(left, 65536))
                    if not got:
                        return n
                    n += len(got)
                    left -= len(got)
                self.rfile.readline()
        left = int(self.headers.get("Content-Length", "0"))
        while left:
            got = self.rfile.read(min(left, 65536))
            if not got:
                break
            n += len(got)
            left -= len(got)
        return n

    def do_POST(self):
        self.record()
        n = 0
        try:
            n = self.read_body()
        finally:
            log({"scheme": self.server.scheme, "path": self.path, "received": n})
        self.send(200, ("got %d bytes\n" % n).encode())

    do_PUT = do_POST


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def serve(addr, port, scheme, context):
    srv = Server((addr, port), Handler)
    srv.scheme = scheme
    if context is not None:
        srv.socket = context.wrap_socket(srv.socket, server_side=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    return srv


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--ready", required=True)
    p.add_argument("--bind", required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--static")
    p.add_argument("--http-port", type=int, default=80)
    p.add_argument("--https-port", type=int, default=443)
    ARGS = p.parse_args()
    context = None
    if ARGS.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ARGS.cert, ARGS.key)
    for addr in ARGS.bind.split(","):
        serve(addr, ARGS.http_port, "http", None)
        if context is not None:
            serve(addr, ARGS.https_port, "https", context)
    with open(ARGS.ready, "w") as f:
        f.write("ready\n")
    # Ends with the test (it kills this process) or after an hour at most.
    time.sleep(3600)


if __name__ == "__main__":
    main()
