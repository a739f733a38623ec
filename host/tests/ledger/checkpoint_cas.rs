//! The checkpoint compare-and-swap: of two successors of the same tip appended at once,
//! exactly one is recorded, the other gets the typed conflict, and the projection row is the
//! winner's, in the same transaction as its AgentRun event.

use contextfold_host::storage::{LookupSource, agent_run_kind};

use super::support::{backends, checkpoint, log};

const ROUNDS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_two_racing_successors_exactly_one_wins() {
    for backend in backends("checkpoint_cas").await {
        let name = backend.name();
        let ledger = &backend.ledger;
        let events = log("s", 6);
        ledger.append_events("s", events.clone()).await.expect("append");
        ledger
            .append_checkpoint("ar-0", "r", 0, checkpoint(&events, 2, "cp-0", None))
            .await
            .expect("cp");
        let mut tip = "cp-0".to_owned();
        for round in 1..=ROUNDS {
            let covered = 2 + round;
            let (a, b) = (format!("cp-{round}a"), format!("cp-{round}b"));
            let append = |id: String| {
                let ledger = std::sync::Arc::clone(ledger);
                let candidate = checkpoint(&events, covered, &id, Some(&tip));
                tokio::spawn(async move {
                    let result =
                        ledger.append_checkpoint(&format!("ar-{id}"), "r", 1, candidate).await;
                    (id, result)
                })
            };
            let (first, second) = (append(a), append(b));
            let results = [first.await.expect("task"), second.await.expect("task")];
            let winners: Vec<&String> =
                results.iter().filter(|(_, result)| result.is_ok()).map(|(id, _)| id).collect();
            assert_eq!(winners.len(), 1, "{name} round {round}: exactly one wins: {results:?}");
            for (_, result) in &results {
                if let Err(error) = result {
                    assert!(error.is_conflict(), "{name}: the loser's error is typed: {error}");
                    assert_eq!(error.code(), "successor_conflict");
                }
            }
            let lookup = ledger.current_checkpoint("s").await.expect("lookup");
            assert_eq!(lookup.source, LookupSource::Projection, "{name}: the row is valid");
            let current = lookup.checkpoint.expect("a tip");
            assert_eq!(&current.checkpoint_id, winners[0], "{name}: the row is the winner's");
            assert_eq!(lookup.agent_run_event_id, Some(format!("ar-{}", winners[0])));
            tip = current.checkpoint_id;
        }
        let recorded = ledger
            .agent_run_events("s")
            .await
            .expect("runs")
            .into_iter()
            .filter(|record| record.kind == agent_run_kind::CHECKPOINT_RECORDED)
            .count();
        assert_eq!(recorded, ROUNDS + 1, "{name}: one checkpoint event per round, no loser's");
    }
}
