#!/usr/bin/env bash
# Box startup, side by side in one hyperfine run (docs/performance.md, "Box: startup"):
#
#   boxmaker   boxmaker box exec --config <temp config> --session bench -- /bin/true
#   bwrap      bwrap --unshare-all --ro-bind / / /bin/true
#   floor      the bare namespace + landlock + seccomp calls with the sandbox crate's own data,
#              then exec (crates/sandbox/examples/floor.rs)
#   unshare    unshare -Urmpinuc --fork /bin/true (namespaces only: a second, lower floor)
#   plain      /bin/true
#
# Usage: bench/box-startup.sh [RUNS]   (default 300 runs after 20 warm-up runs each)
# Environment: CARGO_TARGET_DIR as for cargo (default: target/ of the workspace);
#              BOXMAKER_BENCH_BASELINE=/path/to/older/boxmaker adds that binary as a column.
#
# Then CPU per start with `perf stat` (every process, bwrap's unreaped pid 1 included), where
# perf works.
#
# Installs nothing: it checks for hyperfine and bwrap and says how to get them. Builds
# the shipped (`dist` profile) binaries with cargo. Results (markdown and JSON) go to a temporary directory whose
# path is printed; a summary table with ratios is printed at the end.
set -euo pipefail

runs="${1:-300}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

missing=()
command -v hyperfine >/dev/null || missing+=("hyperfine")
command -v bwrap >/dev/null || missing+=("bubblewrap")
command -v unshare >/dev/null || missing+=("util-linux")
command -v python3 >/dev/null || missing+=("python3")
if ((${#missing[@]})); then
    echo "box-startup: missing: ${missing[*]}" >&2
    echo "box-startup: on Debian/Ubuntu: sudo apt-get install ${missing[*]}" >&2
    exit 2
fi

echo "box-startup: building the dist binaries..." >&2
(cd "$here" && cargo build --profile dist --quiet -p boxmaker && cargo build --profile dist --quiet -p sandbox --example floor)
target="${CARGO_TARGET_DIR:-$here/target}"
boxmaker="$target/dist/boxmaker"
floor="$target/dist/examples/floor"

out="$(mktemp -d "${TMPDIR:-/tmp}/box-startup.XXXXXX")"
"$boxmaker" init "$out/cfg" >/dev/null
config="$out/cfg/boxmaker.toml"
# A box must start before it is timed: fail here, with its reason, rather than time errors.
"$boxmaker" box exec --config "$config" --session bench -- /bin/true
bwrap --unshare-all --ro-bind / / /bin/true
ws="$out/cfg/.boxmaker/work/bench"
"$floor" "$ws" /bin/true
unshare -Urmpinuc --fork /bin/true

cmds=(
    -n boxmaker "$boxmaker box exec --config $config --session bench -- /bin/true"
    -n bwrap "bwrap --unshare-all --ro-bind / / /bin/true"
    -n floor "$floor $ws /bin/true"
    -n unshare "unshare -Urmpinuc --fork /bin/true"
    -n plain "/bin/true"
)
if [[ -n "${BOXMAKER_BENCH_BASELINE:-}" ]]; then
    cmds+=(-n baseline "$BOXMAKER_BENCH_BASELINE box exec --config $config --session bench -- /bin/true")
fi

echo "box-startup: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
hyperfine -N --warmup 20 --runs "$runs" \
    --export-markdown "$out/box-startup.md" --export-json "$out/box-startup.json" \
    "${cmds[@]}"

python3 - "$out/box-startup.json" <<'EOF'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ms = lambda s: s * 1000
bw, fl = res["bwrap"], res["floor"]
print()
print("| command | mean ± σ (ms) | median (ms) | min (ms) | mean / bwrap | min / bwrap "
      "| mean / floor | min / floor |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, r in res.items():
    print(f"| {name} | {ms(r['mean']):.2f} ± {ms(r['stddev']):.2f} | {ms(r['median']):.2f} "
          f"| {ms(r['min']):.2f} | {r['mean'] / bw['mean']:.2f} | {r['min'] / bw['min']:.2f} "
          f"| {r['mean'] / fl['mean']:.2f} | {r['min'] / fl['min']:.2f} |")
b = res["boxmaker"]
print()
for what, key in [("mean", "mean"), ("min", "min")]:
    print(f"by {what}: box <= bwrap {'met' if b[key] <= bw[key] else 'MISSED'} "
          f"({b[key] / bw[key]:.2f}x); box <= 1.5 x floor "
          f"{'met' if b[key] <= 1.5 * fl[key] else 'MISSED'} ({b[key] / fl[key]:.2f}x)")
EOF
# CPU, every process counted: `perf stat` follows every fork (bwrap leaves its sandbox's pid 1
# to be reaped by no one, so a parent's rusage of children misses it; perf does not).
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
    echo >&2
    echo "box-startup: CPU per start, all processes (perf stat -r $runs -e task-clock)" >&2
    cpu() {
        perf stat -r "$runs" -x, -e task-clock -- "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
    }
    b=$(cpu "$boxmaker" box exec --config "$config" --session bench -- /bin/true)
    w=$(cpu bwrap --unshare-all --ro-bind / / /bin/true)
    printf '| command | CPU ms per start | / bwrap |\n|---|---:|---:|\n'
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
    printf '| boxmaker | %.2f | %s |\n' "$b" "$(ratio "$b" "$w")"
    printf '| bwrap | %.2f | 1.00 |\n' "$w"
    if [[ -n "${BOXMAKER_BENCH_BASELINE:-}" ]]; then
        o=$(cpu "$BOXMAKER_BENCH_BASELINE" box exec --config "$config" --session bench -- /bin/true)
        printf '| baseline | %.2f | %s |\n' "$o" "$(ratio "$o" "$w")"
    fi
else
    echo "box-startup: no usable perf (linux-perf): CPU per start not measured" >&2
fi
echo "box-startup: results in $out (box-startup.md, box-startup.json)" >&2
