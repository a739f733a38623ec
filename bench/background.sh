#!/usr/bin/env bash
# Background preparation (issue 39): what compaction adds to the agent's steps, foreground only
# against background preparation, with a slow summarizer.
#
# 1. `contextfold demo` as users run it (the release binary, whole processes), once per mode,
#    every summary taking SUMMARIZER_MS (default 2000) and every model request MODEL_MS (default
#    2500; a model step longer than a summary, so a preparation started at the soft threshold
#    has time to finish): about 6 minutes per mode. DEMO=0 skips it.
# 2. The real long trajectories (at least 50 model steps) driven step by step through the
#    native runtime at 8k and 16k, the same latencies on tokio's paused clock
#    (host/tests/quality/background_latency.rs, release). NATIVE=0 skips it.
# 3. The same trajectories and windows through the npm AI SDK adapter as it ships (pkg/ built by
#    scripts/build-pkg.sh, `prepareStep` called as ai@6 calls it, `backgroundPreparation: true`
#    against foreground only), the same latencies on real timers, one child process per run, all
#    at once: about 10 minutes (pkg-tests/bench/background-latency.mjs). BACKGROUND_NPM=0 skips it;
#    when it misses the goal (issue 39: p95 at most 50 ms with a finished preparation, wasted at
#    most 10%) this script prints the tables and then fails.
#
# Prints markdown tables: per source and mode, the steps that needed a compaction and what
# they waited (p50, p95, max; and over those that found a finished preparation), the
# preparations and the share of summarizer tokens they wasted. Method and a recorded run:
# docs/performance.md, "Background preparation".
set -euo pipefail
cd "$(dirname "$0")/.."
summarizer_ms=${SUMMARIZER_MS:-2000}
model_ms=${MODEL_MS:-2500}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d), summarizer ${summarizer_ms} ms, model ${model_ms} ms"

if [ "${DEMO:-1}" != 0 ]; then
  cargo build -q --release -p contextfold-host
  for mode in foreground background; do
    flag=()
    [ "$mode" = background ] && flag=(--background-preparation)
    start=$SECONDS
    target/release/contextfold demo --json --db "$out/demo-$mode.sqlite" \
      --summarizer-latency-ms "$summarizer_ms" --model-latency-ms "$model_ms" "${flag[@]}" \
      >"$out/demo-$mode.json" 2>/dev/null
    echo "demo ($mode) ran in $((SECONDS - start)) s"
  done
fi

touch "$out/latency.log"
if [ "${NATIVE:-1}" != 0 ]; then
  start=$SECONDS
  BENCH_SUMMARIZER_LATENCY_MS=$summarizer_ms BENCH_MODEL_LATENCY_MS=$model_ms \
    cargo test -q --release -p contextfold-host --test quality -- --ignored \
    background_preparation_latency_on_real_long_trajectories --nocapture --test-threads 1 \
    >"$out/latency.log" 2>&1 || { cat "$out/latency.log"; exit 1; }
  echo "real trajectories ran in $((SECONDS - start)) s (build included)"
fi

npm_status=0
if [ "${BACKGROUND_NPM:-1}" != 0 ]; then
  start=$SECONDS
  (cd pkg-tests && npm ci --no-audit --no-fund >/dev/null)
  WASM_OPT='' bash scripts/build-pkg.sh >/dev/null
  (cd pkg-tests && BENCH_SUMMARIZER_LATENCY_MS=$summarizer_ms BENCH_MODEL_LATENCY_MS=$model_ms \
    node bench/background-latency.mjs >"$out/npm.log" 2>"$out/npm.err") || npm_status=$?
  echo "npm adapter ran in $((SECONDS - start)) s (package build included)"
  grep -q '^LATENCY' "$out/npm.log" || { cat "$out/npm.err"; exit 1; }
  cat "$out/npm.log" >>"$out/latency.log"
fi

python3 - "$out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]

def rank(values, percent):
    if not values:
        return None
    values = sorted(values)
    n = len(values)
    return values[max(1, min(n, -(-n * percent // 100))) - 1]

def ms(value):
    return "-" if value is None else f"{value:.0f}"

demos = [m for m in ("foreground", "background") if os.path.exists(os.path.join(out, f"demo-{m}.json"))]
if demos:
    print("\n### contextfold demo (release binary, whole processes)\n")
    print("| mode | steps needing a compaction | p50 ms | p95 ms | max ms | with a finished preparation | their p95 ms | prepared | used | superseded | wasted | wasted share of summarizer tokens | checkpoints | provider overflows | history after |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for mode in demos:
    d = json.load(open(os.path.join(out, f"demo-{mode}.json")))
    l, p = d["stepLatencyMs"], d["preparations"]
    print(f"| {mode} | {l['steps']} | {l['p50']:.0f} | {l['p95']:.0f} | {l['max']:.0f} | {l['prepared']['steps']} | "
          f"{l['prepared']['p95']:.0f} | {p['prepared']} | {p['used']} | {p['superseded']} | {p['wasted']} | "
          f"{d['wastedTokenSharePercent']:.1f}% | {d['checkpoints']} | {d['providerOverflows']} | {d['tokensAfter']} |")

lines = []
for raw in open(os.path.join(out, "latency.log")):
    m = re.search(r"LATENCY((?: [\w@-]+=\S+)+)", raw)
    if m:
        lines.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
print(f"\n### Real long trajectories ({len({f['source'] for f in lines})} with at least 50 steps; native: paused clock, npm: real timers)\n")
print("| runtime | window | mode | steps | steps needing a compaction | p50 ms | p95 ms | max ms | with a finished preparation | their p95 ms | prepared | used | wasted | wasted share of summarizer tokens |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for runtime, window, mode in [(r, w, m) for r in ("native", "npm") for w in sorted({int(f["window"]) for f in lines})
                          for m in ("foreground", "background")]:
    fs = [f for f in lines if f.get("runtime", "native") == runtime and int(f["window"]) == window and f["mode"] == mode]
    if not fs:
        continue
    waited = [w for f in fs if f["waited"] != "-" for w in f["waited"].split(",")]
    every = [float(w[:-1]) for w in waited]
    held = [float(w[:-1]) for w in waited if w.endswith("h")]
    total = lambda key: sum(int(f[key]) for f in fs)
    spent = total("preparation_tokens") + total("foreground_tokens")
    share = f"{100 * total('wasted_tokens') / spent:.1f}%" if spent else "-"
    print(f"| {runtime} | {window} | {mode} | {total('steps')} | {len(every)} | {ms(rank(every, 50))} | {ms(rank(every, 95))} | "
          f"{ms(max(every) if every else None)} | {len(held)} | {ms(rank(held, 95))} | {total('prepared')} | "
          f"{total('used')} | {total('wasted')} | {share} |")
PY
if [ -f "$out/npm.log" ]; then
  # The npm bench's own table (also: the p50 and max of the steps with a finished preparation,
  # why prepared checkpoints were refused) and its goal lines.
  echo; echo "### npm adapter, per window (pkg-tests/bench/background-latency.mjs)"
  grep -v '^LATENCY' "$out/npm.log"
fi
exit "$npm_status"
