//! Projection cost against the SHA-256 floor (issue: cold projection of a 10,000-event /
//! ~50 MB session, full prefix verification included, within 1.3x of SHA-256 alone over the
//! same serialized bytes), and the steady state with a resumed prefix hasher.
//!
//! Run: `cargo bench -p contextfold-core --bench projection`. The ratios are printed by
//! `bench/run.sh`, which reads criterion's estimates (docs/performance.md).

use std::hint::black_box;

use contextfold_core::CharEstimator;
use contextfold_core::checkpoint::VerifiedPrefix;
use contextfold_core::digest::{canonical_event_json, digest_prefix};
use contextfold_core::projection::{project, project_with};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sha2::{Digest, Sha256};

#[path = "support/session.rs"]
mod session;
use session::ColdCase;

fn cold_projection(c: &mut Criterion) {
    cold_group(c, "cold_10k", 2_500);
    cold_group(c, "cold_100_in_cache", 25);
}

fn cold_group(c: &mut Criterion, name: &str, turns: usize) {
    let case = ColdCase::new(turns);
    let (events, bytes) = (&case.events[..], &case.bytes[..]);
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("sha256_only", |b| b.iter(|| Sha256::digest(black_box(bytes))));
    group.bench_function("digest_prefix", |b| b.iter(|| digest_prefix(black_box(events))));
    group.bench_function("canonical_json_only", |b| {
        b.iter(|| events.iter().map(|e| canonical_event_json(black_box(e)).len()).sum::<usize>())
    });
    group.bench_function("project_with_checkpoint", |b| {
        b.iter(|| project(black_box(&case.input()), &CharEstimator).expect("projects"))
    });
    group.finish();
}

/// Projecting the next request with a warm per-session cache: a 100,000-event session should
/// cost at most 2x a 1,000-event one (both with a 40-event uncovered tail).
fn steady_state(c: &mut Criterion) {
    let mut group = c.benchmark_group("steady_state");
    group.sample_size(20);
    for turns in [250usize, 25_000] {
        let case = ColdCase::new(turns);
        let input = case.input();
        let mut cache = VerifiedPrefix::new();
        project_with(&input, &CharEstimator, &mut cache).expect("warms the cache");
        group.bench_function(format!("project_cached_{}", case.events.len()), |b| {
            b.iter(|| {
                project_with(black_box(&input), &CharEstimator, &mut cache).expect("projects")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, cold_projection, steady_state);
criterion_main!(benches);
