#!/usr/bin/env bash
# Component/native time ratio on the golden vectors (goal: at most 2x). Builds the component
# (release wasm, scripts/test-component.sh --build-only), then runs the ignored benchmark
# host/tests/component/component_bench.rs, which replays every vector of tests/vectors/ natively and
# through the component in wasmtime and prints
#   component/native ratio: X.XX (goal <= 2.0)
# and then, for bench/run.sh, RESULT|component_native_ratio|X.XXx|<= 2.0x|pass (or FAIL).
#
# The native side is built like a release build where it matters: contextfold-core at
# opt-level 3 (dependencies get the workspace's dev opt-level 2), so the host's heavy
# dependencies are not rebuilt in release. `bench/component.sh --release` uses the full
# release profile instead (slower to build, same measurement).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=bench/result-lines.sh
source bench/result-lines.sh

bash scripts/test-component.sh --build-only >/dev/null
if [ "${1:-}" = "--release" ]; then
  profile=(--release)
else
  profile=()
  for package in contextfold-core contextfold-conformance contextfold-host; do
    profile+=(--config "profile.dev.package.${package}.opt-level=3")
  done
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! CONTEXTFOLD_COMPONENTS_DIR="$PWD/target/components" cargo test -q "${profile[@]}" \
  -p contextfold-host --test component -- --ignored component_bench:: --nocapture --test-threads=1 >"$out" 2>&1; then
  tail -n 40 "$out" >&2
  echo "FAIL: the component benchmark failed" >&2
  exit 1
fi
grep -E '^(bench|  |component/native)' "$out"
to_result_lines <"$out"
