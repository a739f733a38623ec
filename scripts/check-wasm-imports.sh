#!/usr/bin/env bash
# Proves the pure core compiles for both wasm targets and that its wasm32-unknown-unknown
# build imports nothing from its host (no clock, no randomness, no I/O).
set -euo pipefail
cd "$(dirname "$0")/.."
# wasm32-wasip2 is checked (the same code for the same architecture; the full code generation
# and link are the wasm32-unknown-unknown build below, whose module is inspected).
cargo check -q -p contextfold-core --target wasm32-wasip2
cargo build -q -p contextfold-core --release --target wasm32-unknown-unknown --example wasm_probe
module="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/examples/wasm_probe.wasm"
found=$(python3 scripts/wasm_imports.py "$module")
if [ -n "$found" ]; then
  echo "FAIL: the core's wasm build imports from its host:"
  echo "$found"
  exit 1
fi
echo "wasm check: core compiles for wasm32-wasip2 and builds for wasm32-unknown-unknown; $module imports nothing"
