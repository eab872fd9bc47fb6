#!/bin/sh
# Replays the suites side by side (one `replay.py` each, all at once), then prints each
# suite's report in order; exits 1 if any suite's replay failed (or, with --check-goal,
# fell below its floor). The Makefile's efficacy targets call it.
#
#   bench/agentdojo/suites.sh OUT SUFFIX HELDOUT REPLAY_ARGS...
#
# OUT: the directory of the JSON results and the logs (OUT/SUITE$SUFFIX.json, .log);
# HELDOUT: `yes` adds each suite's held-out injection tasks and paraphrases where the
# project has them; REPLAY_ARGS go to every replay.py as they are. SUITES (the suites,
# space-separated), PYTHON (the AgentDojo venv's interpreter) and BOXMAKER_BIN come from the
# environment.
#
# Why side by side: one suite's replay keeps the two cores about 70 % busy (its sessions
# wait on each other's boxes and approvals); four at once keep them busy, and the full run
# takes the longest suite's time rather than the sum (docs/efficacy.md).
set -u
out=$1 suffix=$2 heldout=$3
shift 3
here=$(dirname "$0")
mkdir -p "$out"
pids=""
for s in $SUITES; do
    extra=""
    if [ "$heldout" = yes ]; then
        [ -f "$here/heldout/$s.py" ] && extra="$extra --extra-injections $here/heldout/$s.py"
        [ -f "$here/heldout/${s}_r3.py" ] && extra="$extra --new-injections $here/heldout/${s}_r3.py"
        [ -f "$here/paraphrases/$s.py" ] && extra="$extra --paraphrases $here/paraphrases/$s.py"
        # Round 4's on: SUITE_rN.py, given as --rN-… (replay.py's LATER_ROUNDS; a file of a
        # round it does not know is refused there, loudly).
        for f in "$here"/heldout/"${s}"_r*.py "$here"/paraphrases/"${s}"_r*.py; do
            [ -f "$f" ] || continue
            r=${f##*_}; r=${r%.py}
            [ "$r" = r3 ] && continue
            case $f in
                */heldout/*) extra="$extra --$r-injections $f" ;;
                *) extra="$extra --$r-paraphrases $f" ;;
            esac
        done
    fi
    # shellcheck disable=SC2086 # $extra is a list of options
    "$PYTHON" "$here/replay.py" --suite "$s" --policy "$here/policies/$s.toml" $extra \
        --json "$out/$s$suffix.json" "$@" > "$out/$s$suffix.log" 2>&1 &
    pids="$pids $!"
done
fail=0
set -- $pids
for s in $SUITES; do
    wait "$1"
    rc=$?
    shift
    cat "$out/$s$suffix.log"
    if [ $rc != 0 ]; then
        fail=1
        echo "efficacy: the $s replay ended with exit $rc (its log: $out/$s$suffix.log)" >&2
    fi
done
exit $fail
