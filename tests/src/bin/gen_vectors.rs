//! Writes `tests/vectors/digest.json`, `projection.json` and `compaction.json` from a seed.
//!
//! Usage: `cargo run -p contextfold-conformance --bin gen-vectors [SEED]` (default: the
//! committed seed). Commit the result; `tests/regenerate.rs` checks it.

use std::process::ExitCode;

use contextfold_conformance::{
    DEFAULT_SEED, behaviour_vectors, compaction_vectors_path, digest_vectors, digest_vectors_path,
    projection_vectors_path, render_vectors,
};

fn main() -> ExitCode {
    let seed = match std::env::args().nth(1).map(|arg| arg.parse::<u64>()) {
        None => DEFAULT_SEED,
        Some(Ok(seed)) => seed,
        Some(Err(error)) => {
            eprintln!("gen-vectors: SEED must be an unsigned integer: {error}");
            return ExitCode::from(2);
        }
    };
    let (projection, compaction) = behaviour_vectors(seed);
    let files = [
        (digest_vectors_path(), render_vectors(&digest_vectors(seed))),
        (projection_vectors_path(), render_vectors(&projection)),
        (compaction_vectors_path(), render_vectors(&compaction)),
    ];
    for (path, text) in files {
        if let Err(error) = std::fs::write(&path, &text) {
            eprintln!("gen-vectors: cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {} ({} bytes, seed {seed})", path.display(), text.len());
    }
    ExitCode::SUCCESS
}
