#!/usr/bin/env bash
# Proves the pure core builds for both wasm targets and that its wasm32-unknown-unknown
# build imports nothing from its host (no clock, no randomness, no I/O).
set -euo pipefail
cd "$(dirname "$0")/.."
# One command for both targets: Cargo spreads the two builds over the cores.
cargo build -q -p contextfold-core --release --target wasm32-wasip2 \
  --target wasm32-unknown-unknown --lib --example wasm_probe
module="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/examples/wasm_probe.wasm"
found=$(python3 scripts/wasm_imports.py "$module")
if [ -n "$found" ]; then
  echo "FAIL: the core's wasm build imports from its host:"
  echo "$found"
  exit 1
fi
echo "wasm check: core builds for wasm32-wasip2 and wasm32-unknown-unknown; $module imports nothing"
