#!/usr/bin/env python3
"""Deliberate breakages of contextfold's guarantees, applied one at a time to a scratch copy of
the repository; each must make its guarding suite fail (issue 18, point 1). Run through
scripts/mutants.sh, which prepares the scratch copy and the build directory.

A mutant is (name, what it breaks, file, old text, new text, test command). The old text must
occur exactly once in the file (so a stale mutant is an error, not a silent pass); the mutant
must build (a build failure is reported as an invalid mutant, never as caught); then the test
command must fail. The report names the failing tests, so it says which suite caught it.

Usage: mutants.py <scratch repo> [name ...]   (no names: every mutant)
"""

import os
import re
import subprocess
import sys
import time

CORE = ["cargo", "test", "-q", "--release", "-p", "contextfold-core"]
HOST = ["cargo", "test", "-q", "-p", "contextfold-host"]

MUTANTS = [
    (
        "sync_off",
        "SQLite synchronous=OFF: commits are not made durable",
        "host/src/storage/mod.rs",
        'pragma_update(None, "synchronous", "FULL")',
        'pragma_update(None, "synchronous", "OFF")',
        HOST + ["--test", "reliability", "--", "power_loss::"],
    ),
    (
        "sync_normal",
        "SQLite synchronous=NORMAL: WAL commits survive a crash but not a power loss",
        "host/src/storage/mod.rs",
        'pragma_update(None, "synchronous", "FULL")',
        'pragma_update(None, "synchronous", "NORMAL")',
        HOST + ["--test", "reliability", "--", "power_loss::"],
    ),
    (
        "not_smaller_allowed",
        "the strictly-smaller check of a replacement removed",
        "core/src/compaction/run.rs",
        "if tokens >= source_tokens {",
        "if false && tokens >= source_tokens {",
        HOST + ["--test", "reliability", "--", "fault_matrix::"],
    ),
    (
        "scrub_skipped",
        "provider failures no longer scrubbed of the key and provider state",
        "host/src/providers/transport.rs",
        "error.map_text(|text| self.secrets.scrub(text))",
        "error.map_text(str::to_owned)",
        HOST + ["--test", "reliability", "--test", "provider_clients", "--", "secrets::", "providers_redaction::"],
    ),
    (
        "repair_not_revalidated",
        "a repaired summary accepted without being validated again",
        "core/src/compaction/run.rs",
        "                    Err(defect) => {\n"
        "                        self.input.circuit.record_outcome(",
        "                    Err(_) if text.repaired => {\n"
        "                        let projection = CheckpointProjection::Summary(response.text.clone());\n"
        "                        self.build_checkpoint(projection, self.producer());\n"
        "                    }\n"
        "                    Err(defect) => {\n"
        "                        self.input.circuit.record_outcome(",
        HOST + ["--test", "reliability", "--", "fault_matrix::"],
    ),
    (
        "cut_splits_exchange",
        "a cut allowed between a call and its result (and inside a response batch)",
        "core/src/safe_prefix/cuts.rs",
        "|| self.splits.splits_at(cut)",
        "|| (false && self.splits.splits_at(cut))",
        CORE + ["--test", "invariants"],
    ),
    (
        "live_partial_covered",
        "a still-streaming partial event no longer bars coverage",
        "core/src/safe_prefix/cuts.rs",
        "let live_partial = (0..events.len()).find(|&i| events[i].partial && !follows[i]);",
        "let live_partial = (0..events.len()).find(|&i| events[i].partial && !follows[i] && false);",
        CORE + ["--lib"],
    ),
    (
        "circuit_never_armed",
        "the malformed-input circuit never remembers an input",
        "core/src/compaction/circuit.rs",
        "        self.record_malformed(fingerprint);\n        true",
        "        let _ = fingerprint;\n        true",
        HOST + ["--test", "reliability", "--", "fault_matrix::"],
    ),
    (
        "failed_append_counts",
        "coverage widened on fail-open: a checkpoint whose append failed is used anyway",
        "core/src/compaction/run.rs",
        "            Err(failure) => {\n                let code = if failure.conflict {",
        "            Err(failure) => {\n                self.recorded.push(checkpoint.clone());\n"
        "                let code = if failure.conflict {",
        CORE + ["--test", "invariants"],
    ),
    (
        "v3_after_switch",
        "a V3 checkpoint replayed after a provider or model switch",
        "core/src/replay.rs",
        "let bound = provider.is_some_and(|p| provider_state_matches(state, p));",
        "let bound = provider.is_some_and(|p| provider_state_matches(state, p) || true);",
        CORE + ["--test", "invariants"],
    ),
    (
        "checkpoint_cas_removed",
        "the store's compare-and-swap on the checkpoint tip removed",
        "host/src/storage/checkpoints.rs",
        "is_valid_successor(tip.as_ref(), checkpoint).map_err(",
        "is_valid_successor(None, checkpoint).map_err(",
        HOST + ["--test", "reliability", "--", "concurrency::"],
    ),
    (
        "seq_order_unchecked",
        "event appends no longer refuse a seq at or below the last one",
        "host/src/storage/events.rs",
        "                    && event.seq <= previous\n",
        "                    && event.seq < previous\n",
        HOST + ["--test", "reliability", "--test", "runtime", "--", "concurrency::", "storage::"],
    ),
    (
        "stream_end_optional",
        "a Responses stream that ends without response.completed accepted",
        "host/src/providers/codex.rs",
        "    if state.completed.is_none() {\n        let pending",
        "    if state.completed.is_none() && false {\n        let pending",
        HOST + ["--test", "provider_clients", "--", "providers_classes::"],
    ),
    (
        "response_cap_raised",
        "the 16 MiB provider response cap lifted",
        "host/src/providers/transport.rs",
        "pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;",
        "pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024 * 1024;",
        HOST + ["--test", "provider_clients", "--", "providers_classes::"],
    ),
    (
        "attachment_hash_unchecked",
        "an inline attachment's sha256 no longer checked against its bytes",
        "core/src/attachment.rs",
        "if bytes.len() as u64 != length || &sha256_hex(&bytes) != sha {",
        "if bytes.len() as u64 != length || (false && &sha256_hex(&bytes) != sha) {",
        CORE + ["--test", "projection", "--", "attachments::"],
    ),
    (
        "digest_skips_metadata",
        "an event's metadata left out of the coverage digest",
        "core/src/digest/event_writer.rs",
        "    if let Some(metadata) = &event.metadata {",
        "    if let Some(metadata) = event.metadata.as_ref().filter(|_| false) {",
        CORE + ["--test", "projection", "--", "digest_vectors::"],
    ),
    (
        "idle_timeout_removed",
        "a stalled provider body or stream waits for the whole-call timeout only",
        "host/src/providers/transport.rs",
        "let chunk = tokio::time::timeout(self.idle_timeout, response.chunk())",
        "let chunk = tokio::time::timeout(self.idle_timeout * 1000, response.chunk())",
        HOST + ["--test", "reliability", "--", "providers_timeouts::"],
    ),
    (
        "duplicate_result_kept",
        "a second result for one call id projected beside the first (pairing repair off)",
        "core/src/projection/materialize.rs",
        "        if site.answered {\n            self.repairs.push(Repair::DuplicateToolResultDropped {",
        "        if site.answered && false {\n            self.repairs.push(Repair::DuplicateToolResultDropped {",
        CORE + ["--lib", "--test", "projection", "--", "materialize"],
    ),
]


def apply(repo, path, old, new):
    full = os.path.join(repo, path)
    with open(full, encoding="utf-8") as f:
        text = f.read()
    count = text.count(old)
    if count != 1:
        raise SystemExit(f"stale mutant: {path} holds the old text {count} times")
    with open(full, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new))
    return text


def run(repo, command, env):
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)


def failing_tests(output):
    names = re.findall(r"^---- (\S+) stdout ----$", output, re.M)
    targets = re.findall(r"to rerun pass `([^`]+)`", output)
    return sorted(set(names)) or sorted(set(targets)) or ["(exit status only)"]


def main():
    repo = sys.argv[1]
    wanted = set(sys.argv[2:])
    env = dict(os.environ)
    env.setdefault("CONTEXTFOLD_PROPTEST_CASES", "200")
    env["CARGO_TERM_COLOR"] = "never"
    chosen = [m for m in MUTANTS if not wanted or m[0] in wanted]
    results = []
    for name, breaks, path, old, new, command in chosen:
        start = time.time()
        original = apply(repo, path, old, new)
        try:
            # Build only: the cargo part of the command (before any `--` test filters).
            cargo_part = command[: command.index("--")] if "--" in command else command
            build = run(repo, cargo_part + ["--no-run"], env)
            if build.returncode != 0:
                verdict, detail = "INVALID", build.stderr.strip().splitlines()[-5:]
            else:
                test = run(repo, command, env)
                output = test.stdout + test.stderr
                if test.returncode != 0:
                    verdict, detail = "caught", failing_tests(output)
                else:
                    verdict, detail = "MISSED", []
        finally:
            with open(os.path.join(repo, path), "w", encoding="utf-8") as f:
                f.write(original)
        seconds = int(time.time() - start)
        suite = " ".join(command[command.index("-p") + 1 :])
        results.append((name, verdict, suite, detail, seconds))
        print(f"MUTANT name={name} verdict={verdict} seconds={seconds} suite=[{suite}] "
              f"breaks=\"{breaks}\" failed={','.join(detail)}", flush=True)
    caught = sum(1 for r in results if r[1] == "caught")
    print(f"MUTANTS total={len(results)} caught={caught} "
          f"missed={sum(1 for r in results if r[1] == 'MISSED')} "
          f"invalid={sum(1 for r in results if r[1] == 'INVALID')}")
    sys.exit(0 if caught == len(results) else 1)


if __name__ == "__main__":
    main()
