#!/usr/bin/env bash
# Builds the npm package `contextfold` in pkg/ from source:
#   contextfold-wasm (release, wasm32-unknown-unknown) → wasm-bindgen (Node ESM + web)
#   → optional wasm-opt from the npm `binaryen` package (set WASM_OPT=path/to/wasm-opt).
# Needs: rustup target wasm32-unknown-unknown and wasm-bindgen-cli at the exact version of the
# `wasm-bindgen` crate in Cargo.lock (scripts/test-npm.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."

lock_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
cli_version=$(wasm-bindgen --version | awk '{ print $2 }')
if [ "$lock_version" != "$cli_version" ]; then
  echo "wasm-bindgen-cli $cli_version does not match the wasm-bindgen crate $lock_version" >&2
  exit 1
fi

cargo build -p contextfold-wasm --target wasm32-unknown-unknown --release
target_dir=${CARGO_TARGET_DIR:-target}
wasm="$target_dir/wasm32-unknown-unknown/release/contextfold_wasm.wasm"

rm -rf pkg/dist
wasm-bindgen --target experimental-nodejs-module --out-dir pkg/dist/node --out-name contextfold_wasm "$wasm"
wasm-bindgen --target web --out-dir pkg/dist/web --out-name contextfold_wasm "$wasm"

if [ -n "${WASM_OPT:-}" ]; then
  for out in pkg/dist/node/contextfold_wasm_bg.wasm pkg/dist/web/contextfold_wasm_bg.wasm; do
    "$WASM_OPT" -O "$out" -o "$out.opt" --enable-bulk-memory --enable-nontrapping-float-to-int \
      --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
      --enable-simd
    mv "$out.opt" "$out"
  done
fi
# wasm-bindgen writes its own package.json/.gitignore stubs; the package has one of its own.
rm -f pkg/dist/*/package.json pkg/dist/*/.gitignore
ls -l pkg/dist/node pkg/dist/web
