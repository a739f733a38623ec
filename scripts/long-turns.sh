#!/usr/bin/env bash
# Long agent turns, end to end (issue 16 evidence), with the figures docs/performance.md reports:
#  1. the host test `long_turns` (its ignored second seed and 1,000-step session included): generated and real
#     trajectories through the native runtime on SQLite at 4k, 8k, 16k and 128k windows, then the
#     same sessions through the npm package (pkg-tests/bench/long-turns.js), one table each;
#  2. one ~90,000-event session built from the real trajectories (each one a turn, repeated
#     with fresh ids), imported in one piece and compacted in ONE `contextfold compact` call
#     with the offline summarizer at a 128k window, timed as a whole process.
# Usage: bash scripts/long-turns.sh [events]   (default 90000; LARGE_ONLY=1 skips part 1)
set -euo pipefail
cd "$(dirname "$0")/.."
target_events="${1:-90000}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One table from LONG_TURN report lines (native test and npm bench print the same shape).
table() {
python3 - "$1" <<'PY'
import re, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    # A test-runner notice can share a line with a report; take the report wherever it is.
    match = re.search(r"LONG_TURN((?: \w+=\S+)+)", line)
    if not match:
        continue
    f = dict(kv.split("=", 1) for kv in match.group(1).split())
    source = f["source"]
    group = ("generated-1000" if source.endswith("1000") else "generated") if source.startswith("generated") else "real"
    rows[(group, f["summarizer"], int(f["window"]))].append(f)
print("| sessions | summarizer | window | steps | compactions per session (mean / max) | largest request / budget | steps over budget (typed) | wall time |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for (group, summarizer, window), fs in sorted(rows.items()):
    steps = sum(int(f["steps"]) for f in fs)
    comp = [int(f["compactions"]) for f in fs]
    budget = window - min(window // 4, 16384)
    largest = max(int(f["max_request_tokens"]) for f in fs)
    over = sum(int(f["over_budget_steps"]) for f in fs)
    ms = sum(int(f.get("ms", 0)) for f in fs)
    wall = f"{ms / 1000:.1f} s" if ms else "-"
    print(f"| {len(fs)} {group} | {summarizer} | {window} | {steps} | {sum(comp)/len(comp):.1f} / {max(comp)} | {largest} / {budget} | {over} | {wall} |")
PY
}

if [ -z "${LARGE_ONLY:-}" ]; then
echo "== long_turns (native runtime, SQLite, 4k-128k windows; the 1,000-step session included)"
cargo test -q --release -p contextfold-host --test runtime -- --include-ignored long_turns:: --nocapture > "$work/long_turns.log" 2>&1 \
  || { cat "$work/long_turns.log"; exit 1; }
table "$work/long_turns.log"

echo "== the npm package (built from source), the same sessions"
export LONG_TURN_DIR="$work/long-turns"
mkdir -p "$LONG_TURN_DIR"
for spec in "1 60" "2 60" "3 1000"; do
  set -- $spec
  name="generated-$1"; [ "$2" = 1000 ] && name="generated-1000"
  cargo run -q --release -p contextfold-conformance --bin gen-long-turn -- \
    --seed "$1" --steps "$2" --prior-turns 2 --out "$LONG_TURN_DIR/$name.jsonl"
done
bash scripts/build-pkg.sh > /dev/null
[ -d pkg-tests/node_modules ] || (cd pkg-tests && npm ci --no-audit --no-fund)
(cd pkg-tests && node bench/long-turns.js) > "$work/npm.log" 2>&1 || { cat "$work/npm.log"; exit 1; }
table "$work/npm.log"
fi

echo "== one ${target_events}-event session, one compact call"
cargo build -q --release -p contextfold-host --bin contextfold
bin=target/release/contextfold
python3 - "$target_events" "$work/big.jsonl" <<'PY'
import json, glob, sys
target, out = int(sys.argv[1]), sys.argv[2]
sources = [[json.loads(l) for l in open(p) if l.strip()] for p in sorted(glob.glob("tests/trajectories/*/*.jsonl"))]
seq, turn, written = 0, 0, 0
with open(out, "w") as f:
    while written < target:
        for events in sources:
            turn += 1
            for e in events:
                seq += 1
                e = dict(e, sessionId="big", seq=seq, runtimeEventId=f"e{seq}", turnId=f"t{turn}", runId=f"run-{turn}")
                c = e["content"]
                if "callId" in c:
                    c = dict(c, callId=f"{c['callId']}-t{turn}")
                    e["content"] = c
                if e.get("responseId"):
                    e["responseId"] = f"{e['responseId']}-t{turn}"
                f.write(json.dumps(e, ensure_ascii=False) + "\n")
                written += 1
            if written >= target:
                break
print(f"built {written} events in {turn} turns")
PY
ls -l "$work/big.jsonl" | awk '{printf "jsonl bytes: %s\n", $5}'
db="$work/big.sqlite"
/usr/bin/time -f "import: %e s, peak RSS %M KiB" "$bin" import --db "$db" --session big --format events-jsonl "$work/big.jsonl" > /dev/null
/usr/bin/time -f "compact: %e s, peak RSS %M KiB" "$bin" compact --db "$db" --session big \
  --summarizer extractive --context-window 128000 --json > "$work/compact.json"
python3 - "$work/compact.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
out = o["outcome"] if isinstance(o.get("outcome"), dict) else o
cp = out.get("checkpoint") or {}
print("outcome:", out.get("outcome"), out.get("reason"), "tokens:", out.get("tokens"),
      "covered events:", (cp.get("coverage") or {}).get("eventCount"),
      "checkpoint:", cp.get("checkpointId"))
PY
/usr/bin/time -f "verify: %e s, peak RSS %M KiB" "$bin" verify --db "$db" --session big --json | head -c 400; echo
