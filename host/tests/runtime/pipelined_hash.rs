//! `PipelinedSha256` computes plain SHA-256: byte streams split at arbitrary points on both
//! sides of the pipeline threshold, copies taken mid-stream, and whole event prefixes through
//! the core's `PrefixHasher` all give the single-threaded digest.

use contextfold_core::digest::{HashEngine, PrefixHasher, digest_prefix};
use contextfold_core::{LogBuilder, RuntimeEvent};
use contextfold_host::hashing::{CHUNK_SIZE, PIPELINE_THRESHOLD, PipelinedSha256};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

/// `len` bytes of a fixed pseudo-random sequence (xorshift).
fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Feeds `data` in pieces of the given sizes (cycled), then the rest.
fn pipelined(data: &[u8], pieces: &[usize]) -> ([u8; 32], bool) {
    let mut engine = PipelinedSha256::default();
    let mut rest = data;
    for &size in pieces.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at(size.clamp(1, rest.len()));
        engine.update(now);
        rest = later;
    }
    let started = engine.is_pipelined();
    (engine.finish(), started)
}

fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

#[test]
fn small_inputs_hash_inline_and_large_ones_on_the_worker() {
    let threshold = PIPELINE_THRESHOLD as usize;
    for (len, on_worker) in [(0, false), (1, false), (threshold - 1, false), (threshold, true)] {
        let data = bytes(len, 7);
        let (digest, started) = pipelined(&data, &[len.max(1)]);
        assert_eq!(digest, sha256(&data), "length {len}");
        assert_eq!(started, on_worker, "length {len}");
    }
}

#[test]
fn chunk_boundaries_and_odd_pieces_give_the_same_digest() {
    let data = bytes(PIPELINE_THRESHOLD as usize + 5 * CHUNK_SIZE + 333, 11);
    for pieces in [&[1usize][..], &[63, 64, 65], &[CHUNK_SIZE - 1, 2], &[16_000], &[3 * CHUNK_SIZE]]
    {
        // One-byte pieces over megabytes are slow in debug builds: cap that case.
        let data =
            if pieces == [1] { &data[..PIPELINE_THRESHOLD as usize + 70_000] } else { &data };
        let (digest, started) = pipelined(data, pieces);
        assert_eq!(digest, sha256(data), "pieces {pieces:?}");
        assert!(started, "pieces {pieces:?}");
    }
}

#[test]
fn a_copy_taken_mid_stream_holds_the_state_so_far_and_the_original_goes_on() {
    let data = bytes(3 * PIPELINE_THRESHOLD as usize, 5);
    let (head, tail) = data.split_at(2 * PIPELINE_THRESHOLD as usize + 12_345);
    let mut engine = PipelinedSha256::default();
    engine.update(head);
    assert!(engine.is_pipelined());
    let copy = engine.clone();
    assert!(!copy.is_pipelined(), "a copy hashes inline");
    let mut copy_extended = copy.clone();
    copy_extended.update(b"more");
    engine.update(tail);
    assert_eq!(copy.finish(), sha256(head));
    assert_eq!(copy_extended.finish(), sha256(&[head, b"more"].concat()));
    assert_eq!(engine.finish(), sha256(&data));
}

/// A session whose canonical bytes cross the threshold several times over.
fn session(turns: usize, output_bytes: usize) -> Vec<RuntimeEvent> {
    let line = "fn main() { println!(\"héllo 世界\\t\"); }\n";
    let output = line.repeat(output_bytes / line.len() + 1);
    let mut log = LogBuilder::new("s");
    for turn in 0..turns {
        let call = format!("c{turn}");
        log.turn(&format!("t{turn}")).user("go on");
        log.tool_call(&call, "shell", serde_json::json!({ "cmd": "cat", "turn": turn }));
        log.tool_result(&call, "shell", serde_json::json!(output));
        log.assistant("done");
    }
    log.build()
}

#[test]
fn prefix_digests_equal_the_single_threaded_ones() {
    let events = session(40, 80_000);
    let mut hasher = PrefixHasher::with_engine(PipelinedSha256::default());
    for (index, event) in events.iter().enumerate() {
        hasher.push(event);
        if index % 37 == 0 || index + 1 == events.len() {
            assert_eq!(hasher.digest(), digest_prefix(&events[..=index]), "prefix {index}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_split_of_a_large_input_gives_sha256(
        extra in 0usize..200_000,
        pieces in proptest::collection::vec(1usize..100_000, 1..6),
        seed in any::<u64>(),
    ) {
        let data = bytes(PIPELINE_THRESHOLD as usize + extra, seed);
        let (digest, started) = pipelined(&data, &pieces);
        prop_assert_eq!(digest, sha256(&data));
        prop_assert!(started);
    }
}
