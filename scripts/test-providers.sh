#!/usr/bin/env bash
# Provider clients: unit tests of contextfold-host's providers module and the integration tests
# over real HTTP against the loopback provider servers (host/tests/providers*.rs).
# Needs only Rust 1.95 (rustup); every crate version is pinned in Cargo.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -p contextfold-host --lib providers::
cargo test -p contextfold-host \
  --test providers_classes --test providers_codex --test providers_summarizers \
  --test providers_redaction --test providers_e2e
