#!/bin/sh
# Builds the image's runtime stage (deploy/Containerfile's second stage, unchanged) around a
# boxmaker binary built on this host, then checks with Podman that a box starts in it under
# the settings docs/deploy.md lists, and that it does not without each of them — and that
# `boxmaker doctor` says the same each time.
#
#   deploy/podman-check.sh target/dist/boxmaker [BASE_IMAGE]
#
# BASE_IMAGE defaults to docker.io/library/debian:bookworm-slim; where that registry is out
# of reach, import a Debian rootfs (`debootstrap --variant=minbase bookworm ROOT` then
# `tar -C ROOT -c . | podman import - localhost/debian:bookworm-slim`) and name that.
# PODMAN_RUN_FLAGS adds flags to every `podman run` (a machine whose own rlimits are lower
# than Podman's defaults needs `--ulimit nofile=N:N --ulimit nproc=N:N`).
set -eu
bin=${1:?usage: deploy/podman-check.sh BINARY [BASE_IMAGE]}
base=${2:-docker.io/library/debian:bookworm-slim}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$bin" "$work/boxmaker"
# The build stage replaced by the binary given; the runtime stage kept byte for byte.
awk 'BEGIN { skip = 0 }
     /^FROM \$\{RUST_IMAGE\} AS build/ { print "FROM scratch AS build"; print "COPY boxmaker /out/boxmaker"; skip = 1; next }
     /^FROM \$\{BASE_IMAGE\}/ { skip = 0 }
     !skip { print }' "$here/Containerfile" > "$work/Containerfile"
podman build --network host ${PODMAN_RUN_FLAGS:-} --build-arg BASE_IMAGE="$base" \
  -f "$work/Containerfile" -t localhost/boxmaker:check "$work" >/dev/null
documented="--cap-drop ALL --security-opt no-new-privileges:true
  --security-opt seccomp=$here/seccomp-boxmaker.json --security-opt apparmor=unconfined
  --security-opt systempaths=unconfined"
fail=0
check() { # NAME WANT(run|refuse) FLAGS...
  name=$1 want=$2; shift 2
  doctor=$(podman run --rm ${PODMAN_RUN_FLAGS:-} "$@" localhost/boxmaker:check doctor 2>&1 | grep '^boxes ' || true)
  # shellcheck disable=SC2016
  boxed=$(podman run --rm ${PODMAN_RUN_FLAGS:-} "$@" --entrypoint /bin/sh localhost/boxmaker:check -c \
    'boxmaker init /tmp/p >/dev/null && boxmaker box exec --config /tmp/p/boxmaker.toml --session s -- /bin/echo a-box-ran' 2>&1 | tail -1)
  case "$want:$doctor:$boxed" in
    run:"boxes can run here":a-box-ran) echo "ok   $name: a box runs, and doctor says so" ;;
    refuse:"boxes cannot run here"*:*) [ "$boxed" != a-box-ran ] \
      && echo "ok   $name: no box starts ($boxed), and doctor says so ($doctor)" \
      || { echo "FAIL $name: a box ran where doctor said none could"; fail=1; } ;;
    *) echo "FAIL $name: doctor said '$doctor', the box said '$boxed'"; fail=1 ;;
  esac
}
# shellcheck disable=SC2086
check "the documented settings" run $documented
# shellcheck disable=SC2086
check "without the seccomp profile" refuse $(echo $documented | sed 's|--security-opt seccomp=[^ ]*||')
# shellcheck disable=SC2086
check "with /proc masked" refuse $(echo $documented | sed 's|--security-opt systempaths=unconfined||')
exit $fail
