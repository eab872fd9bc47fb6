#!/bin/sh
# Issue 16's promises (docs/performance.md, "Approvals: seen at once, listed at once"), on a
# dist (shipped) build with the real clients the tests use:
#   - a call that asks is on the approvals page (headless Chromium) and in the agent's
#     client (the Python SDK's elicitation callback) within 100 ms;
#   - 10,000 pending approvals list on the page in under 1 s.
#
#   bench/approvals-latency.sh                 # 5 page runs and 3 client runs
#   RUNS=10 bench/approvals-latency.sh
#   SCREENSHOT=docs/guide/src/approvals.png bench/approvals-latency.sh   # also the picture in the guide and the README
#
# Needs what `make deps` and .ci/run install (the Python SDK, Selenium, chromium,
# chromium-driver).
set -eu
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --profile dist -p boxmaker
BIN="$CARGO_TARGET_DIR/dist/boxmaker"
RUNS="${RUNS:-5}"
work=$(mktemp -d)
# The configs' trust records go with them.
trap 'for c in "$work"/*/boxmaker.toml; do "$BIN" trust --revoke --config "$c" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
config() { # DIR GATE-LINES
    "$BIN" init "$1" >/dev/null
    printf '%s\n' "$2" | sed -i '/^\[gate\]$/r /dev/stdin' "$1/boxmaker.toml"
    sed -i 's/^approval_ttl = 300 /# approval_ttl = 300 /' "$1/boxmaker.toml"
    # boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config"): `init`
    # trusted what it wrote, the edits need the word again.
    "$BIN" trust --config "$1/boxmaker.toml" >/dev/null
}
echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
i=1
while [ "$i" -le "$RUNS" ]; do
    config "$work/page$i" "approval_ttl = 120"
    shot="$work/page$i/approvals.png"
    [ "$i" = 1 ] && [ -n "${SCREENSHOT:-}" ] && shot="$PWD/$SCREENSHOT"
    BOXMAKER_BIN="$BIN" BOXMAKER_CONFIG="$work/page$i/boxmaker.toml" BOXMAKER_MANY=10000 \
        BOXMAKER_SCREENSHOT="$shot" python3 crates/boxmaker/tests/python/page_browser.py \
        | grep -E '^on the page|pending approvals listed|^ok$' | sed "s/^/page run $i: /"
    i=$((i + 1))
done
i=1
while [ "$i" -le 3 ]; do
    config "$work/client$i" "approve_in_client = true
approval_ttl = 4"
    BOXMAKER_BIN="$BIN" BOXMAKER_CONFIG="$work/client$i/boxmaker.toml" \
        python3 crates/boxmaker/tests/python/elicit_client.py \
        | grep -E 'latency|after the call|^ok$' | sed "s/^/client run $i: /"
    i=$((i + 1))
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
