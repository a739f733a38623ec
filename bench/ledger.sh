#!/usr/bin/env bash
# The PostgreSQL ledger against SQLite (issue 40), on this machine: builds the release benches,
# starts a throwaway PostgreSQL cluster on a loopback port, runs
#   1. ledger_fleet: 16 writers appending to 64 sessions, in rotating rounds: SQLite (WAL,
#      synchronous=FULL), PostgreSQL with fsync on and synchronous_commit on (like for like:
#      every acknowledged append is on disk on both), PostgreSQL with fsync off (as
#      scripts/with-postgres.sh runs the tests);
#   2. ledger_cold: cold `contextfold project` of the ~9k- and ~90k-event ledgers, SQLite against
#      PostgreSQL in paired rounds of whole processes, with peak RSS (the server keeps fsync off
#      here: the rows are only read);
# removes the cluster and prints one table: metric, measured, goal, pass/fail. Method and a
# recorded run: docs/performance.md, "The ledger on PostgreSQL (issue 40)".
#
#   bash bench/ledger.sh             # about 3-4 minutes on 2 cores, builds excluded
#   QUICK=1 bash bench/ledger.sh     # 2 fleet rounds of 3 s, 3 cold rounds, ~3k and ~30k events
#
# Needs the distribution's PostgreSQL server (apt-get install -y postgresql; or set PG_BIN).
# Like bench/component.sh, its RESULT lines can join bench/run.sh's table.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    echo "bench/ledger.sh: no PostgreSQL server binaries (apt-get install -y postgresql, or set PG_BIN)" >&2
    exit 2
fi
fleet_secs=${CONTEXTFOLD_FLEET_SECS:-5}
fleet_rounds=${CONTEXTFOLD_FLEET_ROUNDS:-3}
cold_runs=${CONTEXTFOLD_PG_COLD_RUNS:-7}
cold_events=${CONTEXTFOLD_PG_COLD_EVENTS:-9000,90000}
if [ -n "${QUICK:-}" ]; then
    fleet_secs=3
    fleet_rounds=2
    cold_runs=3
    cold_events=3000,30000
fi

echo "== building release benches"
cargo bench -q -p contextfold-host --bench ledger_fleet --bench ledger_cold --no-run

# The cluster, as scripts/with-postgres.sh starts it (a temp dir owned by `postgres` when run
# as root, a free loopback port, trust logins), but with fsync on: the server's defaults (fsync
# and synchronous_commit on), not set on the command line, which would outrank ALTER SYSTEM.
as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
dir=$(mktemp -d /tmp/contextfold-pg-bench.XXXXXX)
chmod o+x "$dir"
data="$dir/data"
results=$(mktemp)
if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
fi
cleanup() {
    status=$?
    as_postgres "$PG_BIN/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir" "$results"
    exit "$status"
}
trap cleanup EXIT INT TERM
as_postgres "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-instructions >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
as_postgres "$PG_BIN/pg_ctl" -D "$data" -l "$dir/server.log" -w \
    -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
export CONTEXTFOLD_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
psql() { "$PG_BIN/psql" -X -q -d "$CONTEXTFOLD_PG_URL" "$@"; }
echo "== a throwaway cluster on 127.0.0.1:$port ($("$PG_BIN/postgres" --version)), data in $dir"

keep_results() {
    local out
    out=$(mktemp)
    cat >"$out"
    cat "$out"
    grep '^RESULT|' "$out" >>"$results" || { rm -f "$out"; return 1; }
    rm -f "$out"
}

echo "== fleet: 16 writers, 64 sessions; ${fleet_rounds} rounds of ${fleet_secs} s: SQLite (synchronous=FULL), PostgreSQL fsync on, fsync off"
CONTEXTFOLD_FLEET_SECS=$fleet_secs CONTEXTFOLD_FLEET_ROUNDS=$fleet_rounds CONTEXTFOLD_FLEET_PG_FSYNC=on,off \
    cargo bench -q -p contextfold-host --bench ledger_fleet | keep_results

# The cold rounds only read; their fixture is written faster without fsync.
psql -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
echo "== cold project: ${cold_events} events, ${cold_runs} paired rounds of whole processes"
CONTEXTFOLD_PG_COLD_RUNS=$cold_runs CONTEXTFOLD_PG_COLD_EVENTS=$cold_events \
    cargo bench -q -p contextfold-host --bench ledger_cold | keep_results

echo
echo "== results ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg))"
python3 - "$results" <<'PY'
import sys
rows = [line.rstrip("\n").split("|")[1:5] for line in open(sys.argv[1]) if line.startswith("RESULT|")]
header = ["metric", "measured", "goal", "pass/fail"]
widths = [max(len(r[i]) for r in rows + [header]) for i in range(4)]
def show(r):
    print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
show(header)
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows:
    show(r)
PY
