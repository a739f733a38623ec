#!/usr/bin/env bash
# Builds the npm package `contextfold` in pkg/ from source:
#   contextfold-wasm (profile `wasm-release`: fat LTO, one codegen unit, no debug info;
#   wasm32-unknown-unknown) → wasm-bindgen (Node ESM + web; name and producers sections removed)
#   → wasm-opt -O1 from the npm `binaryen` package (pkg-tests/node_modules, installed here by
#   `npm ci` when missing) → its functions laid out for gzip (scripts/wasm_layout.py, then
#   wasm-opt --reorder-functions-by-name --strip-debug). That module is what ships; the Node and
#   web builds hold the same module, so it is optimized once and copied.
#
#   WASM_OPT=none bash scripts/build-pkg.sh    # skip wasm-opt (a quicker local build, not shipped)
#   WASM_OPT=path/to/wasm-opt ...              # another wasm-opt (never Debian's binaryen 108:
#                                              # its output fails in Node)
#
# Needs: rustup target wasm32-unknown-unknown and wasm-bindgen-cli at the exact version of the
# `wasm-bindgen` crate in Cargo.lock (scripts/test-npm.sh installs both). Prints the module's
# size, raw and gzip -9 (the goal, 300 KB gzipped (issue 38), is checked by pkg-tests/bench/run.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."

lock_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
cli_version=$(wasm-bindgen --version | awk '{ print $2 }')
if [ "$lock_version" != "$cli_version" ]; then
  echo "wasm-bindgen-cli $cli_version does not match the wasm-bindgen crate $lock_version" >&2
  exit 1
fi

wasm_opt=${WASM_OPT:-pkg-tests/node_modules/.bin/wasm-opt}
if [ "$wasm_opt" != none ] && [ -z "${WASM_OPT:-}" ] && [ ! -x "$wasm_opt" ]; then
  (cd pkg-tests && npm ci --no-audit --no-fund >/dev/null)
fi

cargo build -p contextfold-wasm --target wasm32-unknown-unknown --profile wasm-release
target_dir=${CARGO_TARGET_DIR:-target}
wasm="$target_dir/wasm32-unknown-unknown/wasm-release/contextfold_wasm.wasm"

rm -rf pkg/dist
strip=(--remove-name-section --remove-producers-section)
wasm-bindgen --target experimental-nodejs-module "${strip[@]}" --out-dir pkg/dist/node \
  --out-name contextfold_wasm "$wasm"
wasm-bindgen --target web "${strip[@]}" --out-dir pkg/dist/web --out-name contextfold_wasm "$wasm"

node_wasm=pkg/dist/node/contextfold_wasm_bg.wasm
web_wasm=pkg/dist/web/contextfold_wasm_bg.wasm
features=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd)
optimize() {
  local start=$SECONDS
  # -O1, not -O: -O's further passes made the code 10% smaller raw but 10% larger gzipped
  # (2026-12-05: 304.7 KB against 275.1 KB after the layout), at the same speed in
  # pkg-tests/bench/run.mjs (docs/performance.md, "npm package").
  "$wasm_opt" -O1 "$1" -o "$1.opt" "${features[@]}"
  echo "wasm-opt -O1 $1: $((SECONDS - start)) s"
  # Like functions next to each other: 3.6% smaller gzipped, the same code (docs/performance.md).
  # The self-test first: the fast order equals its definition on seeded functions (0.2 s).
  python3 scripts/wasm_layout.py --self-test
  python3 scripts/wasm_layout.py "$1.opt" "$1.named"
  "$wasm_opt" "$1.named" --reorder-functions-by-name --strip-debug --strip-producers \
    -o "$1" "${features[@]}"
  echo "layout: $(gzip -9 -c "$1.opt" | wc -c) -> $(gzip -9 -c "$1" | wc -c) bytes gzipped"
  rm "$1.opt" "$1.named"
  echo "wasm-opt -O1 and layout $1: $((SECONDS - start)) s"
}
if [ "$wasm_opt" != none ]; then
  if cmp -s "$node_wasm" "$web_wasm"; then
    optimize "$web_wasm"
    cp "$web_wasm" "$node_wasm"
  else
    optimize "$node_wasm"
    optimize "$web_wasm"
  fi
fi
# wasm-bindgen writes its own package.json/.gitignore stubs; the package has one of its own.
rm -f pkg/dist/*/package.json pkg/dist/*/.gitignore
ls -l pkg/dist/node pkg/dist/web
for module in "$node_wasm" "$web_wasm"; do
  echo "$module: $(wc -c <"$module") bytes, $(gzip -9 -c "$module" | wc -c) gzipped (gzip -9)"
done
