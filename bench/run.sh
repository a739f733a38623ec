#!/usr/bin/env bash
# Builds the release benches, runs them on this machine and prints one table:
# metric, measured, goal, pass/fail. Ratios are measured within one run (absolute times drift
# on a shared machine). Method and a recorded run: docs/performance.md.
#
#   bash bench/run.sh            # everything (about 5-8 minutes on 2 cores, builds excluded)
#   QUICK=1 bash bench/run.sh    # a 256 MB ledger instead of 1 GB, shorter criterion runs,
#                                # a shorter long turn in provider_budget
#
# Contract for the other bench scripts: bench/component.sh and bench/npm.sh, when present, are
# run after the native benches; every stdout line `RESULT|metric|measured|goal|pass` (or
# `|FAIL`) joins the table. Their exit status is reported but does not stop the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Absolute: criterion runs each bench in its package's directory.
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$target_dir"
target_dir=$(cd "$target_dir" && pwd)
export CRITERION_HOME="$target_dir/criterion-contextfold"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
measure=5
ledger_mb=1024
if [ -n "${QUICK:-}" ]; then
  measure=2
  ledger_mb=256
fi

# Shows a bench's output and appends its RESULT lines to the table. (Not `tee /dev/stderr`:
# when stderr is a file, tee reopens it and truncates it.)
keep_results() {
  local out status=0
  out=$(mktemp)
  cat >"$out"
  cat "$out"
  grep '^RESULT|' "$out" >>"$results" || status=$?  # no RESULT line: the bench is broken
  rm -f "$out"
  return "$status"
}

echo "== building release benches"
cargo bench -q -p contextfold-core --bench projection --no-run
cargo bench -q -p contextfold-host --bench cold_pipeline --bench cold_paired --bench storage \
  --bench ledger_memory --bench provider_budget --bench cli_paths --no-run

echo "== core: cold projection and steady state (criterion)"
rm -rf "$CRITERION_HOME"
cargo bench -q -p contextfold-core --bench projection -- \
  --warm-up-time 1 --measurement-time "$measure" --noplot 2>&1 | grep -E '^[a-z_0-9]+/|time:|thrpt:' || true
echo "== host: cold digest and projection with the two-thread SHA-256 engine (criterion)"
cargo bench -q -p contextfold-host --bench cold_pipeline -- \
  --warm-up-time 1 --measurement-time "$measure" --noplot 2>&1 | grep -E '^[a-z_0-9]+/|time:|thrpt:' || true
python3 - "$CRITERION_HOME" >>"$results" <<'PY'
import json, sys, os
home = sys.argv[1]
def mean_ns(group, name):
    with open(os.path.join(home, group, name, "new", "estimates.json")) as f:
        return json.load(f)["mean"]["point_estimate"]
def report(metric, num, den):
    print(f"RESULT|{metric}|{mean_ns(*num) / mean_ns(*den):.2f}x|report|-")
# Ratios of criterion means (variants measured one after the other): reported next to the
# paired rows below, which are the goal rows.
pipe = ("cold_10k_pipelined", "sha256_only")
report("criterion_digest_two_threads_vs_sha256", ("cold_10k_pipelined", "digest_pipelined"), pipe)
report("criterion_project_two_threads_vs_sha256", ("cold_10k_pipelined", "project_pipelined"), pipe)
sha = ("cold_10k", "sha256_only")
report("criterion_digest_one_thread_vs_sha256", ("cold_10k", "digest_prefix"), sha)
report("criterion_project_one_thread_vs_sha256", ("cold_10k", "project_with_checkpoint"), sha)
value = mean_ns("steady_state", "project_cached_100000") / mean_ns("steady_state", "project_cached_1000")
print(f"RESULT|steady_100k_vs_1k_events|{value:.2f}x|<= 2.0x|{'pass' if value <= 2.0 else 'FAIL'}")
for name in ("sha256_only", "digest_prefix", "project_with_checkpoint"):
    print(f"RESULT|cold_10k_{name}_ms|{mean_ns('cold_10k', name) / 1e6:.1f}|report|-")
PY
echo "== host: cold path against SHA-256, paired rounds (the goal rows)"
cargo bench -q -p contextfold-host --bench cold_paired | keep_results

echo "== host: SQLite import and checkpoint append"
cargo bench -q -p contextfold-host --bench storage | keep_results

echo "== host: streamed projection of a ${ledger_mb} MB ledger"
CONTEXTFOLD_LEDGER_MB=$ledger_mb cargo bench -q -p contextfold-host --bench ledger_memory | keep_results

echo "== host: provider budgets and caching against the simulator (issue 19)"
# Counts, not times: the figures are the same on any machine. QUICK=1 plays a 60-step long
# turn instead of 150.
cargo bench -q -p contextfold-host --bench provider_budget | keep_results

echo "== host: the CLI and the session runtime on a 90,000-event ledger and a 1 GB one, whole processes (issue 20)"
# QUICK=1: a 30,000-event ledger, and 256 MB instead of 1 GB for the peak-RSS rows.
if [ -n "${QUICK:-}" ]; then
  CONTEXTFOLD_CLI_EVENTS=30000 CONTEXTFOLD_CLI_LARGE_MB=256 cargo bench -q -p contextfold-host --bench cli_paths | keep_results
else
  cargo bench -q -p contextfold-host --bench cli_paths | keep_results
fi

for other in component npm; do
  script="bench/$other.sh"
  if [ -f "$script" ]; then
    echo "== $script"
    status=0
    bash "$script" >"$results.$other" || status=$?
    cat "$results.$other"
    grep '^RESULT|' "$results.$other" >>"$results" || true
    rm -f "$results.$other"
    [ "$status" -eq 0 ] || echo "RESULT|$other.sh exit status|$status|0|FAIL" >>"$results"
  else
    echo "RESULT|$other ratios|not run ($script absent)|-|-" >>"$results"
  fi
done

echo
echo "== results ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
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
