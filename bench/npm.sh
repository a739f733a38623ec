#!/usr/bin/env bash
# Benchmark of the npm package `contextfold` in Node (issue #7, npm part): builds pkg/ as it
# ships (scripts/build-pkg.sh: profile wasm-release, then wasm-opt) and the native example
# `native_bench` (tests/examples/, the conformance crate), then runs pkg-tests/bench/run.mjs on a generated session of EVENTS events
# (default 10000) and prints the Node/native and Node/plain-JS ratios and the size of the
# shipped wasm (raw and gzip -9, issue 21), each also as a RESULT|metric|measured|goal|pass-or-FAIL
# line for bench/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=bench/result-lines.sh
source bench/result-lines.sh

EVENTS=${EVENTS:-10000}

(cd pkg-tests && npm ci --no-audit --no-fund >/dev/null)
WASM_OPT='' bash scripts/build-pkg.sh >/dev/null
cargo build --release -p contextfold-conformance --example native_bench
target_dir=$(cd "${CARGO_TARGET_DIR:-target}" && pwd)
cd pkg-tests
out=$(mktemp)
trap 'rm -f "$out"' EXIT
node bench/run.mjs --events "$EVENTS" --native "$target_dir/release/examples/native_bench" >"$out"
cat "$out"
to_result_lines <"$out"
