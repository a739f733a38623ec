//! The host's cold path against the SHA-256 floor: the same generated 10,000-event / ~50 MB
//! session as the core's `cold_10k` group, digested and projected with the core's default
//! single-threaded engine and with [`PipelinedSha256`](contextfold_host::hashing::PipelinedSha256) (canonical JSON written on the calling
//! thread while a second thread hashes it). Goal (issue #7): at most 1.3x SHA-256 alone.
//!
//! Run: `cargo bench -p contextfold-host --bench cold_pipeline` (criterion group
//! `cold_10k_pipelined`; `bench/run.sh` prints the ratios).

use std::hint::black_box;

use contextfold_core::CharEstimator;
use contextfold_core::digest::digest_prefix;
use contextfold_core::projection::project;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sha2::{Digest, Sha256};

#[path = "../../core/benches/support/session.rs"]
mod session;
use session::ColdCase;
#[path = "support/pipelined.rs"]
mod pipelined;
use pipelined::{assert_agrees_with_the_core, pipelined_digest, pipelined_project};

fn cold_pipelined(c: &mut Criterion) {
    let case = ColdCase::new(2_500);
    let (events, bytes, input) = (&case.events[..], &case.bytes[..], case.input());
    assert_agrees_with_the_core(events, &input);

    let mut group = c.benchmark_group("cold_10k_pipelined");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("sha256_only", |b| b.iter(|| Sha256::digest(black_box(bytes))));
    group.bench_function("digest_single_thread", |b| b.iter(|| digest_prefix(black_box(events))));
    group.bench_function("digest_pipelined", |b| b.iter(|| pipelined_digest(events)));
    group.bench_function("project_single_thread", |b| {
        b.iter(|| project(black_box(&input), &CharEstimator).expect("projects"))
    });
    group.bench_function("project_pipelined", |b| b.iter(|| pipelined_project(&input)));
    group.finish();
}

criterion_group!(benches, cold_pipelined);
criterion_main!(benches);
