//! Many writers on one session: every writer picks the next `seq` from what it last read and
//! retries when another writer took it. The ledger must end contiguous, hold every
//! acknowledged append exactly once, and commit in `seq` order, so that a reader tailing
//! `seq > last` (the runtime's log cache) never misses a row.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use contextfold_core::RuntimeEvent;
use contextfold_host::ledger::Ledger;
use contextfold_host::storage::StoreError;

use super::support::{backends, event_at};

const WRITERS: usize = 8;
const APPENDS_PER_WRITER: usize = 25;

/// Appends `APPENDS_PER_WRITER` events as writer `writer`, each at the ledger's last `seq`
/// plus `1 + gap(i)`; returns the acknowledged ids.
async fn write(ledger: Arc<dyn Ledger>, writer: usize, gap: fn(usize) -> u64) -> Vec<String> {
    let mut acknowledged = Vec::new();
    for i in 0..APPENDS_PER_WRITER {
        let id = format!("w{writer}-{i}");
        loop {
            let last = ledger.last_seq("s").await.expect("last seq");
            let seq = last.map_or(0, |last| last + 1 + gap(writer + i));
            match ledger.append_events("s", vec![event_at("s", seq, &id)]).await {
                Ok(()) => break,
                Err(StoreError::EventSeqNotIncreasing { .. }) => continue,
                Err(error) if error.is_retryable() => continue,
                Err(error) => panic!("writer {writer}: {error} ({})", error.code()),
            }
        }
        acknowledged.push(id);
    }
    acknowledged
}

/// Reads `seq > last` until told to stop, then once more; returns every row it saw.
async fn tail(ledger: Arc<dyn Ledger>, done: Arc<AtomicBool>) -> Vec<RuntimeEvent> {
    let mut seen: Vec<RuntimeEvent> = Vec::new();
    loop {
        let finished = done.load(Ordering::SeqCst);
        let after = seen.last().map(|event| event.seq);
        let new = match after {
            Some(after) => ledger.load_events_after("s", after).await,
            None => ledger.load_events("s").await,
        };
        seen.extend(new.expect("tail"));
        if finished {
            return seen;
        }
        tokio::task::yield_now().await;
    }
}

/// Runs the writers and a tailing reader; returns (acknowledged ids, ledger, rows tailed).
async fn race(
    ledger: &Arc<dyn Ledger>,
    gap: fn(usize) -> u64,
) -> (Vec<String>, Vec<RuntimeEvent>, Vec<RuntimeEvent>) {
    let done = Arc::new(AtomicBool::new(false));
    let tailer = tokio::spawn(tail(Arc::clone(ledger), Arc::clone(&done)));
    let writers: Vec<_> =
        (0..WRITERS).map(|w| tokio::spawn(write(Arc::clone(ledger), w, gap))).collect();
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.expect("writer"));
    }
    done.store(true, Ordering::SeqCst);
    let tailed = tailer.await.expect("tailer");
    (acknowledged, ledger.load_events("s").await.expect("load"), tailed)
}

/// Every acknowledged id is in the ledger exactly once, and nothing else is.
fn assert_exactly_once(name: &str, acknowledged: &[String], ledger: &[RuntimeEvent]) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for event in ledger {
        *counts.entry(event.runtime_event_id.as_str()).or_default() += 1;
    }
    assert_eq!(ledger.len(), acknowledged.len(), "{name}: rows vs acknowledged appends");
    for id in acknowledged {
        assert_eq!(counts.get(id.as_str()), Some(&1), "{name}: {id} must be present once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_on_one_session_leave_seq_contiguous() {
    for backend in backends("contiguous").await {
        let (acknowledged, ledger, tailed) = race(&backend.ledger, |_| 0).await;
        let name = backend.name();
        assert_exactly_once(name, &acknowledged, &ledger);
        let seqs: Vec<u64> = ledger.iter().map(|event| event.seq).collect();
        let expected: Vec<u64> = (0..(WRITERS * APPENDS_PER_WRITER) as u64).collect();
        assert_eq!(seqs, expected, "{name}: seq is contiguous from 0");
        assert_eq!(tailed, ledger, "{name}: the tailing reader saw every row, in order");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_that_skip_seqs_still_commit_in_seq_order() {
    for backend in backends("commit_order").await {
        let (acknowledged, ledger, tailed) = race(&backend.ledger, |n| (n % 3) as u64).await;
        let name = backend.name();
        assert_exactly_once(name, &acknowledged, &ledger);
        assert!(ledger.windows(2).all(|pair| pair[0].seq < pair[1].seq), "{name}: increasing");
        assert_eq!(
            tailed.len(),
            ledger.len(),
            "{name}: a row committed below a seq the tailing reader had read was missed"
        );
        assert_eq!(tailed, ledger, "{name}: the tailing reader saw every row, in order");
    }
}
