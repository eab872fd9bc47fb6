#!/usr/bin/env python3
"""Hostile OAuth documents for crates/boxmaker/tests/oauth.rs (standard library only).

  oauth_hostile.py PORT STATE_DIR

Listens on 127.0.0.1:PORT and 127.0.0.2:PORT; any request that reaches 127.0.0.2 is
recorded in STATE_DIR/other-host (it must never come). Every POST to an MCP path is a 401:
  /other-host/mcp   its resource_metadata is on 127.0.0.2 (a host no rule clears)
  /mixup/mcp        its metadata names an authorization server whose metadata says it is
                    another issuer (a mix-up)
  /huge/mcp         its resource metadata never ends (a flood)
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
STATE = sys.argv[2]
BASE = f"http://127.0.0.1:{PORT}"


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def json(self, status, doc, headers=()):
        body = json.dumps(doc).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def other_host(self):
        if self.server.server_address[0] == "127.0.0.2":
            with open(os.path.join(STATE, "other-host"), "a") as f:
                f.write(self.path + "\n")
            return True
        return False

    def do_POST(self):
        if self.other_host():
            return self.json(404, {})
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        where = {
            "/other-host/mcp": f"http://127.0.0.2:{PORT}/prm",
            "/mixup/mcp": f"{BASE}/mixup/prm",
            "/huge/mcp": f"{BASE}/huge/prm",
        }.get(self.path, f"{BASE}/none")
        self.json(401, {"error": "invalid_token"}, [("WWW-Authenticate", f'Bearer resource_metadata="{where}"')])

    def do_GET(self):
        if self.other_host():
            return self.json(404, {})
        if self.path == "/mixup/prm":
            return self.json(200, {"resource": f"{BASE}/mixup/mcp", "authorization_servers": [f"{BASE}/as"]})
        if self.path == "/.well-known/oauth-authorization-server/as":
            return self.json(200, {
                "issuer": f"{BASE}/evil",
                "authorization_endpoint": f"{BASE}/authorize",
                "token_endpoint": f"{BASE}/token",
                "code_challenge_methods_supported": ["S256"],
            })
        if self.path == "/huge/prm":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                self.wfile.write(b'{"resource": "')
                for _ in range(100000):
                    self.wfile.write(b"x" * 4096)
            except OSError:
                pass
            return
        self.json(404, {})


for host in ["127.0.0.2", "127.0.0.1"]:
    srv = ThreadingHTTPServer((host, PORT), H)
    t = threading.Thread(target=srv.serve_forever, daemon=host != "127.0.0.1")
    t.start()
