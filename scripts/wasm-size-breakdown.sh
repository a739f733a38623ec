#!/usr/bin/env bash
# Where the bytes of the npm package's wasm module are (issue 21, point 5): builds
# contextfold-wasm as scripts/build-pkg.sh does (profile wasm-release, wasm-bindgen --target web,
# wasm-opt -O1), then reports
#   1. the module a subset of the exports needs: wasm-metadce keeps only what those exports reach,
#      then wasm-opt -O1 (gzip -9 and raw), for the subsets an application might load;
#   2. the code and data of the whole module by origin (twiggy shallow sizes of a build that keeps
#      its function names), in raw bytes.
# Needs twiggy (`cargo install twiggy`) for part 2; skips it when absent. Writes into $OUT
# (default a temporary directory). Last results: `git show 01261fa:docs/performance.md`, "Package
# size (issue 21)" and after (docs/performance.md, History).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-$(mktemp -d)}
bin=pkg-tests/node_modules/.bin
[ -x "$bin/wasm-opt" ] || (cd pkg-tests && npm ci --no-audit --no-fund >/dev/null)
features=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd)

cargo build -q -p contextfold-wasm --target wasm32-unknown-unknown --profile wasm-release
wasm="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/wasm-release/contextfold_wasm.wasm"
wasm-bindgen --target web --out-dir "$out" --out-name m "$wasm"
module="$out/m_bg.wasm"

exports=$(wasm-tools print "$module" | sed -nE 's/^  \(export "([^"]+)".*/\1/p')
eventlog="eventlog_new eventlog_append eventlog_project eventlog_digest eventlog_events
  eventlog_length eventlog_isEmpty __wbg_eventlog_free internString releaseStrings"
session="eventlog_startCompaction compactionsession_new compactionsession_poll
  compactionsession_handleAppend compactionsession_handleSummary compactionsession_handleNative
  compactionsession_cancel compactionsession_takeCircuit __wbg_compactionsession_free"
adapter="importModelMessages contextBudget estimateEvents evaluateReplay calibrate"

# Keeps `$2` (space-separated export names) and wasm-bindgen's own exports; prints the sizes.
subset() {
  python3 - "$2" "$exports" >"$out/graph.json" <<'EOF'
import json, sys
keep = set(sys.argv[1].split())
nodes = []
for name in sys.argv[2].split():
    node = {"name": "export " + name, "export": name}
    if name in keep or name == "memory" or name.startswith("__"):
        node["root"] = True
    nodes.append(node)
print(json.dumps(nodes))
EOF
  "$bin/wasm-metadce" "${features[@]}" "$module" -f "$out/graph.json" -o "$out/dce.wasm" >/dev/null
  "$bin/wasm-opt" -O1 "${features[@]}" --strip-debug --strip-producers "$out/dce.wasm" -o "$out/subset.wasm"
  printf '%-44s %9d raw %8d gzip -9\n' "$1" "$(wc -c <"$out/subset.wasm")" \
    "$(gzip -9 -c "$out/subset.wasm" | wc -c)"
}

echo "== the module each set of exports needs (wasm-metadce, then wasm-opt -O1)"
subset "every export" "$exports"
subset "project" "project"
subset "project + EventLog" "project $eventlog"
subset "contextfold/ai-sdk (EventLog, session, import)" "project $eventlog $session $adapter"

command -v twiggy >/dev/null || { echo "(twiggy not installed: no breakdown)"; exit 0; }
echo "== the whole module by origin (raw bytes, twiggy shallow sizes, names kept)"
"$bin/wasm-opt" -O1 -g "${features[@]}" "$module" -o "$out/named.wasm"
twiggy top -n 1000000 -f csv "$out/named.wasm" >"$out/top.csv"
python3 - "$out/top.csv" <<'EOF'
import collections, csv, re, sys
buckets = collections.Counter()
for row in csv.DictReader(open(sys.argv[1])):
    name, size = row["Name"], int(row["ShallowSize"])
    if "subsection" in name:
        continue  # the name section itself: never shipped
    if name.startswith("data"):
        key = "data (messages, prompts, tables)"
    elif "serde_json" in name:
        key = "serde_json (reader, writer, Value)"
    elif re.search(r"::de::|Deserializ|Visitor", name):
        key = "deserialization (serde derive and impls)"
    elif re.search(r"::ser::|Serializ", name):
        key = "serialization (serde derive and impls)"
    elif "sort" in name:
        key = "slice sorting"
    elif m := re.search(r"contextfold_core::(\w+)", name):
        key = "core::" + m.group(1)
    elif m := re.search(r"contextfold_wasm::(\w+)", name):
        key = "wasm::" + m.group(1)
    elif "shim" in name:
        key = "exports (bodies inlined into wasm-bindgen shims)"
    elif "fmt" in name:
        key = "formatting (core::fmt)"
    else:
        key = "other (std, alloc, hashbrown, sha2, ...)"
    buckets[key] += size
for key, size in buckets.most_common(30):
    print(f"{size:9d}  {key}")
print(f"{sum(buckets.values()):9d}  total")
EOF
