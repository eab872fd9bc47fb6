#!/bin/sh
# Runs deploy/compose.yaml as it is — two replicas and PostgreSQL — with podman-compose, and
# checks the fleet it makes: a conversation spread over both replicas (deploy/fleet_client.py),
# then replica 1 restarted, its audit chain kept and the fleet's checkpoint still agreeing,
# then PostgreSQL cut off the network (a call refused in bounded time, saying why) and back.
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
for _ in $(seq 1 30); do
    inside $r2 boxmaker token --config $config >/dev/null 2>&1 && break
    sleep 1
done
converse
echo "fleet: ok"
