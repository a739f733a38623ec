#!/usr/bin/env bash
# Failover without loss (issue 40 point 4): a primary with one synchronous streaming standby
# (synchronous_commit = on, synchronous_standby_names = '*'), the primary killed with SIGKILL at
# random points while a fleet of worker processes churns the ledger, the standby promoted, the
# killed node rebuilt (pg_basebackup) as the new standby; KILLS times, with a restart of the
# primary in place after every fourth kill. Then the test checks that
# every acknowledged append is present exactly once, seq contiguous, every checkpoint verifies
# (host/tests/ledger/failover.rs). The last result is in docs/reliability.md.
#
#   bash scripts/postgres-failover.sh            # 50 kills
#   KILLS=5 bash scripts/postgres-failover.sh    # a short run
#
# Needs the distribution's server (apt-get install -y postgresql). Throwaway nodes in a temp
# dir, loopback ports only, as the `postgres` user when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS=${KILLS:-50}
# The break check: FAILOVER_SYNCHRONOUS_COMMIT=local acknowledges a commit before the standby
# has it, which must show as lost acknowledged appends.
SYNCHRONOUS_COMMIT=${FAILOVER_SYNCHRONOUS_COMMIT:-on}
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[ -x "$PG_BIN/initdb" ] || { echo "postgres-failover: no server binaries (apt-get install -y postgresql)" >&2; exit 2; }

as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

dir=$(mktemp -d /tmp/contextfold-failover.XXXXXX)
chmod o+rx "$dir"
[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
work="$dir/work"
mkdir -p "$work" && chmod 777 "$work"
test_pid=
cleanup() {
  status=$?
  [ -n "$test_pid" ] && kill -- "-$test_pid" 2>/dev/null || true
  for node in a b; do
    as_postgres "$PG_BIN/pg_ctl" -D "$dir/$node" -m immediate stop >/dev/null 2>&1 || true
  done
  [ "$status" -ne 0 ] && for node in a b; do tail -n 5 "$dir/$node.log" 2>/dev/null; done >&2
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT INT TERM

declare -A port=([a]=$(free_port) [b]=$(free_port))
settings() { # the settings of node $1
  echo "-p ${port[$1]} -k $dir -c listen_addresses=127.0.0.1 -c max_connections=100 \
-c wal_level=replica -c max_wal_senders=4 -c synchronous_commit=$SYNCHRONOUS_COMMIT \
-c synchronous_standby_names=* -c wal_keep_size=256MB"
}
start() { as_postgres "$PG_BIN/pg_ctl" -D "$dir/$1" -l "$dir/$1.log" -w -o "$(settings "$1")" start >/dev/null; }
standby_of() { # rebuilds node $1 as the synchronous standby of node $2, and starts it
  rm -rf "${dir:?}/$1"
  as_postgres "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "${port[$2]}" -U postgres -D "$dir/$1" \
    -R -X stream --checkpoint=fast >/dev/null
  start "$1"
}
sync_standbys() { # how many synchronous standbys node $1 has
  as_postgres "$PG_BIN/psql" -h 127.0.0.1 -p "${port[$1]}" -U postgres -tAc \
    "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'" 2>/dev/null || echo 0
}

as_postgres "$PG_BIN/initdb" -D "$dir/a" -U postgres --auth=trust --encoding=UTF8 --no-instructions >"$dir/initdb.log" 2>&1
start a
standby_of b a
primary=a standby=b
until [ "$(sync_standbys a)" = 1 ]; do sleep 0.2; done

# The fleet runs until the script writes `stop` a few seconds after the last kill (the bound
# is only a backstop).
millis=$(( KILLS * 30000 + 60000 ))
url="postgres://postgres@127.0.0.1:${port[a]},127.0.0.1:${port[b]}/postgres?target_session_attrs=read-write"
echo "postgres-failover: primary :${port[a]}, standby :${port[b]}, $KILLS kills" >&2
cargo build -q -p contextfold-host --tests
CONTEXTFOLD_FAILOVER_URL=$url CONTEXTFOLD_FAILOVER_DIR=$work CONTEXTFOLD_FAILOVER_MILLIS=$millis \
  setsid cargo test -q -p contextfold-host --test runtime ledger::failover -- --ignored --nocapture >"$dir/test.log" 2>&1 &
test_pid=$!
sleep 3

kills=0 restarts=0 start_s=$SECONDS
while [ "$kills" -lt "$KILLS" ]; do
  sleep "$(( RANDOM % 3 + 1 )).$(( RANDOM % 10 ))"
  kill -0 "$test_pid" 2>/dev/null || { echo "postgres-failover: the fleet ended early" >&2; break; }
  t0=$SECONDS
  # Every fifth event is a restart of the primary in place (a fast shutdown, then start)
  # instead of a kill: every connection drops, nothing is promoted.
  if [ $(( (kills + restarts) % 5 )) -eq 4 ]; then
    as_postgres "$PG_BIN/pg_ctl" -D "$dir/$primary" -m fast -w -o "$(settings "$primary")" restart >/dev/null
    restarts=$((restarts + 1))
    echo "postgres-failover: restart $restarts of the primary :${port[$primary]} ($((SECONDS - t0)) s)" >&2
    continue
  fi
  pid=$(head -n 1 "$dir/$primary/postmaster.pid")
  kill -KILL "$pid"
  kills=$((kills + 1))
  as_postgres "$PG_BIN/pg_ctl" -D "$dir/$standby" -w promote >/dev/null
  # The old primary's leftovers (shared memory, children) go before its directory is rebuilt.
  while pgrep -f -- "-D $dir/$primary" >/dev/null || pgrep -u postgres -f "postgres -D $dir/$primary" >/dev/null; do sleep 0.1; done
  rm -f "$dir/.s.PGSQL.${port[$primary]}" "$dir/.s.PGSQL.${port[$primary]}.lock"
  standby_of "$primary" "$standby"
  tmp=$primary primary=$standby standby=$tmp
  until [ "$(sync_standbys "$primary")" = 1 ]; do sleep 0.1; done
  echo "postgres-failover: kill $kills: primary now :${port[$primary]}, a synchronous standby again after $((SECONDS - t0)) s ($((SECONDS - start_s)) s in)" >&2
done

sleep 3
touch "$work/stop"
status=0
wait "$test_pid" || status=$?
test_pid=
grep -E "FAILOVER|panicked|test result|assert" "$dir/test.log" || true
if [ "$status" -ne 0 ]; then
  tail -n 40 "$dir/test.log" >&2
  echo "postgres-failover: FAILED after $kills kills" >&2
  exit 1
fi
echo "postgres-failover: $kills primary kills and $restarts restarts, every acknowledged append present exactly once, seq contiguous, every checkpoint verified"
