#!/bin/sh
# The gate's call path, end to end (docs/performance.md, "Gate: the call path").
#
#   bench/gate-call-path.sh              # every figure: floor, inproc (disk and tmpfs), process, pending
#   GATE_BENCH_SECS=10 bench/gate-call-path.sh
#
# floor    write+fdatasync and SQLite commits on this disk (the fsync floor)
# inproc   in-process gate, a runner that answers at once, over UnixStreams (1/16/256 sessions),
#          once with the state on the disk and once on tmpfs (fsync nearly free: the gate's own cost)
# process  `boxmaker __gate` + its runner, read_file in a box, over agent.sock (1/16/256 sessions)
# pending  10,000 calls held for approval by `boxmaker __gate`: its VmRSS and threads
set -eu
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --profile dist -p boxmaker
export BOXMAKER_BIN="$CARGO_TARGET_DIR/dist/boxmaker"
bench() { cargo bench -q -p gate --bench call_path -- "$@"; }
echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
bench floor inproc
if [ -d /dev/shm ]; then
    shm=$(mktemp -d /dev/shm/gate-bench.XXXXXX)
    echo "# state on tmpfs ($shm)"
    TMPDIR="$shm" GATE_BENCH_DIR="$shm" bench floor inproc
    rm -rf "$shm"
fi
GATE_BENCH_TTL=60 bench process pending
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
