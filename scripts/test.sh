#!/usr/bin/env bash
# The project's whole test run: formatting, lints, docs, the workspace's tests, the wasm build
# checks, then each area's own script (each installs what it needs). Same locally and in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy -q -p contextfold-core -p contextfold-conformance --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc -q -p contextfold-core --no-deps
# The wasm guest crates are cdylibs for wasm32 only (scripts/test-component.sh builds them).
cargo test --workspace --exclude contextfold-component --exclude contextfold-hostile-guest
bash scripts/check-wasm-imports.sh
# Area scripts join this list once they pass from a fresh clone in CI's time budget.
for area in ; do
  if [ -f "scripts/test-$area.sh" ]; then
    echo "== scripts/test-$area.sh"
    bash "scripts/test-$area.sh"
  fi
done
