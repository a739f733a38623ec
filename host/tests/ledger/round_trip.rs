//! Append and load: the same events read back, and the same stored bytes and derived columns
//! on PostgreSQL as on SQLite, so a checkpoint's coverage is proven from either's rows.

use contextfold_core::checkpoint::coverage_of;
use contextfold_core::digest::PrefixHasher;
use contextfold_host::ledger::StoredRow;

use super::support::{backends, log};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_round_trip_with_the_same_stored_bytes_on_both_backends() {
    let events = log("s", 6);
    let mut stored: Vec<(&'static str, Vec<StoredRow>)> = Vec::new();
    for backend in backends("round_trip").await {
        let ledger = &backend.ledger;
        ledger.append_events("s", events[..10].to_vec()).await.expect("append");
        ledger.append_events("s", events[10..].to_vec()).await.expect("append the rest");
        assert_eq!(ledger.load_events("s").await.expect("load"), events, "{}", backend.name());
        assert_eq!(
            ledger.load_events_after("s", events[9].seq).await.expect("after"),
            events[10..]
        );
        assert_eq!(
            ledger.event_id_at("s", events[3].seq).await.expect("id at"),
            Some(events[3].runtime_event_id.clone())
        );
        assert_eq!(ledger.last_seq("s").await.expect("last"), events.last().map(|e| e.seq));
        let rows = ledger.stored_rows("s", None, usize::MAX).await.expect("rows");
        assert!(rows.iter().any(|row| row.canonical) && rows.iter().any(|row| !row.canonical));

        // The coverage of a prefix, proven from the stored rows alone (canonical rows hashed as
        // stored, the others parsed), equals the digest over the events.
        let mut hasher = PrefixHasher::new();
        for (row, event) in rows.iter().zip(&events).take(13) {
            if row.canonical {
                hasher.push_canonical(row.event_json.as_bytes());
            } else {
                hasher.push(event);
            }
        }
        let expected = coverage_of(&events[..13]).expect("coverage");
        assert_eq!(hasher.digest(), expected.source_digest, "{}", backend.name());

        // Content-addressed archive: the same bytes are one row at one address.
        let body = b"a large tool result".to_vec();
        let first = ledger.archive_put("s", body.clone()).await.expect("archive");
        let again = ledger.archive_put("s", body.clone()).await.expect("archive again");
        assert_eq!(first, again);
        let held = ledger
            .archive_body("s", first.content_sha256(), first.byte_size())
            .await
            .expect("read");
        assert_eq!(held, Some(body));
        stored.push((backend.name(), rows));
    }
    if let [(_, sqlite), (_, postgres)] = stored.as_slice() {
        assert_eq!(postgres, sqlite, "PostgreSQL stores SQLite's bytes and derived columns");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_facts_circuit_and_run_events_read_back_in_order() {
    use contextfold_core::budget::{Calibration, UsageFact, UsageReport};
    use contextfold_host::storage::{AgentRunRecord, agent_run_kind};
    let fact = |input| UsageFact {
        provider: "openai".into(),
        model: "gpt-5".into(),
        estimated_input_tokens: 1_000,
        report: UsageReport::Response {
            input_tokens: input,
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 7,
        },
    };
    for backend in backends("agent_run").await {
        let ledger = &backend.ledger;
        ledger.append_usage_fact("s", "r", "u1", 1, fact(1_400)).await.expect("fact");
        ledger.append_usage_fact("s", "r", "u2", 2, fact(1_600)).await.expect("fact");
        assert_eq!(ledger.usage_facts("s").await.expect("facts"), vec![fact(1_400), fact(1_600)]);
        let learned = ledger.calibration("s").await.expect("calibration");
        let expected = Calibration::from_facts(&[fact(1_400), fact(1_600)]);
        assert_eq!(
            learned.ratio_permille("openai", "gpt-5"),
            expected.ratio_permille("openai", "gpt-5"),
            "{}",
            backend.name()
        );
        assert!(ledger.latest_circuit("s").await.expect("circuit").is_none());
        let outcome = AgentRunRecord {
            event_id: "o1".into(),
            session_id: "s".into(),
            run_id: "r".into(),
            kind: agent_run_kind::COMPACTION_OUTCOME.into(),
            recorded_at_ms: 3,
            payload: serde_json::json!({"circuit": {"fingerprints": []}}),
        };
        ledger.append_agent_run_event(outcome).await.expect("outcome");
        assert!(ledger.latest_circuit("s").await.expect("circuit").is_some(), "{}", backend.name());
        let kinds: Vec<String> = ledger
            .agent_run_events("s")
            .await
            .expect("events")
            .into_iter()
            .map(|record| record.event_id)
            .collect();
        assert_eq!(kinds, ["u1", "u2", "o1"], "{}", backend.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_opening_a_new_database_at_once_migrate_it_once() {
    let Some(backend) = super::support::postgres("first_open").await else { return };
    let Some(pg) = &backend.pg else { return };
    // The support already migrated it: start again from an empty database, several times.
    let client = pg.client(None).await;
    for round in 0..5 {
        client
            .batch_execute(
                "DROP TABLE schema_version, runtime_events, agent_run_events, \
                 checkpoint_projection, tool_result_archive, ledger_meta CASCADE; \
                 DROP FUNCTION contextfold_append_only() CASCADE",
            )
            .await
            .expect("empty the database");
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let config = pg.config.clone();
                tokio::spawn(async move {
                    contextfold_host::ledger::postgres::PgLedger::connect(&config).await.map(|_| ())
                })
            })
            .collect();
        for open in opens {
            open.await
                .expect("join")
                .unwrap_or_else(|e| panic!("round {round}: every open succeeds: {e}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_event_rows_are_compressed_with_lz4_where_the_server_has_it() {
    let Some(backend) = super::support::postgres("lz4").await else { return };
    let Some(pg) = &backend.pg else { return };
    let client = pg.client(None).await;
    let lz4 = client
        .query_one(
            "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'",
            &[],
        )
        .await
        .expect("settings")
        .get::<_, bool>(0);
    let compressed = client
        .query_one(
            "SELECT attcompression = 'l' FROM pg_attribute \
             WHERE attrelid = 'runtime_events'::regclass AND attname = 'event_json'",
            &[],
        )
        .await
        .expect("attribute")
        .get::<_, bool>(0);
    assert_eq!(compressed, lz4, "event_json is lz4 exactly when the server has lz4");
    let version = client
        .query_one("SELECT max(version) FROM schema_version", &[])
        .await
        .expect("version")
        .get::<_, Option<i32>>(0);
    assert_eq!(version, Some(contextfold_host::ledger::postgres::PG_SCHEMA_VERSION as i32));
}
