#!/usr/bin/env bash
# Tests of the native host (crate contextfold-host): storage, session runtime and CLI on real
# SQLite files, then the offline demo. Needs only Rust 1.95 (SQLite is bundled by rusqlite).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test -p contextfold-host 2>&1 | tee /tmp/contextfold-test-host.log | grep -E "^(test result|running|error)|FAILED|panicked" || true
if grep -qE "^test result: FAILED|^error" /tmp/contextfold-test-host.log; then
    echo "test-host: cargo test failed" >&2
    exit 1
fi
if ! grep -q "^test result: ok" /tmp/contextfold-test-host.log; then
    echo "test-host: no test results" >&2
    exit 1
fi

demo_db="$(mktemp -d)/demo.sqlite"
cargo run -q -p contextfold-host --bin contextfold -- demo --db "$demo_db"
echo "test-host: demo exited 0"
