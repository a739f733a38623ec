#!/usr/bin/env bash
# Mutation check of the reliability suite (issue 18, point 1): applies each deliberate breakage
# of scripts/mutants.py (synchronous=OFF/NORMAL, the strictly-smaller check removed, the key
# scrub skipped, a repaired summary not validated again, a cut between a call and its result,
# the circuit never armed, coverage widened on a failed append, a V3 checkpoint replayed after
# a model switch, the checkpoint compare-and-swap removed, ...) one at a time to a scratch copy
# of the committed HEAD, builds it, runs the suite that guards it, and reports which tests
# caught it. Exits non-zero unless every mutant is caught. The last full result is recorded in
# docs/reliability.md#mutation-check.
#
# Usage: bash scripts/mutants.sh [mutant-name ...]
# Knobs: CONTEXTFOLD_PROPTEST_CASES (200 per property here), MUTANTS_DIR (target/mutants: the
# scratch copy and its build directory, kept between runs so only changed crates rebuild).
# About 10-15 minutes on 2 cores from a warm build directory (a cold one adds a full build);
# kept out of CI for time, run it by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${MUTANTS_DIR:-$PWD/target/mutants}"
scratch="${dir}/src"
mkdir -p "$dir"
# A fresh copy of the committed tree at a fixed path (a fixed path keeps cargo's fingerprints,
# so only the mutated crate and its dependents rebuild).
rm -rf "$scratch"
git clone --quiet --no-hardlinks . "$scratch"
git -C "$scratch" checkout --quiet "$(git rev-parse HEAD)"
export CARGO_TARGET_DIR="${dir}/target"
# Seed a new build directory with the repository's own (dependencies are then not rebuilt).
if [ ! -d "$CARGO_TARGET_DIR" ] && [ -d target/debug ]; then
  mkdir -p "$CARGO_TARGET_DIR"
  cp -a target/debug "$CARGO_TARGET_DIR/"
  [ -d target/release ] && cp -a target/release "$CARGO_TARGET_DIR/"
fi
echo "== mutants on $(git rev-parse --short HEAD) in ${scratch} (build: ${CARGO_TARGET_DIR})"
python3 scripts/mutants.py "$scratch" "$@"
