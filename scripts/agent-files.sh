#!/usr/bin/env bash
# Issue 41's goal over real agent session files: every file imports (`--format auto`), projects at
# 128k, 32k and 8k, and compacts at 32k then 8k (the window switch), with every request fitting
# or a typed irreducible reason. Prints one line per file and the totals.
#
#   bash scripts/agent-files.sh [DIR...]   (default: tests/agent-files; add your own sessions,
#                                           e.g. ~/.claude/projects ~/.codex/sessions)
#
# A file that imports as linked sessions only (a Claude Code subagent file) is checked on its
# first linked session. Needs the release binary (built here) and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p contextfold-host
bin="$PWD/target/release/contextfold"
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(tests/agent-files)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Irreducible: what no compaction can make fit (the live head or one unfoldable turn alone).
irreducible='minimum_context_exceeds_budget|no_safe_prefix'
files=0 imported=0 fitting=0 irreducible_n=0 failed=0 recompressed=0
while IFS= read -r -d '' file; do
  files=$((files + 1))
  db="$work/$files.sqlite"
  if ! out=$("$bin" --json import --db "$db" --session s --format auto "$file" 2>/dev/null); then
    echo "FAIL import  $file: $(echo "$out" | jq -r '.error.code? // .' 2>/dev/null | head -1)"
    failed=$((failed + 1)); continue
  fi
  imported=$((imported + 1))
  session=s
  if [ "$(echo "$out" | jq '.imported')" = 0 ]; then session=$(echo "$out" | jq -r '.linked[0].session'); fi
  verdict=fits
  # As a runtime does before each request: project; when it does not fit, compact and project
  # again. 128k, then 32k, then 8k: the same session moving to smaller windows.
  for window in 128000 32000 8000; do
    res=$("$bin" --json project --db "$db" --session "$session" --context-window "$window" 2>/dev/null || true)
    [ "$(echo "$res" | jq -r '.fits')" = true ] && continue
    res=$("$bin" --json compact --db "$db" --session "$session" --context-window "$window" --summarizer extractive 2>/dev/null || true)
    reason=$(echo "$res" | jq -r '.reason // .error.code')
    if echo "$res" | jq -e '[.diagnostics[]?.code] | index("recompress_for_budget")' >/dev/null; then
      recompressed=$((recompressed + 1))
    fi
    res=$("$bin" --json project --db "$db" --session "$session" --context-window "$window" 2>/dev/null || true)
    [ "$(echo "$res" | jq -r '.fits')" = true ] && continue
    if echo "$reason" | grep -Eq "^($irreducible)$"; then
      verdict="irreducible ($reason at $window)"
    else
      verdict="FAIL at $window: compact $reason, project $(echo "$res" | jq -c '[.diagnostics[]?.code]')"
    fi
    break
  done
  case "$verdict" in
    fits) fitting=$((fitting + 1)) ;;
    irreducible*) irreducible_n=$((irreducible_n + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
  echo "$verdict  $(basename "$file") ($(echo "$out" | jq -r '.format'), $(echo "$out" | jq '.imported + ([.linked[].imported] | add // 0)') events)"
done < <(find "${dirs[@]}" -type f \( -name '*.jsonl' -o -name '*.json' \) -print0 | sort -z)
echo "files $files, imported $imported, every request fits $fitting, irreducible $irreducible_n, failed $failed"
echo "checkpoints made for a larger window and compressed again for a smaller one: $recompressed"
