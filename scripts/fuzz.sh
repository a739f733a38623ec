#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of outside input in contextfold-core (issue #8):
# the cargo-fuzz (libFuzzer + AddressSanitizer) targets of core/fuzz/, one per corpus of the
# proptest fuzzer, started from its committed seeds (core/tests/fuzz-corpus/<target>/).
# Checks: no panic (a failed property is a panic), no leak (LeakSanitizer), no single
# allocation above FUZZ_MALLOC_LIMIT_MB, resident memory under FUZZ_RSS_LIMIT_MB, no input
# slower than FUZZ_TIMEOUT seconds. Any of them fails the script and prints the reproducer
# (replay it with `<binary> <reproducer>`, the command is printed too).
#
# Installs what it needs, idempotently: the pinned nightly toolchain (sanitizer flags need
# it; the project itself builds on stable) and the pinned cargo-fuzz. Prints one line per
# target, `FUZZ-CARGO target=<t> runs=<n> malloc_limit_mb=<m> ...`, then the total
# `FUZZ-CARGO|executions|<n>` that scripts/reliability.sh puts in its summary table.
#
# Knobs: FUZZ_SECONDS (10 per target; raise it locally, e.g. 60), FUZZ_JOBS (2 targets at a
# time), FUZZ_TARGETS (all), FUZZ_MALLOC_LIMIT_MB (64), FUZZ_RSS_LIMIT_MB (1024),
# FUZZ_TIMEOUT (10). Generated corpus and crash artifacts go to $CARGO_TARGET_DIR/fuzz/work
# (never into the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
# A nightly build outside the workspace: not through scripts/test.sh's stable clippy wrapper.
unset RUSTC_WORKSPACE_WRAPPER

NIGHTLY=nightly-2026-05-20
CARGO_FUZZ_VERSION=0.13.2
FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
FUZZ_JOBS="${FUZZ_JOBS:-2}"
FUZZ_MALLOC_LIMIT_MB="${FUZZ_MALLOC_LIMIT_MB:-64}"
FUZZ_RSS_LIMIT_MB="${FUZZ_RSS_LIMIT_MB:-1024}"
FUZZ_TIMEOUT="${FUZZ_TIMEOUT:-10}"
all_targets="events_jsonl checkpoint openai_chat anthropic ai_sdk summary native_output archive_address archive_read recovery"
read -r -a targets <<<"${FUZZ_TARGETS:-$all_targets}"
seeds=core/tests/fuzz-corpus
target_dir="${CARGO_TARGET_DIR:-target}/fuzz"
work="${target_dir}/work"
start=$SECONDS

# max_len per target, in bytes. The core's parsers take whole documents and set no byte cap of
# their own, so the lengths are the sizes real inputs have, with headroom past every bound the
# parsers enforce: JSON documents and summaries 64 KiB (largest seed 35 KiB; a summary target
# is at most 8,192 tokens, about 32 KiB of text); archive addresses 4 KiB (session id at most
# 128 bytes plus fixed-size fields); archive_read requests 4 KiB (pattern cap 1 KiB).
# The 64 MiB malloc limit is 1,000x the largest input: a bigger single allocation is
# amplification, not parsing.
max_len() {
  case "$1" in
    archive_address | archive_read) echo 4096 ;;
    *) echo 65536 ;;
  esac
}

# --- tools -----------------------------------------------------------------------------
if ! rustup toolchain list | grep -q "^${NIGHTLY}"; then
  rustup toolchain install "$NIGHTLY" --profile minimal
fi
if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz ${CARGO_FUZZ_VERSION}" ]; then
  # The project's own (stable) toolchain builds the tool; a debug build halves its install
  # time, and its speed does not matter.
  cargo install cargo-fuzz --locked --debug --force --version "$CARGO_FUZZ_VERSION"
fi
echo "FUZZ-CARGO tools ready ($((SECONDS - start))s): $(rustc +"$NIGHTLY" --version), $(cargo fuzz --version)"

# --- build -----------------------------------------------------------------------------
cargo +"$NIGHTLY" fuzz build --fuzz-dir core/fuzz --target-dir "$target_dir"
triple=$(rustc +"$NIGHTLY" -vV | sed -n 's/^host: //p')
bin_dir="${target_dir}/${triple}/release"
echo "FUZZ-CARGO built ($((SECONDS - start))s)"

# --- run -------------------------------------------------------------------------------
# run_target T: fuzzes T for FUZZ_SECONDS from the committed seeds plus the corpus this
# machine grew before (the first directory, where libFuzzer adds new inputs).
run_target() {
  local t=$1 code
  rm -f "${work}/${t}.exit"
  mkdir -p "${work}/corpus/${t}" "${work}/artifacts/${t}"
  ASAN_OPTIONS="detect_odr_violation=0${ASAN_OPTIONS:+:${ASAN_OPTIONS}}" \
    "${bin_dir}/${t}" "${work}/corpus/${t}" "${seeds}/${t}" \
    -max_total_time="$FUZZ_SECONDS" -max_len="$(max_len "$t")" \
    -malloc_limit_mb="$FUZZ_MALLOC_LIMIT_MB" -rss_limit_mb="$FUZZ_RSS_LIMIT_MB" \
    -timeout="$FUZZ_TIMEOUT" -detect_leaks=1 -print_final_stats=1 \
    -artifact_prefix="${work}/artifacts/${t}/" >"${work}/${t}.log" 2>&1 && code=0 || code=$?
  echo "$code" >"${work}/${t}.exit"
}

mkdir -p "$work"
for t in "${targets[@]}"; do
  [ -d "${seeds}/${t}" ] || { echo "FUZZ-CARGO no seeds in ${seeds}/${t}" >&2; exit 2; }
  while [ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]; do wait -n || true; done
  run_target "$t" &
done
wait
status=0
total=0
failures=()
for t in "${targets[@]}"; do
  code=$(cat "${work}/${t}.exit" 2>/dev/null || echo missing)
  log="${work}/${t}.log"
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
  rss=$(sed -nE 's/^stat::peak_rss_mb: *([0-9]+).*/\1/p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
  total=$((total + ${runs:-0}))
  line="FUZZ-CARGO target=${t} runs=${runs:-0} malloc_limit_mb=${FUZZ_MALLOC_LIMIT_MB}"
  line+=" rss_limit_mb=${FUZZ_RSS_LIMIT_MB} max_len=$(max_len "$t") peak_rss_mb=${rss:-?} cov=${cov}"
  if [ "$code" = 0 ]; then
    echo "${line} seconds=${FUZZ_SECONDS} ok"
  else
    status=1
    reproducer=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -1)
    echo "${line} FAILED exit=${code} reproducer=${reproducer:-none}"
    grep -E '^==[0-9]+==|ERROR: libFuzzer|panicked at|SUMMARY:' "$log" | head -20 || true
    tail -30 "$log"
    [ -z "$reproducer" ] || echo "replay: ${bin_dir}/${t} ${reproducer}"
    failures+=("${t}:${reproducer:-no-reproducer}")
  fi
done
echo "FUZZ-CARGO total wall $((SECONDS - start))s, logs and generated corpus in ${work}"
[ "${#failures[@]}" -eq 0 ] || echo "FUZZ-CARGO FAILED ${failures[*]}"
echo "FUZZ-CARGO|executions|${total}"
exit "$status"
