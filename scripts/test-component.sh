#!/usr/bin/env bash
# Builds contextfold-core as a WebAssembly component (wasm32-unknown-unknown + `wasm-tools
# component new`, no WASI), checks that it imports exactly the `compactor` world's interfaces,
# and runs the component tests: shared vectors replayed natively and in wasmtime, limits
# against a hostile plugin, the blocking compaction through an in-memory ledger.
# `--build-only`: build and check the components into target/components, run no tests
# (scripts/conformance.sh and bench/component.sh use it).
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_TOOLS_VERSION=1.263.0
rustup target add wasm32-unknown-unknown
if ! wasm-tools --version 2>/dev/null | grep -q "^wasm-tools ${WASM_TOOLS_VERSION}\b"; then
  env -u RUSTC_WORKSPACE_WRAPPER cargo install wasm-tools --version "${WASM_TOOLS_VERSION}" --locked \
    --no-default-features --features component,validate,print
fi

target_dir="${CARGO_TARGET_DIR:-target}"
out=target/components
mkdir -p "$out"
cargo build -q --release --target wasm32-unknown-unknown \
  -p contextfold-component -p contextfold-hostile-guest
for crate in contextfold_component:contextfold_compactor contextfold_hostile_guest:contextfold_hostile; do
  module="${target_dir}/wasm32-unknown-unknown/release/${crate%%:*}.wasm"
  wasm-tools component new "$module" -o "$out/${crate##*:}.wasm"
  wasm-tools validate --features all "$out/${crate##*:}.wasm"
done

# The component must import exactly the world's interfaces (no WASI, nothing dropped).
expected="contextfold:compaction/ledger@0.1.0
contextfold:compaction/provider@0.1.0
contextfold:compaction/types@0.1.0"
actual=$(wasm-tools component wit "$out/contextfold_compactor.wasm" \
  | sed -n 's/^ *import \([^;]*\);$/\1/p' | sort)
if [ "$actual" != "$expected" ]; then
  echo "FAIL: the component's imports differ from the compactor world's:"
  diff <(echo "$expected") <(echo "$actual") || true
  exit 1
fi
exports=$(wasm-tools component wit "$out/contextfold_compactor.wasm" \
  | sed -n 's/^ *export \([^;]*\);$/\1/p' | sort | tr '\n' ' ')
# The WIT the component carries must match wit/ item for item (docs aside: the component
# keeps none): every interface it imports or exports, every type and function in them.
wasm-tools component wit wit/ >"$out/source.wit"
wasm-tools component wit "$out/contextfold_compactor.wasm" >"$out/component.wit"
echo -n "component WIT vs wit/: "
node - "$out/source.wit" "$out/component.wit" <<'NODE'
const { readFileSync } = require('node:fs');
// Items of each interface in a `wasm-tools component wit` printout, docs and `use` lines dropped,
// whitespace normalized: Map<interface, Set<item text>>.
function interfaces(text) {
  const out = new Map();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const head = lines[i].match(/^(\s*)interface ([\w-]+) \{$/);
    if (!head) continue;
    const indent = head[1].length;
    const items = new Set();
    let item = null;
    let depth = 0;
    for (i += 1; i < lines.length; i += 1) {
      const line = lines[i];
      const trimmed = line.trim();
      if (depth === 0 && line.length - line.trimStart().length === indent && trimmed === '}') break;
      if (!trimmed || trimmed.startsWith('///') || (depth === 0 && trimmed.startsWith('use '))) continue;
      item = item === null ? trimmed : `${item} ${trimmed}`;
      depth += (trimmed.match(/\{/g) ?? []).length - (trimmed.match(/\}/g) ?? []).length;
      if (depth === 0) {
        items.add(item.replace(/\s+/g, ' ').replace(/,\s*\}/g, ' }'));
        item = null;
      }
    }
    out.set(head[2], items);
  }
  return out;
}
const [source, built] = process.argv.slice(2).map((f) => interfaces(readFileSync(f, 'utf8')));
let bad = 0;
for (const [name, items] of built) {
  const want = source.get(name);
  if (!want) { console.log(`interface ${name} is not in wit/`); bad += 1; continue; }
  for (const item of items) if (!want.has(item)) { console.log(`${name}: component has ${item}`); bad += 1; }
  for (const item of want) if (!items.has(item)) { console.log(`${name}: wit/ has ${item}`); bad += 1; }
}
console.log(`${built.size} interfaces compared, ${bad} differences`);
process.exit(bad ? 1 : 0);
NODE
echo "component imports: $(echo "$actual" | tr '\n' ' ')(no WASI)"
echo "component exports: $exports"
if [ "${1:-}" = "--build-only" ]; then
  exit 0
fi

# The workspace's native crates, selected as scripts/test.sh selects them (the same features,
# so its debug test build is reused, nothing recompiles). host/tests/component/ is the one
# test binary that drives wasmtime; its benchmark is bench/component.sh's.
native=(--workspace --exclude contextfold-component --exclude contextfold-hostile-guest)
export CONTEXTFOLD_COMPONENTS_DIR="$PWD/$out"
cargo test -q "${native[@]}" --test behaviour -- --nocapture
cargo test -q "${native[@]}" --test component -- --ignored --skip component_bench:: --nocapture
