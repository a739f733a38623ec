#!/usr/bin/env bash
# Replays the golden vectors of tests/vectors/ (digests, safe-prefix selection, replay
# decisions, materialized messages, summary validation, whole compaction transcripts with
# scripted provider answers) on every runtime and prints one line per runtime:
#
#   native: N/N vectors passed
#   component (wasmtime): N/N vectors passed
#   component (jco, node): N/N vectors passed           (jco 1.35.0 via npx)
#   node (pkg): M/M vectors passed (K skipped: ...)     (only when pkg/ is built)
#
# Each runner compares its own JSON with the vectors' expected JSON; any difference, or
# runtimes that did not replay the same number of vectors, fails the script.
# Node runs when pkg/ is built (scripts/build-pkg.sh); CONFORMANCE_BUILD_PKG=1 builds it first;
# CONFORMANCE_REQUIRE_PKG=1 fails when it is not built (scripts/test.sh: scripts/test-npm.sh
# has just built it, so it is not built twice and the node line is never skipped).
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

# The same package selection as scripts/test.sh: its debug test build is reused as it is.
cargo_test=(cargo test -q --workspace --exclude contextfold-component --exclude contextfold-hostile-guest)
native=$(replay '^native: ' native \
  "${cargo_test[@]}" --test behaviour -- native_core_replays_every_vector --nocapture)
echo "$native"
component=$(replay '^component \(wasmtime\): ' component \
  env CONTEXTFOLD_COMPONENTS_DIR="$PWD/target/components" \
  "${cargo_test[@]}" --test component -- --ignored component_conformance:: --nocapture)
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
if [ "${CONFORMANCE_REQUIRE_PKG:-0}" = 1 ] && [ ! -f pkg/dist/node/contextfold_wasm.js ]; then
  echo "FAIL: CONFORMANCE_REQUIRE_PKG=1 but pkg/ is not built (bash scripts/build-pkg.sh)" >&2
  exit 1
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
# The same component in Node, transpiled by jco, driven as a JavaScript host drives it (the
# `compaction-steps` resource); the scripted extractive answers come from pkg/, so it runs when
# pkg/ is built. CONFORMANCE_SKIP_JCO=1 skips it (e.g. without npm registry access).
JCO_VERSION=1.35.0
if [ "${CONFORMANCE_SKIP_JCO:-0}" != 1 ] && [ -f pkg/dist/node/contextfold_wasm.js ]; then
  rm -rf target/components/jco
  npx --yes "@bytecodealliance/jco@${JCO_VERSION}" transpile target/components/contextfold_compactor.wasm \
    -o target/components/jco --name compactor --no-typescript \
    --map 'contextfold:compaction/ledger=./host-imports.js' \
    --map 'contextfold:compaction/provider=./host-imports.js' >"$log/jco" 2>&1 || {
    tail -n 20 "$log/jco" >&2
    echo "FAIL: jco transpile" >&2
    exit 1
  }
  # The step API never calls the blocking imports; they exist only to instantiate.
  cat >target/components/jco/host-imports.js <<'JS'
const never = (name) => () => { throw new Error(`the step API never calls ${name}`); };
export const loadEvents = never('ledger.load-events');
export const loadLatestCheckpoint = never('ledger.load-latest-checkpoint');
export const scanCheckpointEvents = never('ledger.scan-checkpoint-events');
export const appendCheckpoint = never('ledger.append-checkpoint');
export const summarize = never('provider.summarize');
export const compactNatively = never('provider.compact-natively');
JS
  echo '{"type": "module"}' >target/components/jco/package.json
  jco_line=$(replay '^component \(jco, node\): ' jco \
    node pkg-tests/conformance.mjs --component target/components/jco/compactor.js)
  echo "$jco_line"
  if [ "$(echo "$jco_line" | total_of)" != "$n_native" ]; then
    echo "FAIL: the component in Node replayed a different number of vectors" >&2
    exit 1
  fi
else
  echo "component (jco, node): not run (needs pkg/ built for the scripted extractive answers; CONFORMANCE_SKIP_JCO=${CONFORMANCE_SKIP_JCO:-0})"
fi

echo "conformance: every runtime that ran agrees with the $n_native golden vectors"
