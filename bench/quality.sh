#!/usr/bin/env bash
# Continuation quality (issue 37, point 1): how many exact artifacts of the folded events
# (constraints, plan, errors, commands, paths, identifiers) appear verbatim in the next request
# after compaction, for contextfold and two baselines (truncation, observation masking), each
# also at contextfold's own request size. Runs host/tests/quality/continuation_quality.rs in release
# (every real trajectory and two seeded long turns at 4k-128k, compact-then-project and the agent
# loop, plus the real binary at 8k; then the npm AI SDK adapter's agent loop over the real
# trajectories, pkg-tests/bench/quality.mjs), then prints markdown tables from its QUALITY lines.
# Method and a recorded run: docs/performance.md, "Continuation quality".
#
#   bash bench/quality.sh                         # everything
#   QUALITY_SOURCES=swe-agent bash bench/quality.sh   # sources whose name contains a word
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== continuation_quality (release; native runtime on SQLite, extractive summarizer)"
start=$(date +%s)
cargo test -q --release -p contextfold-host --test quality -- \
  --include-ignored continuation_quality:: --skip continuation_quality_floor --skip continuation_quality_of_the_npm_adapter \
  --nocapture --test-threads 1 > "$log" 2>&1 || { cat "$log"; exit 1; }
echo "ran in $(( $(date +%s) - start )) s (build included), commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d)"

# The npm AI SDK adapter over the same real trajectories (the agent loop through prepareStep),
# scored by the same artifacts. QUALITY_NPM=0 skips it.
if [ "${QUALITY_NPM:-1}" != 0 ]; then
  echo "== npm adapter (pkg/ as it ships, prepareStep over the real trajectories)"
  start=$(date +%s)
  requests=$(mktemp)
  trap 'rm -f "$log" "$requests"' EXIT
  (cd pkg-tests && npm ci --no-audit --no-fund >/dev/null)
  WASM_OPT='' bash scripts/build-pkg.sh >/dev/null
  (cd pkg-tests && node bench/quality.mjs --out "$requests" --windows "${QUALITY_NPM_WINDOWS:-4000,8000,16000,32000}" 2>/dev/null)
  QUALITY_NPM_REQUESTS="$requests" cargo test -q --release -p contextfold-host --test quality -- \
    --ignored continuation_quality_of_the_npm_adapter --nocapture >> "$log" 2>&1 || { cat "$log"; exit 1; }
  echo "ran in $(( $(date +%s) - start )) s (package build included)"
fi

python3 - "$log" <<'PY'
import re, sys, collections
CLASSES = ["constraint", "plan", "error", "command", "path", "identifier"]
STRATEGIES = ["contextfold", "contextfold-prepared", "contextfold-cli", "contextfold-npm", "truncation", "masking", "truncation@own", "masking@own", "ceiling"]
lines, census, preparations = [], [], []
for raw in open(sys.argv[1]):
    # A test-runner notice can share a line with a report; take the report wherever it is.
    m = re.search(r"QUALITY((?: [\w@-]+=\S+)+)", raw)
    if m:
        lines.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    m = re.search(r"PREPARATION((?: [\w@-]+=\S+)+)", raw)
    if m:
        preparations.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    m = re.search(r"ARTIFACTS((?: [\w@-]+=\S+)+)", raw)
    if m:
        census.append(dict(kv.split("=", 1) for kv in m.group(1).split()))

def frac(s):
    k, n = s.split("/")
    return int(k), int(n)

def pct(k, n):
    return f"{100 * k / n:.1f}%" if n else "-"

def group(f):
    return "generated" if f["source"].startswith("generated") else "real"

# Runs (one per source, window, scenario): folded or not, compactions and steps, from the
# contextfold line.
runs = collections.defaultdict(list)
for f in lines:
    if f["strategy"] in ("contextfold", "contextfold-prepared", "contextfold-cli", "contextfold-npm"):
        runs[(f["scenario"], int(f["window"]), f["strategy"], group(f))].append(f)

for scenario, title in (("compact", "compact-then-project (one manual compaction, then the next request)"),
                        ("loop", "agent loop (every step whose request replays a checkpoint; k/n pooled over steps)")):
    print(f"\n### {title}\n")
    print("| sources | window | strategy | folded runs | " + " | ".join(CLASSES) +
          " | overall | mean per request | largest request / budget | requests over budget | compactions per 100 steps |")
    print("| --- | ---: | --- | ---: | " + " | ".join("---:" for _ in CLASSES) + " | ---: | ---: | ---: | ---: | ---: |")
    keys = sorted({(group(f), int(f["window"])) for f in lines if f["scenario"] == scenario},
                  key=lambda k: (k[0] != "real", k[1]))
    for grp, window in keys:
        for strategy in STRATEGIES:
            fs = [f for f in lines if f["scenario"] == scenario and int(f["window"]) == window
                  and f["strategy"] == strategy and group(f) == grp]
            if not fs:
                continue
            folded = [f for f in fs if int(f["measured"]) > 0]
            cells = []
            for c in CLASSES + ["overall"]:
                k = sum(frac(f[c])[0] for f in folded)
                n = sum(frac(f[c])[1] for f in folded)
                cells.append(pct(k, n))
            # Mean of the per-request overall shares, over every scored request of these runs.
            requests = sum(int(f["measured"]) for f in folded)
            share_sum = sum(float(f["mean"]) * int(f["measured"]) for f in folded)
            mean = f"{100 * share_sum / requests:.1f}%" if requests else "-"
            largest = max(int(f["request_tokens"]) for f in fs)
            budget = max(int(f["budget"]) for f in fs)
            over = f"{sum(int(f['over_budget']) for f in fs)} / {requests}"
            steps = sum(int(f["steps"]) for f in fs)
            comps = sum(int(f["compactions"]) for f in fs)
            per100 = (f"{100 * comps / steps:.1f}"
                      if steps and scenario == "loop" and strategy.startswith("contextfold") else "")
            print(f"| {len(fs)} {grp} | {window} | {strategy} | {len(folded)} / {len(fs)} | " +
                  " | ".join(cells) + f" | {mean} | {largest} / {budget} | {over} | {per100} |")

print("\n### Long trajectories (at least 50 steps), agent loop, contextfold\n")
print("Compression: 1 - (checkpoint message tokens / tokens of the folded events it replaces), pooled over scored requests.\n")
print("| window | runs | overall | compression | compactions per 100 steps |")
print("| ---: | ---: | ---: | ---: | ---: |")
for window in sorted({int(f["window"]) for f in lines}):
    fs = [f for f in lines if f["scenario"] == "loop" and f["strategy"] == "contextfold"
          and int(f["window"]) == window and group(f) == "real" and int(f["steps"]) >= 50]
    folded = [f for f in fs if int(f["measured"]) > 0]
    if not folded:
        continue
    k = sum(frac(f["overall"])[0] for f in folded)
    n = sum(frac(f["overall"])[1] for f in folded)
    ck = sum(int(f.get("checkpoint_tokens", 0)) for f in folded)
    src = sum(int(f.get("folded_tokens", 0)) for f in folded)
    comp = f"{100 * (1 - ck / src):.1f}%" if src else "-"
    steps = sum(int(f["steps"]) for f in fs)
    comps = sum(int(f["compactions"]) for f in fs)
    print(f"| {window} | {len(folded)} | {pct(k, n)} | {comp} | {100 * comps / steps:.1f} |")

print("\n### Background preparation, agent loop (each preparation finished before the next step)\n")
print("Summarizer tokens: each request's estimated input and its answer. Wasted: preparations built and not used (refused, superseded, or still held at the end).\n")
print("| sources | window | steps | prepared | used | superseded | wasted | failed | preparation tokens | foreground tokens | wasted share |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for grp in ("real", "generated"):
    for window in sorted({int(f["window"]) for f in preparations}):
        fs = [f for f in preparations if int(f["window"]) == window and group(f) == grp]
        if not fs:
            continue
        total = lambda key: sum(int(f[key]) for f in fs)
        spent = total("tokens") + total("foreground_tokens")
        share = f"{100 * total('wasted_tokens') / spent:.1f}%" if spent else "-"
        print(f"| {len(fs)} {grp} | {window} | {total('steps')} | {total('prepared')} | {total('used')} | {total('superseded')} | {total('wasted')} | {total('failed')} | {total('tokens')} | {total('foreground_tokens')} | {share} |")

print("\n### Artifacts per agent (whole logs)\n")
print("| agent | logs | events | " + " | ".join(CLASSES) + " |")
print("| --- | ---: | ---: | " + " | ".join("---:" for _ in CLASSES) + " |")
agents = collections.defaultdict(list)
for f in census:
    agents[f["source"].split("/")[0]].append(f)
for agent, fs in sorted(agents.items()):
    print(f"| {agent} | {len(fs)} | {sum(int(f['events']) for f in fs)} | " +
          " | ".join(str(sum(int(f[c]) for f in fs)) for c in CLASSES) + " |")

print("\n### Overall retention per agent, compact-then-project at 8k\n")
print("| agent | " + " | ".join(STRATEGIES) + " |")
print("| --- | " + " | ".join("---:" for _ in STRATEGIES) + " |")
for agent in sorted(agents):
    cells = []
    for strategy in STRATEGIES:
        fs = [f for f in lines if f["source"].split("/")[0] == agent and f["scenario"] == "compact"
              and int(f["window"]) == 8000 and f["strategy"] == strategy and int(f["measured"]) > 0]
        k = sum(frac(f["overall"])[0] for f in fs)
        n = sum(frac(f["overall"])[1] for f in fs)
        cells.append(pct(k, n) if fs else "-")
    print(f"| {agent} | " + " | ".join(cells) + " |")
PY
