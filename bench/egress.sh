#!/usr/bin/env bash
# Egress through boxmaker's proxy, against no box (docs/performance.md, "Egress"):
#
#   direct     bench/egress_client.py on the host, straight to the origin
#   boxmaker   the same client in a `network = true` box (`boxmaker call net`), through the
#              egress proxy: a CONNECT tunnel per connection, the origin named by an
#              [[egress]] rule (127.0.0.1 by address, on its port, tunnels allowed there)
#   srt        the same client under @anthropic-ai/sandbox-runtime (its HTTP proxy), when
#              `npm install --prefix bench/.srt @anthropic-ai/sandbox-runtime` and its
#              bubblewrap and socat are there (said, and skipped, when not)
#
# Each prints the p50 and p90 time to first byte over CONNS fresh connections (connect,
# CONNECT and its answer where there is a proxy, a one-byte GET) and the median of three
# downloads of BYTES through one connection. The client is the same Python program in all
# columns, so what differs is the path.
#
# Usage: bench/egress.sh [CONNS] [BYTES] [ROUNDS]   (default 300 connections, 100 MB, 5 rounds)
# BOXMAKER_BIN=path/to/boxmaker runs that binary instead of building this checkout's (to
# pair one commit against another: build each, run them in turn).
set -euo pipefail

conns="${1:-300}"
bytes="${2:-100000000}"
rounds="${3:-5}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ -n "${BOXMAKER_BIN:-}" ]]; then
    boxmaker="$BOXMAKER_BIN"
else
    echo "egress: building the dist binary..." >&2
    (cd "$here" && cargo build --profile dist --quiet -p boxmaker)
    target="${CARGO_TARGET_DIR:-$here/target}"
    boxmaker="$target/dist/boxmaker"
fi

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
# The client speaks plain HTTP through its tunnel: the proxy reads that one request (its
# Host must be the tunnel's) and splices the answer.
tunnel_ports = [$port]
TOML
# boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config"); a boxmaker
# from before `trust` (paired against this one) needs no word.
if "$boxmaker" trust --help >/dev/null 2>&1; then
    "$boxmaker" trust --config "$out/boxmaker.toml" >/dev/null
fi

client=(/usr/bin/python3 /opt/bench/egress_client.py)
args="$(python3 -c 'import json,sys; print(json.dumps({"argv": sys.argv[1:]}))' \
    "${client[@]}" proxy "$port" "$conns" "$bytes")"
srt="$here/bench/.srt/node_modules/.bin/srt"
have_srt=""
if [[ -x "$srt" ]] && command -v bwrap >/dev/null && command -v socat >/dev/null \
    && command -v rg >/dev/null; then
    have_srt=1
    cat > "$out/srt.json" <<JSON
{"network": {"allowedDomains": ["127.0.0.1:$port"], "deniedDomains": []},
 "filesystem": {"denyRead": [], "allowWrite": ["$out"], "denyWrite": []}}
JSON
fi

# Rounds in turn (direct, boxmaker, srt, direct, ...), so a machine whose speed drifts
# moves every column alike; the summary takes each column's median, and pairs each round
# with its direct run for the differences and ratios.
: > "$out/results"
for round in $(seq "$rounds"); do
    echo "egress: round $round/$rounds" >&2
    echo "direct $(/usr/bin/python3 "$here/bench/egress_client.py" direct "$port" "$conns" "$bytes")" >> "$out/results"
    echo "boxmaker $("$boxmaker" call --json --config "$out/boxmaker.toml" --session bench net "$args" \
        | python3 -c 'import json,sys; r=json.load(sys.stdin); c=json.loads(r["content"]); print(c["stdout"].strip() or c)')" >> "$out/results"
    if [[ -n "$have_srt" ]]; then
        if s="$("$srt" -s "$out/srt.json" -c "/usr/bin/python3 $here/bench/egress_client.py proxy $port $conns $bytes" 2>"$out/srt.err")"; then
            echo "srt $s" >> "$out/results"
        else
            echo "egress: srt failed: $(tail -n 3 "$out/srt.err" | tr '\n' ' ')" >&2
        fi
    fi
done
[[ -n "$have_srt" ]] || echo "egress: srt not run (npm install --prefix bench/.srt @anthropic-ai/sandbox-runtime; apt-get install bubblewrap socat ripgrep)" >&2
cat "$out/results"
python3 - "$out/results" <<'PY'
import json, statistics, sys
cols = {}
for line in open(sys.argv[1]):
    name, _, js = line.partition(" ")
    try:
        cols.setdefault(name, []).append(json.loads(js))
    except ValueError:
        print(f"{name}: not a result: {js.strip()}")
med = {n: {k: statistics.median(r[k] for r in rs) for k in ("ttfb_p50_ms", "ttfb_p90_ms", "bulk_mb_per_s")}
       for n, rs in cols.items()}
# "added" and "of direct" pair each round with the direct run just before it (the machine
# drifts between rounds), then take the median of the pairs.
d = cols["direct"]
print(f"{'':10} {'ttfb p50 ms':>12} {'ttfb p90 ms':>12} {'MB/s':>8} {'added p50 ms':>13} {'of direct':>10}")
for n, m in med.items():
    rs = cols[n]
    added = statistics.median(r["ttfb_p50_ms"] - x["ttfb_p50_ms"] for r, x in zip(rs, d))
    share = statistics.median(r["bulk_mb_per_s"] / x["bulk_mb_per_s"] * 100 for r, x in zip(rs, d))
    print(f"{n:10} {m['ttfb_p50_ms']:12.3f} {m['ttfb_p90_ms']:12.3f} {m['bulk_mb_per_s']:8.0f} {added:13.3f} {share:9.0f}%")
PY
