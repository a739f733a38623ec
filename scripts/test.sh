#!/usr/bin/env bash
# The project's whole test run: formatting, lints, unit/property/integration tests, docs, and
# the wasm build checks. Runs the same on a laptop and in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy -q --workspace --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc -q --workspace --no-deps
cargo test --workspace
bash scripts/check-wasm-imports.sh
