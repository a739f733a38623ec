#!/usr/bin/env bash
# Extra checks of the native host, beyond the workspace tests (`cargo test --workspace` already
# runs host/tests/<area>/): the built `contextfold` binary end to end on temporary SQLite
# files — the offline demo, `verify` on its database, and the `--json` shapes of `project` and
# `compact`. Needs only Rust 1.95 and Node 20 (for the JSON checks); SQLite is bundled.
set -euo pipefail
cd "$(dirname "$0")/.."

# The binary of the workspace test build (the build scripts/test.sh has already made, so this
# compiles nothing there).
bin="$(bash scripts/workspace-bin.sh contextfold)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Checks that stdin is one JSON object holding every key in $1 (comma-separated), then runs the
# extra JavaScript condition $2 on it (`j`).
check_json() {
  node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const j = JSON.parse(s);
      for (const k of process.argv[1].split(",")) if (!(k in j)) throw new Error("missing key " + k + " in " + s.slice(0, 400));
      if (!eval(process.argv[2])) throw new Error("condition failed: " + process.argv[2] + " on " + s.slice(0, 400));
    });' "$1" "$2"
}

echo "== demo"
"$bin" demo --db "$work/demo.sqlite"
"$bin" --json verify --db "$work/demo.sqlite" --session demo |
  check_json "ok,verified,checkpoints,projection" 'j.ok === true && j.verified >= 3 && j.verified === j.checkpoints.length'
echo "test-host: demo ok, verify ok"

echo "== --json shapes"
"$bin" export --db "$work/demo.sqlite" --session demo > "$work/demo.jsonl"
sed 's/"sessionId":"demo"/"sessionId":"s"/' "$work/demo.jsonl" > "$work/s.jsonl"
"$bin" --json import --db "$work/shape.sqlite" --session s --format events-jsonl "$work/s.jsonl" |
  check_json "imported,totalEvents" 'j.imported > 0'
"$bin" --json project --db "$work/shape.sqlite" --session s --context-window 16000 --format openai-chat |
  check_json "messages,estimatedTokens,historyBudget,checkpoint,diagnostics" \
    'Array.isArray(j.messages) && j.checkpoint === null && j.estimatedTokens > j.historyBudget'
"$bin" --json compact --db "$work/shape.sqlite" --session s --context-window 16000 --summarizer extractive |
  check_json "outcome,reason,checkpoint,diagnostics" \
    'j.outcome === "recorded" && j.reason === "checkpoint_recorded" && j.checkpoint.schemaVersion === 2 && Array.isArray(j.diagnostics)'
"$bin" --json project --db "$work/shape.sqlite" --session s --context-window 16000 --format anthropic |
  check_json "messages,estimatedTokens,historyBudget,checkpoint,diagnostics" \
    'j.checkpoint !== null && j.estimatedTokens <= j.historyBudget'
set +e
"$bin" --json compact --db "$work/shape.sqlite" --session s --context-window 16000 --summarizer openai-chat \
  > "$work/nokey.json" 2>/dev/null
status=$?
set -e
[ "$status" -eq 1 ] || { echo "test-host: compact without a key exited $status" >&2; exit 1; }
check_json "error" 'j.error.code === "api_key_missing"' < "$work/nokey.json"
"$bin" --json verify --db "$work/shape.sqlite" --session s | check_json "ok" 'j.ok === true'
echo "test-host: json shapes ok"
