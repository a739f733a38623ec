//! Continuation quality: what a compaction keeps, scored on real trajectories and generated
//! long turns, and the quality gate over real HTTP; what compaction adds to an agent's steps with
//! and without background preparation. The full runs are `#[ignore]`d (`bench/quality.sh`,
//! `bench/background.sh`).

#[path = "../cli_support/mod.rs"]
mod cli_support;
#[path = "../quality_support/mod.rs"]
mod quality_support;
#[path = "../runtime_support/mod.rs"]
mod runtime_support;

mod background_latency;
mod continuation_quality;
mod quality_gate;
