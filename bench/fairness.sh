#!/bin/sh
# Fairness (docs/performance.md, "Fairness"): another session's `call run true` latency,
# unloaded and under one session's flood of 70 slow calls, through one `boxmaker serve`.
#
#   bench/fairness.sh
set -eu
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build -q --profile dist -p boxmaker
bin="$CARGO_TARGET_DIR/dist/boxmaker"
dir=$(mktemp -d)
trap 'kill ${serve:-} 2>/dev/null || true; "$bin" trust --revoke --config "$dir/boxmaker.toml" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
cat > "$dir/boxmaker.toml" <<'TOML'
[gate]
state = "state"

[box]
timeout_seconds = 120

[[tool]]
name = "run"
builtin = "run"

[[grant]]
tool = "run"
effect = "allow"
TOML
# boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config"); the record
# goes with the directory (the trap above).
"$bin" trust --config "$dir/boxmaker.toml" >/dev/null
"$bin" serve --config "$dir/boxmaker.toml" </dev/null >/dev/null 2>&1 &
serve=$!
while [ ! -S "$dir/state/agent.sock" ]; do sleep 0.1; done
# One command line for hyperfine -N (no shell: it splits the line itself, so the JSON is
# single-quoted).
one="$bin call --config $dir/boxmaker.toml --session other run '{\"argv\":[\"true\"]}'"
echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## unloaded"
hyperfine -N --runs 10 --style basic "$one"
# The flood: 70 calls at once from one session, each a box that sleeps 60 s (16 run, the
# rest are refused at once at the session's cap).
(
  end=$(( $(date +%s) + 50 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    i=0
    while [ $i -lt 70 ]; do
      "$bin" call --config "$dir/boxmaker.toml" --session flood run '{"argv":["sleep","60"]}' \
        </dev/null >/dev/null 2>&1 &
      i=$((i + 1))
    done
    wait
  done
) &
flood=$!
sleep 3
echo "## under the flood"
hyperfine -N --runs 10 --style basic "$one"
kill $flood 2>/dev/null || true
