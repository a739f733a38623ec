#!/usr/bin/env bash
# The project's whole test run: formatting, lints, docs, the workspace's tests, the wasm build
# checks, then each area's own script (each installs what it needs) and a short reliability
# pass. Same locally and in CI; prints the seconds of every phase.
#
# Built once each: the workspace's debug test build (one test binary per area, e.g.
# host/tests/cli/; wasmtime only in host/tests/component/), reused by every later script
# through the same package selection; the components (scripts/test-component.sh); the npm
# package (scripts/test-npm.sh; scripts/conformance.sh requires it instead of rebuilding it).
# The long suites are named scripts, not run here: the full `scripts/reliability.sh`
# (10,000 cases per invariant, 200 kills, cargo-fuzz), `scripts/mutants.sh`,
# `scripts/long-turns.sh`, `bench/*.sh`; their last results are in docs/reliability.md and
# docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# PostgreSQL: the whole run shares one throwaway cluster (scripts/with-postgres.sh), so the
# PostgreSQL half of every ledger test (Rust and npm) runs beside the SQLite half. Without the
# server's binaries those halves are skipped and say so; CONTEXTFOLD_REQUIRE_PG=1 (CI) makes
# that an error instead.
if [ -z "${CONTEXTFOLD_PG_URL:-}" ]; then
  if [ -n "${PG_BIN:-}" ] || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    exec bash scripts/with-postgres.sh bash "$PWD/scripts/test.sh" "$@"
  elif [ -n "${CONTEXTFOLD_REQUIRE_PG:-}" ]; then
    echo "scripts/test.sh: no PostgreSQL server binaries (apt-get install postgresql)" >&2
    exit 2
  fi
  echo "== PostgreSQL: no server binaries (apt-get install postgresql): its tests are skipped"
fi
start=$SECONDS
# Tests write real SQLite files and fsync every durable append; on a RAM filesystem those waits
# vanish (the long-turn tests spent about a third of their time in them on the CI disk) while
# every file stays a real SQLite database. Durability itself is proved by the power-loss and
# crash suites (scripts/reliability.sh), which do not depend on the disk. CONTEXTFOLD_TEST_TMPDIR
# overrides the choice.
if [ -n "${CONTEXTFOLD_TEST_TMPDIR:-}" ]; then
  export TMPDIR=$CONTEXTFOLD_TEST_TMPDIR
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then
  ram=$(mktemp -d /dev/shm/contextfold-test.XXXXXX)
  trap 'rm -rf "$ram"' EXIT
  # Tools (npm, build scripts) may run programs from TMPDIR: only an executable mount will do.
  printf '#!/bin/sh\n' >"$ram/probe" && chmod +x "$ram/probe"
  if "$ram/probe" 2>/dev/null; then export TMPDIR=$ram; fi
fi
# The wasm guest crates are cdylibs for wasm32 only: scripts/test-component.sh builds (and so
# lints) and tests them.
native=(--workspace --exclude contextfold-component --exclude contextfold-hostile-guest)

# phase NAME COMMAND...: runs one phase and prints its duration.
phase() {
  local name=$1 phase_start=$SECONDS status=0
  shift
  echo "== ${name}"
  "$@" || status=$?
  echo "== ${name}: $((SECONDS - phase_start)) s"
  return "$status"
}

phase fmt cargo fmt --all -- --check
# Lints run inside the builds: clippy-driver is the workspace's compiler (scripts/clippy-rustc.sh,
# warnings are errors) for this test build and for every later script, which inherit it and so
# reuse these builds. The guests and the npm binding are linted where scripts/test-component.sh
# and scripts/build-pkg.sh build them for wasm32.
CLIPPY_DRIVER=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)
export CLIPPY_DRIVER RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/clippy-rustc.sh"
# build_tests: every target, and the `test = false` suites scripts/reliability.sh runs (Cargo
# drops `--test NAME` when `--all-targets` is given, so they are a second, cheap command).
# (`&&`: `phase` calls it in a `||` list, where `set -e` does not stop a function.)
build_tests() {
  cargo test -q --no-run "${native[@]}" --all-targets &&
    cargo test -q --no-run "${native[@]}" --test reliability --test invariants
}
phase build-and-lint build_tests
# rustdoc's own lints (links, HTML) on the crates with public docs: the published
# `contextfold-core`, the conformance crate and the binding. The host (`publish = false`) would
# need every heavy dependency (wasmtime, tokio, reqwest) checked once more for its docs alone;
# `cargo doc --workspace` checks it locally.
docs=(-p contextfold-core -p contextfold-conformance -p contextfold-wasm)
phase rustdoc env RUSTDOCFLAGS="-D warnings" cargo doc -q "${docs[@]}" --no-deps
# The test binaries two at a time (scripts/run_test_binaries.py; `cargo test` runs them one
# after another and left a core idle: 65 s against 88 s), then the doc tests.
cargo_tests() {
  cargo test -q --no-run "${native[@]}" --message-format=json |
    python3 scripts/run_test_binaries.py &&
    cargo test -q "${native[@]}" --doc
}
phase cargo-test cargo_tests
phase wasm-imports bash scripts/check-wasm-imports.sh

# host: demo, verify and --json shapes through the binary; component: the wasmtime component
# and its ignored tests; npm: the package in Node and Chromium; conformance: the golden vectors
# on every runtime (native, wasmtime, jco in Node, the npm package in Node).
export CONTEXTFOLD_WORKSPACE_TESTED=1  # test-npm.sh: the binding's tests ran just above
export CONFORMANCE_REQUIRE_PKG=1       # the node line must run, on the package test-npm.sh built
for area in host component npm conformance; do
  script="scripts/test-$area.sh"
  [ -f "$script" ] || script="scripts/$area.sh"
  phase "$script" bash "$script"
done
# Every part of the reliability suite with small counts (256 cases per invariant, 25 kills,
# no cargo-fuzz) on the debug build; the full run is `bash scripts/reliability.sh`, recorded
# in docs/reliability.md.
phase "scripts/reliability.sh --short" bash scripts/reliability.sh --short
echo "== all tests passed in $((SECONDS - start)) s"
