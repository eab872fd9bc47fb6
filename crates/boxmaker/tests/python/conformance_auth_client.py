#!/usr/bin/env python3
"""The client command the MCP conformance suite's `auth` scenarios run
(crates/boxmaker/tests/conformance_auth.rs): boxmaker's remote client is the client under
test, and this script plays its user.

  conformance_auth_client.py SERVER_URL      (the harness appends the URL)

With BOXMAKER_BIN (the binary) and BXM_CONFORMANCE_DIR (where to keep a config and state per
run) in the environment, and the harness's MCP_CONFORMANCE_SCENARIO / MCP_CONFORMANCE_CONTEXT.
It does what a person does, and nothing boxmaker does not:

1. writes a config whose one remote tool is SERVER_URL with `oauth` (a pre-registered client
   from the scenario's context, a client id metadata document URL where the scenario gives
   one), and an [[egress]] rule for the server's port, and trusts it (`boxmaker trust`);
2. runs `boxmaker auth login`: where it stops because a host of the sign-in (the
   authorization server) is not cleared, it appends the [[egress]] rules boxmaker printed,
   as a person would, trusts the config again, and runs it again; when it prints the URL,
   it plays the browser (GETs it and follows the redirect to boxmaker's loopback callback);
3. calls the server's tool through the gate with `boxmaker call`; where boxmaker says the
   server needs a wider sign-in, it signs in again (at most three sign-ins in all).

Exit 0 when the call came back as a result.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import urllib.request

URL = sys.argv[-1]
SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
BIN = os.environ["BOXMAKER_BIN"]
# The client id metadata document URL the scenario expects a client that has one to use.
CIMD = "https://conformance-test.local/client-metadata.json"

work = tempfile.mkdtemp(
    prefix=SCENARIO.replace("/", "-") + "-", dir=os.environ.get("BXM_CONFORMANCE_DIR")
)
config = os.path.join(work, "boxmaker.toml")
port = urllib.parse.urlsplit(URL).port


def log(*a):
    print("client:", *a, file=sys.stderr, flush=True)


oauth = {}
secrets = ""
if CONTEXT.get("client_id"):
    oauth["client_id"] = CONTEXT["client_id"]
    if CONTEXT.get("client_secret"):
        path = os.path.join(work, "client-secret")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, CONTEXT["client_secret"].encode())
        os.close(fd)
        secrets = f'[[secret]]\nname = "client"\nfile = "{path}"\n\n'
        oauth["client_secret"] = "client"
elif SCENARIO == "auth/basic-cimd":
    oauth["client_id"] = CIMD
oauth_toml = (
    "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in oauth.items()) + " }"
    if oauth
    else "true"
)

# The person trusts the server they configure (its [[tool]] says nothing of trust): its
# answers come through these rules, so they say so too (docs/spec.md §3.6).
rules = "".join(
    f'[[egress]]\nhost = "{h}"\nports = [{port}]\ntrusted = true\n\n'
    for h in ["localhost", "127.0.0.1", "::1"]
)
with open(config, "w") as f:
    f.write(
        f"""[gate]
state = "{os.path.join(work, 'state')}"

[box]
timeout_seconds = 20

{secrets}{rules}[[tool]]
name = "conf"
url = "{URL}"
oauth = {oauth_toml}
prefix = ""

[[grant]]
tool = "*"
effect = "allow"
"""
    )


def trust():
    """The person's word for the config they just wrote or edited (`boxmaker trust`,
    docs/spec.md §6, "Whose config"): boxmaker uses a config only once trusted."""
    r = subprocess.run(
        [BIN, "trust", "--config", config], capture_output=True, text=True, timeout=60
    )
    if r.returncode != 0:
        log("trust:", r.returncode, r.stdout.strip(), r.stderr.strip())
        sys.exit(1)


trust()


def browse(url):
    """The person's browser: open the URL, follow its redirects (to the loopback callback)."""
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            r.read()
    except Exception as e:  # the login's own result says what went wrong
        log("browser:", e)


def login():
    for _ in range(4):
        p = subprocess.Popen(
            [BIN, "auth", "login", "conf", "--config", config, "--no-browser", "--wait", "25"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out = []
        for line in p.stdout:
            out.append(line)
            if line.startswith("http://") or line.startswith("https://"):
                threading.Thread(target=browse, args=(line.strip(),), daemon=True).start()
        err = p.stderr.read()
        rc = p.wait()
        log("auth login:", rc, "".join(out).strip(), err.strip())
        if rc == 0:
            return True
        added = "".join(l for l in out if not l.startswith("#"))
        if "[[egress]]" not in added:
            return False
        with open(config, "a") as f:
            f.write("\n" + added)
        trust()
    return False


def call():
    r = subprocess.run(
        [BIN, "call", "--config", config, "--session", "conformance", "--json", "test-tool", "{}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    log("call:", r.returncode, r.stdout.strip(), r.stderr.strip())
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"status": "failed", "message": r.stderr}


sign_ins = 0
while sign_ins < 3:
    if not login():
        sys.exit(1)
    sign_ins += 1
    answer = call()
    if answer.get("status") == "result":
        sys.exit(0)
    if "auth login" not in answer.get("message", ""):
        sys.exit(1)
sys.exit(1)
