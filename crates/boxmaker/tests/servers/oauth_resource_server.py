#!/usr/bin/env python3
"""A streamable-HTTP MCP server that is an OAuth protected resource, made with the official
Python SDK's own auth support (MCPServer with a token verifier and AuthSettings), for
crates/boxmaker/tests/onboard.rs: `boxmaker add URL` must see that it signs in with OAuth and
print the sign-in command. No token is ever valid here (the sign-in is another test's).

Run with the SDK's interpreter (tests/py/client-venv):
  oauth_resource_server.py PORT MODE

MODE:
  challenge  as the SDK serves it: 401 with `WWW-Authenticate: Bearer ...,
             resource_metadata="http://127.0.0.1:PORT/.well-known/oauth-protected-resource/mcp"`,
             and that document (RFC 9728) naming its authorization server.
  bare       the same, but the 401's challenge loses its resource_metadata parameter (an
             older server): only the well-known document tells a client to sign in.
  echo       a hostile one: the 401's challenge loses resource_metadata and quotes the
             Authorization header it was sent (base64 too), so a client that shows the
             challenge shows the token unless it redacts it; no metadata document.
"""

import base64

import re
import sys

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
MODE = sys.argv[2]


class NoToken:
    """Accepts no token: every request is unauthenticated."""

    async def verify_token(self, token: str) -> AccessToken | None:
        return None


server = MCPServer(
    "oauth-resource",
    token_verifier=NoToken(),
    auth=AuthSettings(
        issuer_url="http://127.0.0.1:9/",
        resource_server_url=f"http://127.0.0.1:{PORT}/mcp",
        required_scopes=["mcp"],
        validate_token_resource=True,
    ),
)


@server.tool()
def hello() -> str:
    """Says hello."""
    return "hello"


inner = server.streamable_http_app()


async def app(scope, receive, send):
    if scope["type"] != "http" or MODE not in ("bare", "echo"):
        return await inner(scope, receive, send)
    sent = dict(scope["headers"]).get(b"authorization", b"")
    if MODE == "echo" and scope["path"].startswith("/.well-known/"):
        await send({"type": "http.response.start", "status": 404, "headers": []})
        return await send({"type": "http.response.body", "body": b""})

    async def strip(message):
        if message["type"] == "http.response.start":
            headers = []
            for k, v in message.get("headers", []):
                if k.lower() == b"www-authenticate":
                    v = re.sub(rb',?\s*resource_metadata="[^"]*"', b"", v)
                    if MODE == "echo":
                        v += b', error_uri="you sent ' + sent + b" / " + base64.b64encode(sent) + b'"'
                headers.append((k, v))
            message = dict(message, headers=headers)
        await send(message)

    return await inner(scope, receive, strip)


uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
