#!/usr/bin/env bash
# Benchmark of the npm package `contextfold` in Node (issue #7, npm part): builds pkg/ (release;
# set WASM_OPT=pkg-tests/node_modules/binaryen/bin/wasm-opt to optimize it too) and the native
# example `native_bench`, then runs pkg-tests/bench/run.mjs on a generated session of EVENTS
# events (default 10000) and prints the Node/native and Node/plain-JS ratios, each also as a
# RESULT|metric|measured|goal|pass-or-FAIL line for bench/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Turns every human line "LABEL: X (goal <= G ..." or "(goal < G" into a RESULT line for
# bench/run.sh (metric = LABEL in snake_case); the human lines stay as they were.
to_result_lines() {
  awk '{
    if (match($0, /^[^:]+: [0-9.]+ \(goal (<=|<) [0-9.]+/)) {
      head = substr($0, 1, RLENGTH)
      split(head, parts, ": ")
      metric = tolower(parts[1]); gsub(/[^a-z0-9]+/, "_", metric)
      split(parts[2], rest, " ")
      value = rest[1]; op = rest[3]; goal = rest[4]
      ok = (op == "<=") ? (value + 0 <= goal + 0) : (value + 0 < goal + 0)
      printf "RESULT|%s|%sx|%s %sx|%s\n", metric, value, op, goal, (ok ? "pass" : "FAIL")
    }
  }'
}

EVENTS=${EVENTS:-10000}

(cd pkg-tests && npm ci --no-audit --no-fund >/dev/null)
bash scripts/build-pkg.sh >/dev/null
cargo build --release -p contextfold-wasm --example native_bench
target_dir=$(cd "${CARGO_TARGET_DIR:-target}" && pwd)
cd pkg-tests
out=$(mktemp)
trap 'rm -f "$out"' EXIT
node bench/run.mjs --events "$EVENTS" --native "$target_dir/release/examples/native_bench" >"$out"
cat "$out"
to_result_lines <"$out"
