#!/usr/bin/env bash
# Run a command against a throw-away PostgreSQL 15 server on 127.0.0.1.
#
#   scripts/with_postgres.sh COMMAND [ARGS...]
#
# Inits a cluster in a temporary folder (as the `postgres` user when run as root, since PostgreSQL
# refuses to run as root), starts it on a free port, creates database `resonance_test`, runs COMMAND
# with RESONANCE_TEST_DB_URL=postgresql+psycopg://postgres@127.0.0.1:PORT/resonance_test exported,
# stops the server and removes the folder. Exits with COMMAND's status.
# Where Debian's PostgreSQL 15 binaries are absent it prints why and exits 0 without running COMMAND
# (install them with `apt-get install postgresql-15`).
set -euo pipefail

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
if [[ ! -x "$PG_BIN/initdb" || ! -x "$PG_BIN/pg_ctl" ]]; then
    echo "SKIP PostgreSQL tests: $PG_BIN/initdb or pg_ctl not found (apt-get install postgresql-15)"
    exit 0
fi

as_pg() {
    if [[ "$(id -u)" == "0" ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

workdir="$(mktemp -d /tmp/resonance-pg.XXXXXX)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
if [[ "$(id -u)" == "0" ]]; then
    chown postgres: "$workdir"
fi

cleanup() {
    as_pg "$PG_BIN/pg_ctl" -D "$workdir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$workdir"
}
trap cleanup EXIT

as_pg "$PG_BIN/initdb" -D "$workdir/data" -U postgres --auth=trust -E UTF8 >"$workdir/initdb.log" 2>&1 \
    || { cat "$workdir/initdb.log"; exit 1; }
as_pg "$PG_BIN/pg_ctl" -D "$workdir/data" -l "$workdir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $workdir -c fsync=off -c max_connections=200" start >/dev/null \
    || { cat "$workdir/server.log"; exit 1; }
"$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres resonance_test

export RESONANCE_TEST_DB_URL="postgresql+psycopg://postgres@127.0.0.1:$port/resonance_test"
echo "PostgreSQL 15 on 127.0.0.1:$port (RESONANCE_TEST_DB_URL exported)"
set +e
"$@"
status=$?
set -e
exit $status
