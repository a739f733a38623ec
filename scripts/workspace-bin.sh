#!/usr/bin/env bash
# Prints the path of the binary target NAME (`contextfold`, `gen-long-turn`, ...) as the
# workspace's debug test build makes it: the build scripts/test.sh runs, with the same package
# selection, so there it compiles nothing and every artifact is built once (a plain
# `cargo build -p ...` resolves other features and would build the binary again). The path is
# read from cargo's JSON messages.
#
#   bin="$(bash scripts/workspace-bin.sh contextfold)"
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1
cargo test -q --workspace --exclude contextfold-component --exclude contextfold-hostile-guest \
    --no-run --message-format=json-render-diagnostics |
  node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const exe = s.split("\n").filter(Boolean).map(l => JSON.parse(l)).find(m =>
        m.reason === "compiler-artifact" && m.target.name === process.argv[1] &&
        m.target.kind.includes("bin") && !m.profile.test);
      if (!exe || !exe.executable) throw new Error("no " + process.argv[1] + " binary in the build output");
      console.log(exe.executable);
    });' "$name"
