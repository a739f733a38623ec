#!/usr/bin/env bash
# The workspace's compiler in scripts/test.sh: clippy-driver (rustc with clippy's lints, the
# program `cargo clippy` runs) with every warning an error. Set as RUSTC_WORKSPACE_WRAPPER it
# lints each workspace crate while the test build, the component build and the npm build
# compile it, so CI compiles every dependency once per profile and target instead of once more
# in check mode for a separate `cargo clippy`. Cargo calls it as `clippy-rustc.sh rustc ARGS…`.
set -euo pipefail
exec "${CLIPPY_DRIVER:?scripts/test.sh sets CLIPPY_DRIVER}" "$@" -D warnings
