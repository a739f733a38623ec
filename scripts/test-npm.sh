#!/usr/bin/env bash
# Builds the npm package `contextfold` from source and tests it in real runtimes: Node 20
# (node:test, the real `ai` package, a loopback OpenAI-compatible server), Node 24 with the
# current AI SDK (pkg-tests/node24: ai@7, @ai-sdk/openai@4, @ai-sdk/anthropic@4 against loopback
# servers speaking their wire protocols; it also runs examples/ai-sdk-agent), the node:sqlite
# store on Node 24 (checked by the native `contextfold verify`) and headless Chromium.
# Installs what it needs, idempotently: the wasm32 target, wasm-bindgen-cli (pinned to the
# crate's exact version), Debian's chromium, and the test project's npm packages (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."

# step NAME: prints NAME, and the seconds the step before it took.
step_name='' step_start=$SECONDS
step() {
  [ -z "$step_name" ] || echo "== ${step_name}: $((SECONDS - step_start)) s"
  step_name=$1 step_start=$SECONDS
  [ -z "$step_name" ] || echo "== ${step_name}"
}

WASM_BINDGEN_VERSION=0.2.130

rustup target add wasm32-unknown-unknown
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }')" != "$WASM_BINDGEN_VERSION" ]; then
  # Without --locked: the CLI's lock file pins a crate missing from the registry mirror.
  env -u RUSTC_WORKSPACE_WRAPPER cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi
if ! command -v chromium >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi

# scripts/test.sh sets CONTEXTFOLD_WORKSPACE_TESTED=1: its workspace `cargo test` has run these.
if [ "${CONTEXTFOLD_WORKSPACE_TESTED:-0}" != 1 ]; then
  echo "== native: binding unit tests and the native compaction fixture"
  cargo test -p contextfold-wasm
  cargo test -p contextfold-conformance --test native_compaction
fi

step "npm ci (pkg-tests)"
(cd pkg-tests && npm ci --no-audit --no-fund)

step "build pkg/"
# The package as it ships: wasm-opt -O1 (npm binaryen, from the npm ci above) runs by default,
# about 20 s on 2 cores; never WASM_OPT=none here, the tests must see the shipped module.
WASM_OPT='' bash scripts/build-pkg.sh

step "TypeScript: pkg/index.d.ts as a user compiles against it"
(cd pkg-tests && npx tsc -p types && npx tsc -p types/tsconfig.ai.json)

step "seeded long-turn sessions for test/long-turns*.test.js"
export LONG_TURN_DIR="$PWD/target/long-turns"
mkdir -p "$LONG_TURN_DIR"
# Both native binaries come from the workspace's debug test build (built once, by
# scripts/test.sh; scripts/workspace-bin.sh builds it when run alone).
"$(bash scripts/workspace-bin.sh gen-long-turn)" \
  --seed 1 --steps 60 --prior-turns 2 --out "$LONG_TURN_DIR/generated-1.jsonl"

step "native contextfold binary (debug), for the sqlite store's verify tests"
CONTEXTFOLD_BIN="$(bash scripts/workspace-bin.sh contextfold)"
export CONTEXTFOLD_BIN

# Four test files at a time on two cores: the long ones (long turns, trajectories) are
# single-threaded wasm, and several files mostly wait on real timers (background preparation)
# or child processes; Node's default on two cores is one file at a time. Measured on the idle
# CI machine: 47.6 s at four against 53.4 s at two (docs/performance.md, "CI time").
step "node --test (the built package, imported as a user would)"
(cd pkg-tests && node --test --test-concurrency=4 test/)

NODE24_BIN="$(bash scripts/node24.sh)"
# The Node 24 suites and Chromium run side by side (each mostly waits on loopback servers,
# timers and child processes); each one's output is printed whole when all have ended.
logs=$(mktemp -d)
side_by_side() {
  local name=$1 status=0
  shift
  echo "== started: $name"
  ( "$@" ) >"$logs/$name.log" 2>&1 || status=$?
  echo "$status" >"$logs/$name.status"
}
node24_stores() {
  cd pkg-tests
  PATH="$NODE24_BIN:$PATH" node --test test/stores-sqlite.test.js test/stores-postgres.test.js
}
node24_ai_sdk() {
  export PATH="$NODE24_BIN:$PATH"
  (cd examples/ai-sdk-agent && npm ci --no-audit --no-fund)
  cd pkg-tests/node24
  npm ci --no-audit --no-fund
  npx tsc -p types
  # Node 24 runs one file at a time on two cores by default; these mostly wait.
  node --test --test-concurrency=4 test/*.test.js
}
chromium_web() {
  cd pkg-tests
  node --test browser/
}
step "Node 24 (the node:sqlite store, the PostgreSQL store's rows against it; ai@7, pkg-tests/node24, examples/ai-sdk-agent) and headless Chromium (the web build), side by side"
side_by_side node24-stores node24_stores &
side_by_side node24-ai-sdk node24_ai_sdk &
side_by_side chromium chromium_web &
wait
failed=0
for name in node24-stores node24-ai-sdk chromium; do
  echo "== $name (exit $(cat "$logs/$name.status"))"
  cat "$logs/$name.log"
  [ "$(cat "$logs/$name.status")" = 0 ] || failed=1
done
rm -rf "$logs"
step ""
exit "$failed"
