#!/usr/bin/env python3
"""A streamable-HTTP MCP server made with the official Python SDK (mcp 2.x, MCPServer) that
is an OAuth resource server, for crates/boxmaker/tests/oauth.rs: it publishes its protected
resource metadata (the SDK's), answers 401 with `WWW-Authenticate: Bearer resource_metadata=…`
without a valid token, and checks each token at the authorization server's introspection
endpoint (RFC 7662; oidc-provider, servers/oidc_as.mjs).

Run with the SDK's interpreter (tests/py/client-venv):
  oauth_rs.py PORT ISSUER RS_SECRET STATE_DIR

Every token it is shown is appended to STATE_DIR/tokens (for the test to look for in
everything boxmaker left); while STATE_DIR/revoked exists, every token is refused.
Tools: echo {text}; show_token (quotes the token it got: the answer must reach the model
redacted).
"""

import asyncio
import base64
import json
import os
import sys
import urllib.parse
import urllib.request

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
ISSUER = sys.argv[2]
RS_SECRET = sys.argv[3]
STATE = sys.argv[4]
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"


def introspect(token: str) -> dict:
    basic = base64.b64encode(f"resource-server:{RS_SECRET}".encode()).decode()
    req = urllib.request.Request(
        f"{ISSUER}/token/introspection",
        data=urllib.parse.urlencode({"token": token}).encode(),
        headers={"Authorization": f"Basic {basic}"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


class Introspection:
    async def verify_token(self, token: str) -> AccessToken | None:
        with open(os.path.join(STATE, "tokens"), "a") as f:
            f.write(token + "\n")
        if os.path.exists(os.path.join(STATE, "revoked")):
            return None
        j = await asyncio.to_thread(introspect, token)
        if not j.get("active"):
            return None
        aud = j.get("aud")
        if aud != RESOURCE and not (isinstance(aud, list) and RESOURCE in aud):
            return None
        return AccessToken(
            token=token,
            client_id=j.get("client_id", ""),
            scopes=(j.get("scope") or "").split(),
            expires_at=j.get("exp"),
            resource=RESOURCE,
        )


server = MCPServer(
    "oauth-test",
    token_verifier=Introspection(),
    auth=AuthSettings(
        issuer_url=ISSUER,
        resource_server_url=RESOURCE,
        required_scopes=["mcp"],
        validate_token_resource=True,
    ),
)


@server.tool()
def echo(text: str) -> str:
    """Echoes its text."""
    return f"echo: {text}"


@server.tool()
def show_token() -> str:
    """Quotes the bearer token of the request."""
    t = get_access_token()
    return f"your token is {t.token if t else 'none'}"


uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="warning")
