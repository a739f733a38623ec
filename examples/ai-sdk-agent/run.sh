#!/usr/bin/env bash
# Runs the example with one command: builds pkg/ when it is not built yet (Rust + wasm-bindgen,
# scripts/build-pkg.sh), uses Node 24 from the npm registry when the local Node is older than 22
# (ai@7 needs 22+), installs the example's packages, and runs it. No network beyond the npm
# registry, no API key: the model is in-process.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ ! -f "$root/pkg/dist/node/contextfold_wasm.js" ]; then
  echo "== building pkg/ (first run only)"
  bash "$root/scripts/build-pkg.sh"
fi
major="$(node --version 2>/dev/null | sed 's/^v\([0-9]*\).*/\1/' || echo 0)"
if [ "${major:-0}" -lt 22 ]; then
  PATH="$(bash "$root/scripts/node24.sh"):$PATH"
fi
cd "$here"
if [ ! -d node_modules/ai ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --silent
fi
exec node index.js
