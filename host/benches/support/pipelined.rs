//! The host's two-thread cold path, shared by the `cold_pipeline` (criterion) and
//! `cold_paired` benches: digest and project with [`PipelinedSha256`] as the SHA-256 engine.

use std::hint::black_box;

use contextfold_core::checkpoint::FullVerificationWith;
use contextfold_core::digest::{PrefixHasher, digest_prefix};
use contextfold_core::projection::{ProjectInput, Projection, project, project_with};
use contextfold_core::{CharEstimator, RuntimeEvent};
use contextfold_host::hashing::PipelinedSha256;

/// The source digest of `events`, hashed on a second thread.
pub(crate) fn pipelined_digest(events: &[RuntimeEvent]) -> String {
    let mut hasher = PrefixHasher::with_engine(PipelinedSha256::default());
    events.iter().for_each(|event| hasher.push(black_box(event)));
    hasher.digest()
}

/// `project_with` a from-scratch verification hashing on a second thread.
pub(crate) fn pipelined_project(input: &ProjectInput<'_>) -> Projection {
    let mut verifier = FullVerificationWith::<PipelinedSha256>::default();
    project_with(black_box(input), &CharEstimator, &mut verifier).expect("projects")
}

/// Panics unless the two-thread path gives the core's own digest and projection.
pub(crate) fn assert_agrees_with_the_core(events: &[RuntimeEvent], input: &ProjectInput<'_>) {
    assert_eq!(pipelined_digest(events), digest_prefix(events), "the pipelined digest differs");
    let expected = project(input, &CharEstimator).expect("projects");
    assert_eq!(pipelined_project(input), expected, "the pipelined projection differs");
}
