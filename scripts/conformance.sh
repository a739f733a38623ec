#!/usr/bin/env bash
# Replays the golden vectors of tests/vectors/ (digests, safe-prefix selection, replay
# decisions, materialized messages, summary validation, whole compaction transcripts with
# scripted provider answers) on every runtime and prints one line per runtime:
#
#   native: N/N vectors passed
#   component (wasmtime): N/N vectors passed
#   node (pkg): M/M vectors passed (K skipped: ...)     (only when pkg/ is built)
#
# Each runner compares its own JSON with the vectors' expected JSON; any difference, or
# runtimes that did not replay the same number of vectors, fails the script.
# Node runs when pkg/ is built (scripts/build-pkg.sh); CONFORMANCE_BUILD_PKG=1 builds it first.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# Runs a runner, keeps its output, prints the line matching $1; on failure shows the output.
replay() {
  local pattern=$1 name=$2
  shift 2
  if ! "$@" >"$log/$name" 2>&1; then
    grep -E "$pattern" "$log/$name" || true
    echo "FAIL: the $name runner failed:" >&2
    tail -n 40 "$log/$name" >&2
    exit 1
  fi
  local line
  line=$(grep -E "$pattern" "$log/$name" | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL: the $name runner printed no summary line" >&2
    tail -n 40 "$log/$name" >&2
    exit 1
  fi
  echo "$line"
}

# "X/Y vectors passed" -> Y
total_of() { sed -E 's#.*: [0-9]+/([0-9]+) vectors passed.*#\1#'; }

bash scripts/test-component.sh --build-only >"$log/build" 2>&1 || {
  tail -n 40 "$log/build" >&2
  echo "FAIL: building the component" >&2
  exit 1
}

native=$(replay '^native: ' native \
  cargo test -q -p contextfold-conformance --test behaviour native_core_replays_every_vector \
  -- --nocapture)
echo "$native"
component=$(replay '^component \(wasmtime\): ' component \
  env CONTEXTFOLD_COMPONENTS_DIR="$PWD/target/components" \
  cargo test -q -p contextfold-host --test component_conformance -- --ignored --nocapture)
echo "$component"

n_native=$(echo "$native" | total_of)
n_component=$(echo "$component" | total_of)
if [ "$n_native" != "$n_component" ]; then
  echo "FAIL: native replayed $n_native vectors, the component $n_component" >&2
  exit 1
fi

if [ "${CONFORMANCE_BUILD_PKG:-0}" = 1 ]; then
  bash scripts/build-pkg.sh >"$log/pkg" 2>&1 || {
    tail -n 40 "$log/pkg" >&2
    echo "FAIL: building pkg/" >&2
    exit 1
  }
fi
if [ -f pkg/dist/node/contextfold_wasm.js ]; then
  node_line=$(replay '^node \(pkg\): ' node node pkg-tests/conformance.mjs)
  echo "$node_line"
  n_node=$(echo "$node_line" | total_of)
  n_skipped=$(echo "$node_line" | sed -nE 's#.*\(([0-9]+) skipped.*#\1#p')
  if [ $((n_node + ${n_skipped:-0})) != "$n_native" ]; then
    echo "FAIL: node saw $((n_node + ${n_skipped:-0})) vectors, native $n_native" >&2
    exit 1
  fi
else
  echo "node (pkg): not run (pkg/ is not built: bash scripts/build-pkg.sh, or CONFORMANCE_BUILD_PKG=1)"
fi
echo "conformance: every runtime that ran agrees with the $n_native golden vectors"
