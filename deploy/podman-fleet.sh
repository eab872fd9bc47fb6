#!/bin/sh
# Runs deploy/compose.yaml as it is — two replicas and PostgreSQL — with podman-compose, and
# checks the fleet it makes: each replica trusted the mounted config (`boxmaker trust`) before
# it served, a conversation spread over both replicas (deploy/fleet_client.py), then replica 1
# restarted, its audit chain kept and the fleet's checkpoint still agreeing, then PostgreSQL
# cut off the network (a call refused in bounded time, saying why) and back, then the mounted
# config changed (refused until the replicas restart, which trust and serve the new one).
#
#   deploy/podman-fleet.sh BINARY [BASE_IMAGE]
#
# BINARY and BASE_IMAGE: as deploy/podman-check.sh, which this runs first (it builds the
# replicas' image, localhost/boxmaker:check, tagged here localhost/boxmaker:latest as the
# Compose file names it). Needs podman-compose (PODMAN_COMPOSE, default `podman-compose`)
# and a Python with the official MCP SDK (PYTHON, default tests/py/client-venv's, which
# `make deps` makes).
#
# Two things differ from `docker compose up`, and only these, through an override file:
# - PostgreSQL's image is POSTGRES_IMAGE when given, else one built here from BASE_IMAGE with
#   Debian's PostgreSQL and a small entrypoint honouring POSTGRES_USER, POSTGRES_DB and
#   POSTGRES_PASSWORD_FILE (the official image is on Docker Hub);
# - PODMAN_ULIMITS (e.g. "nofile=20000 nproc=4096") sets every container's limits, for a
#   machine whose own hard limits are below Podman's defaults.
set -eu
bin=${1:?usage: deploy/podman-fleet.sh BINARY [BASE_IMAGE]}
base=${2:-docker.io/library/debian:bookworm-slim}
here=$(cd "$(dirname "$0")" && pwd)
compose=${PODMAN_COMPOSE:-podman-compose}
python=${PYTHON:-$here/../tests/py/client-venv/bin/python3}
work=$(mktemp -d)
project=boxmaker-fleet-check
cleanup() {
    (cd "$work/deploy" 2>/dev/null && $compose -p $project -f compose.yaml -f override.yaml down -v >/dev/null 2>&1) || true
    rm -rf "$work"
}
trap cleanup EXIT

flags=""
for l in ${PODMAN_ULIMITS:-}; do flags="$flags --ulimit ${l%%=*}=${l#*=}:${l#*=}"; done
PODMAN_RUN_FLAGS="$flags" sh "$here/podman-check.sh" "$bin" "$base"
podman tag localhost/boxmaker:check localhost/boxmaker:latest

pg_image=${POSTGRES_IMAGE:-}
if [ -z "$pg_image" ]; then
    pg_image=localhost/boxmaker-check-postgres:15
    mkdir -p "$work/pg"
    cat > "$work/pg/entry.sh" <<'EOF'
#!/bin/sh
set -eu
bin=/usr/lib/postgresql/15/bin
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    install -o postgres -m 0400 "$POSTGRES_PASSWORD_FILE" /tmp/pw
    runuser -u postgres -- $bin/initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/pw \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f /tmp/pw
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    runuser -u postgres -- $bin/pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
    runuser -u postgres -- $bin/createdb -U "$POSTGRES_USER" "$POSTGRES_DB"
    runuser -u postgres -- $bin/pg_ctl -D "$PGDATA" -w stop >/dev/null
fi
exec runuser -u postgres -- $bin/postgres -D "$PGDATA" -c listen_addresses='*'
EOF
    cat > "$work/pg/Containerfile" <<EOF
FROM $base
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-15 \\
 && rm -rf /var/lib/apt/lists/*
COPY entry.sh /usr/local/bin/entry.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    PGDATA=/var/lib/postgresql/data
ENTRYPOINT ["/bin/sh", "/usr/local/bin/entry.sh"]
EOF
    # shellcheck disable=SC2086
    podman build --network host $flags -t "$pg_image" "$work/pg" >/dev/null
fi

# The Compose file and what it names, as a newcomer would lay them out (its own top says how).
mkdir -p "$work/deploy/secrets"
cp "$here/compose.yaml" "$here/boxmaker.toml" "$here/seccomp-boxmaker.json" "$work/deploy/"
openssl rand -hex 24 > "$work/deploy/secrets/postgres-password"
chmod 0400 "$work/deploy/secrets/"*
chown 10001:10001 "$work/deploy/secrets/"*
{
    echo "services:"
    for s in postgres replica-1 replica-2; do
        echo "  $s:"
        [ $s = postgres ] && echo "    image: $pg_image"
        if [ -n "${PODMAN_ULIMITS:-}" ]; then
            echo "    ulimits:"
            for l in $PODMAN_ULIMITS; do echo "      ${l%%=*}: ${l#*=}"; done
        fi
    done
} > "$work/deploy/override.yaml"

cd "$work/deploy"
$compose -p $project -f compose.yaml -f override.yaml up -d >compose-up.log 2>&1 \
    || { cat compose-up.log; exit 1; }
r1=${project}_replica-1_1 r2=${project}_replica-2_1
# What an operator runs in a replica: its shell has the password the entrypoint read.
inside() { c=$1; shift; podman exec "$c" sh -c "PGPASSWORD=\$(cat /run/secrets/postgres-password) exec $*"; }
wait_front() { # CONTAINER PORT: until its front answers (401: it wants a credential)
    for _ in $(seq 1 120); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/mcp" || true)
        [ "$code" = 401 ] && return 0
        sleep 0.5
    done
    echo "FAIL $1 never answered on :$2"; podman logs "$1" 2>&1 | tail -20; exit 1
}
config=/etc/boxmaker/boxmaker.toml
wait_front $r1 8080
wait_front $r2 8090

# Each replica's command trusts the config mounted (the operator's word, docs/deploy.md) before
# its gate serves: the container's last start printed `trusted … (sha256 <the file's>…)` and
# then `serving`, and the record on its volume (the image's HOME) holds those bytes.
trusted() { # CONTAINER
    want=$(sha256sum "$work/deploy/boxmaker.toml" | cut -c1-16)
    last=$(podman logs "$1" 2>&1 | grep '^trusted /etc/boxmaker/boxmaker.toml' | tail -1)
    case "$last" in
        *"(sha256 $want"*) ;;
        *) echo "FAIL $1 did not trust the config mounted (sha256 $want…): ${last:-no trust line}"; exit 1 ;;
    esac
    for i in $(seq 1 20); do # `serve` starts in the background beside the front: wait for it
        podman logs "$1" 2>&1 | awk '/^trusted \/etc\/boxmaker\/boxmaker.toml/ { t = 1; s = 0 }
            t && /^boxmaker: serving;/ { s = 1 } END { exit !s }' && break
        [ "$i" -lt 20 ] || { echo "FAIL $1 trusted the config but its gate did not serve after"; exit 1; }
        sleep 0.5
    done
    diff=$(podman exec "$1" boxmaker trust --diff --config $config 2>&1)
    case "$diff" in
        *"unchanged since you trusted it"*) echo "ok   $1: $last; then serving; $diff" ;;
        *) echo "FAIL $1's record does not hold the config mounted: $diff"; exit 1 ;;
    esac
}
trusted $r1
trusted $r2

converse() {
    token=$(inside $r1 boxmaker token --config $config | grep -oE '[0-9a-f]{16}\.[0-9a-f]{32}' | head -1)
    [ -n "$token" ] || { echo "FAIL replica 1 minted no credential"; exit 1; }
    "$python" "$here/fleet_client.py" http://127.0.0.1:8080/mcp http://127.0.0.1:8090/mcp \
        "$token" "podman exec $r1" "podman exec $r2"
}
signed_since() { # CONTAINER T0: until the replica's latest checkpoint was signed at T0 or
    # later (a gate signs one every 60 s while records come: the deploy config's default)
    for _ in $(seq 1 100); do
        t=$(inside "$1" boxmaker audit checkpoint --config $config 2>/dev/null \
            | grep -oE '"time":[0-9]+' | grep -oE '[0-9]+$' || true)
        [ -n "$t" ] && [ "$t" -ge "$2" ] && return 0
        sleep 1
    done
    echo "FAIL $1 signed no checkpoint in 100 s"; exit 1
}
fleet_checkpoint() { # a fresh checkpoint on each replica, then one fleet checkpoint over both
    t0=$(date +%s)
    signed_since $r1 "$t0"
    signed_since $r2 "$t0"
    inside $r1 boxmaker audit fleet --to /var/lib/boxmaker/fleet.checkpoints --config $config
}
key_id() { inside $r1 boxmaker audit checkpoint --config $config | grep -oE 'key id [0-9a-f]+' | head -1; }

converse
# A command run in a replica without the password is refused, and says what is missing.
out=$(podman exec $r1 boxmaker token --config $config 2>&1 || true)
case "$out" in
    *"set PGPASSWORD"*) echo "ok   without PGPASSWORD a replica says so: $out" ;;
    *) echo "FAIL without PGPASSWORD a replica said: $out"; exit 1 ;;
esac
fleet_checkpoint
before=$(key_id)
records_before=$(inside $r1 boxmaker audit verify --config $config | grep -oE '[0-9]+ records' | head -1)

echo "replica 1 restarted"
podman restart $r1 >/dev/null
wait_front $r1 8080
trusted $r1
after=$(key_id)
[ "$before" = "$after" ] \
    && echo "ok   replica 1 kept its audit key across the restart ($after)" \
    || { echo "FAIL replica 1's audit key changed: $before, now $after"; exit 1; }
converse
fleet_checkpoint
out=$(inside $r1 boxmaker audit verify --fleet /var/lib/boxmaker/fleet.checkpoints --config $config)
echo "ok   replica 1's chain (it had $records_before before the restart): $out"

# PostgreSQL taken off the network: the replicas' packets to it are dropped, nothing
# answers or resets, and the server can enforce no timeout of its own.
echo "PostgreSQL cut off the network"
token=$(inside $r1 boxmaker token --config $config | grep -oE '[0-9a-f]{16}\.[0-9a-f]{32}' | head -1)
podman network disconnect ${project}_default ${project}_postgres_1
"$python" "$here/fleet_client.py" http://127.0.0.1:8080/mcp http://127.0.0.1:8090/mcp \
    "$token" "podman exec $r1" "podman exec $r2" cut
podman network connect --alias postgres ${project}_default ${project}_postgres_1
echo "PostgreSQL back on the network"
# Podman gives it another address. A gate's connection made before the cut may still point
# at the old one: its next statement waits out the 15 s and fails closed, and the one after
# that connects anew. So wait for each gate to read the store again (`approvals` is answered
# by the gate from the store), not for a fresh connection of a command of its own.
back=$(date +%s)
for r in $r1 $r2; do
    until inside "$r" boxmaker approvals --config $config >/dev/null 2>&1; do
        [ $(($(date +%s) - back)) -lt 90 ] || { echo "FAIL $r's gate did not read the store again in 90 s"; exit 1; }
        sleep 1
    done
done
echo "ok   both gates read the store again $(($(date +%s) - back)) s after it came back"
converse

# The config mounted changes under the running replicas (written in place, as an editor or
# a ConfigMap sync may): what reads it refuses, saying so, until the replica starts again;
# a restart trusts what is mounted and serves it (here `list_dir` asks a person too).
awk '/^tool = "list_dir"$/ { g = 1 } g && /^effect = "allow"$/ { $0 = "effect = \"ask\""; g = 0 } { print }' \
    "$here/boxmaker.toml" > "$work/changed.toml"
if cmp -s "$here/boxmaker.toml" "$work/changed.toml"; then
    echo "FAIL could not make a changed config (no list_dir grant that allows)"; exit 1
fi
cat "$work/changed.toml" > "$work/deploy/boxmaker.toml"
echo "the mounted config changed"
out=$(inside $r1 boxmaker grants --config $config 2>&1 || true)
case "$out" in
    *"changed since you trusted it"*) echo "ok   before a restart replica 1 refuses it: $out" ;;
    *) echo "FAIL replica 1 used a config changed under it: $out"; exit 1 ;;
esac
podman restart $r1 $r2 >/dev/null
wait_front $r1 8080
wait_front $r2 8090
for r in $r1 $r2; do
    trusted "$r"
    inside "$r" boxmaker grants --config $config | grep -q '^config:[0-9]*  ask list_dir ' \
        || { echo "FAIL $r does not serve the changed config"; exit 1; }
done
echo "ok   both replicas serve the changed config (list_dir asks)"
converse
echo "fleet: ok"
