#!/usr/bin/env bash
# Egress through boxmaker's proxy, against no box (docs/performance.md, "Egress"):
#
#   direct     bench/egress_client.py on the host, straight to the origin
#   boxmaker   the same client in a `network = true` box (`boxmaker call net`), through the
#              egress proxy: a CONNECT tunnel per connection, the origin named by an
#              [[egress]] rule (127.0.0.1 by address, on its port)
#   srt        the same client under @anthropic-ai/sandbox-runtime (its HTTP proxy), when
#              `npm install --prefix bench/.srt @anthropic-ai/sandbox-runtime` and its
#              bubblewrap and socat are there (said, and skipped, when not)
#
# Each prints the p50 and p90 time to first byte over CONNS fresh connections (connect,
# CONNECT and its answer where there is a proxy, a one-byte GET) and the median of three
# downloads of BYTES through one connection. The client is the same Python program in all
# columns, so what differs is the path.
#
# Usage: bench/egress.sh [CONNS] [BYTES]   (default 300 connections, 100 MB)
set -euo pipefail

conns="${1:-300}"
bytes="${2:-100000000}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

echo "egress: building the release binary..." >&2
(cd "$here" && cargo build --release --quiet -p boxmaker)
target="${CARGO_TARGET_DIR:-$here/target}"
boxmaker="$target/release/boxmaker"

out="$(mktemp -d "${TMPDIR:-/tmp}/egress-bench.XXXXXX")"
python3 "$here/bench/egress_origin.py" > "$out/port" &
origin=$!
trap 'kill $origin 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s "$out/port" ]] && break; sleep 0.1; done
port="$(head -n1 "$out/port")"

cat > "$out/boxmaker.toml" <<TOML
[gate]
state = "state"

[box]
timeout_seconds = 600

[[mount]]
name = "bench"
host = "$here/bench"
at = "/opt/bench"
class = "public"

[[tool]]
name = "net"
builtin = "run"
network = true
mounts = ["bench"]

[[grant]]
tool = "net"
effect = "allow"

[[egress]]
host = "127.0.0.1"
ports = [$port]
TOML

client=(/usr/bin/python3 /opt/bench/egress_client.py)
echo "egress: direct" >&2
direct="$(python3 "$here/bench/egress_client.py" direct "$port" "$conns" "$bytes")"
echo "egress: boxmaker" >&2
args="$(python3 -c 'import json,sys; print(json.dumps({"argv": sys.argv[1:]}))' \
    "${client[@]}" proxy "$port" "$conns" "$bytes")"
boxed="$("$boxmaker" call --json --config "$out/boxmaker.toml" --session bench net "$args" \
    | python3 -c 'import json,sys; r=json.load(sys.stdin); c=json.loads(r["content"]); print(c["stdout"].strip() or c)')"

srt="$here/bench/.srt/node_modules/.bin/srt"
srt_line="srt: not run (install: npm install --prefix bench/.srt @anthropic-ai/sandbox-runtime; apt-get install bubblewrap socat)"
if [[ -x "$srt" ]] && command -v bwrap >/dev/null && command -v socat >/dev/null; then
    cat > "$out/srt.json" <<JSON
{"network": {"allowedDomains": ["127.0.0.1:$port"], "deniedDomains": []},
 "filesystem": {"denyRead": [], "allowWrite": ["$out"], "denyWrite": []}}
JSON
    echo "egress: srt" >&2
    if s="$("$srt" -s "$out/srt.json" -c "python3 $here/bench/egress_client.py proxy $port $conns $bytes" 2>"$out/srt.err")"; then
        srt_line="$s"
    else
        srt_line="srt: failed ($(tail -n 3 "$out/srt.err" | tr '\n' ' '))"
    fi
fi

echo "direct:   $direct"
echo "boxmaker: $boxed"
echo "srt:      $srt_line"
python3 - "$direct" "$boxed" <<'PY'
import json, sys
d, b = (json.loads(a) for a in sys.argv[1:3])
print(f"added per connection (p50): {b['ttfb_p50_ms'] - d['ttfb_p50_ms']:.3f} ms; "
      f"throughput: {b['bulk_mb_per_s'] / d['bulk_mb_per_s'] * 100:.0f}% of direct")
PY
