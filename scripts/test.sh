#!/usr/bin/env bash
# The project's whole test run: formatting, lints, docs, the workspace's tests, the wasm build
# checks, then each area's own script (each installs what it needs). Same locally and in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# The wasm guest crates are cdylibs for wasm32 only: they are linted for that target, and built
# and tested by scripts/test-component.sh.
native=(--workspace --exclude contextfold-component --exclude contextfold-hostile-guest)
guests=(-p contextfold-component -p contextfold-hostile-guest --target wasm32-unknown-unknown)

cargo fmt --all -- --check
cargo clippy -q "${native[@]}" --all-targets -- -D warnings
cargo clippy -q "${guests[@]}" -- -D warnings
cargo clippy -q -p contextfold-wasm --target wasm32-unknown-unknown -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc -q "${native[@]}" --no-deps
cargo test "${native[@]}"
bash scripts/check-wasm-imports.sh
echo "== lints, docs and workspace tests: $((SECONDS - start)) s"

# host: demo, verify and --json shapes through the binary; component: the wasmtime component
# and its ignored tests; npm: the package in Node and Chromium; conformance: the golden vectors
# on every runtime; reliability: invariants, fault matrix, crash loop, fuzzing, secrets.
export CONFORMANCE_BUILD_PKG=1  # the node line must run, never be skipped
# The invariants run 3,000 cases each here (30,000 in all, about 3 minutes); the full
# 10,000-case run is `bash scripts/reliability.sh` alone, recorded in docs/reliability.md.
export CONTEXTFOLD_PROPTEST_CASES="${CONTEXTFOLD_PROPTEST_CASES:-3000}"
for area in host component npm conformance reliability; do
  script="scripts/test-$area.sh"
  [ -f "$script" ] || script="scripts/$area.sh"
  echo "== $script"
  area_start=$SECONDS
  bash "$script"
  echo "== $script: $((SECONDS - area_start)) s"
done
echo "== all tests passed in $((SECONDS - start)) s"
