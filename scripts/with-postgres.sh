#!/usr/bin/env bash
# Runs CMD... against a throwaway PostgreSQL cluster, then removes it.
#
#   bash scripts/with-postgres.sh cargo test -p contextfold-host --test runtime ledger::
#
# The cluster lives in a temp dir owned by the `postgres` user (the server refuses to run as
# root), listens on a free port of 127.0.0.1 only (and its socket in the data dir), trusts
# local logins (fsync off: it is thrown away; no test here is about power loss), and is
# stopped and deleted when CMD ends, however it ends. CMD sees
# CONTEXTFOLD_PG_URL (postgres://postgres@127.0.0.1:PORT/postgres) and CONTEXTFOLD_PG_CA (the
# CA of the server's TLS certificate, for sslmode=require) and runs as the caller.
# Needs the distribution's server (`apt-get install -y postgresql`; Debian's binaries are in
# /usr/lib/postgresql/<version>/bin, or set PG_BIN).
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 CMD [ARGS...]" >&2
    exit 2
fi

PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    echo "with-postgres: no PostgreSQL server binaries (apt-get install -y postgresql, or set PG_BIN)" >&2
    exit 2
fi

as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# A free loopback port: bind port 0 on 127.0.0.1 and take what the kernel gave.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

dir=$(mktemp -d /tmp/contextfold-pg.XXXXXX)
chmod o+x "$dir"
data="$dir/data"
log="$dir/server.log"
if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
fi

cleanup() {
    status=$?
    as_postgres "$PG_BIN/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    exit "$status"
}
trap cleanup EXIT INT TERM

# TLS: a throwaway CA and a server certificate for 127.0.0.1 signed by it, so tests connect
# with sslmode=require and the CA as the root (CONTEXTFOLD_PG_CA); plain connections still work.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=contextfold test CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$dir/server.key" \
    -out "$dir/server.csr" >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/san.ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -extfile "$dir/san.ext" -out "$dir/server.crt" >/dev/null 2>&1
chmod 600 "$dir/server.key"
chmod 644 "$dir/ca.crt" "$dir/server.crt"
if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir/server.key" "$dir/server.crt"
fi

as_postgres "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-instructions >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
as_postgres "$PG_BIN/pg_ctl" -D "$data" -l "$log" -w \
    -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 \
        -c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key" start >/dev/null \
    || { cat "$log" >&2; exit 1; }

export CONTEXTFOLD_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
export CONTEXTFOLD_PG_CA="$dir/ca.crt"
echo "with-postgres: a throwaway cluster on 127.0.0.1:$port ($("$PG_BIN/postgres" --version))" >&2
"$@"
