//! Test ledgers: a SQLite file, and a fresh PostgreSQL database per test.

use std::io::Write as _;
use std::sync::Arc;

use contextfold_core::checkpoint::{CheckpointProjection, Coverage, HighWater, coverage_of};
use contextfold_core::{HistoryCompactCheckpoint, LogBuilder, RuntimeEvent};
use contextfold_host::ledger::postgres::{PgLedger, PgLedgerConfig};
use contextfold_host::ledger::{Ledger, SqliteLedger};
use serde_json::json;

/// One backend under test.
pub(crate) struct TestLedger {
    /// The ledger.
    pub(crate) ledger: Arc<dyn Ledger>,
    /// The database's name and its admin URL, on PostgreSQL.
    pub(crate) pg: Option<PgDatabase>,
    /// The SQLite file's directory (kept alive), on SQLite.
    pub(crate) sqlite: Option<(tempfile::TempDir, std::path::PathBuf)>,
}

impl TestLedger {
    /// `sqlite` or `postgres`, for messages.
    pub(crate) fn name(&self) -> &'static str {
        if self.pg.is_some() { "postgres" } else { "sqlite" }
    }
}

/// A PostgreSQL database made for one test.
pub(crate) struct PgDatabase {
    /// The server's settings, connected to the test's database as the cluster's superuser.
    pub(crate) config: PgLedgerConfig,
    /// The test's database.
    pub(crate) dbname: String,
}

impl PgDatabase {
    /// The test database's URL (the server's, with its database name).
    pub(crate) fn url(&self) -> String {
        let url = std::env::var("CONTEXTFOLD_PG_URL").expect("CONTEXTFOLD_PG_URL");
        let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
        format!("{base}/{}", self.dbname)
    }

    /// A raw client on the test's database as `user` (the superuser by default).
    pub(crate) async fn client(&self, user: Option<&str>) -> tokio_postgres::Client {
        let url = std::env::var("CONTEXTFOLD_PG_URL").expect("CONTEXTFOLD_PG_URL");
        let mut config: tokio_postgres::Config = url.parse().expect("the URL parses");
        config.dbname(&self.dbname);
        if let Some(user) = user {
            config.user(user);
        }
        let (client, connection) =
            config.connect(tokio_postgres::NoTls).await.expect("connect to the test database");
        tokio::spawn(connection);
        client
    }
}

/// A SQLite ledger on a temp file.
pub(crate) async fn sqlite() -> TestLedger {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.sqlite");
    let ledger = SqliteLedger::open(&path).await.expect("open the SQLite ledger");
    TestLedger { ledger: Arc::new(ledger), pg: None, sqlite: Some((dir, path)) }
}

/// A PostgreSQL ledger in a new database `cf_<test>_<pid>`, or `None` (said on stderr) when
/// `CONTEXTFOLD_PG_URL` is not set.
pub(crate) async fn postgres(test: &str) -> Option<TestLedger> {
    let Ok(url) = std::env::var("CONTEXTFOLD_PG_URL") else {
        // Straight to stderr: the test harness captures `eprintln!` of passing tests.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED postgres half of `{test}`: CONTEXTFOLD_PG_URL is not set \
             (run under scripts/with-postgres.sh)"
        );
        return None;
    };
    let admin = PgLedgerConfig::from_url(&url).expect("CONTEXTFOLD_PG_URL parses");
    let dbname = format!("cf_{test}_{}", std::process::id());
    let (client, connection) = url
        .parse::<tokio_postgres::Config>()
        .expect("the URL parses")
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect to the server");
    tokio::spawn(connection);
    for sql in [format!("DROP DATABASE IF EXISTS {dbname}"), format!("CREATE DATABASE {dbname}")] {
        client.batch_execute(&sql).await.expect("create the test database");
    }
    let config = admin.with_dbname(&dbname);
    let ledger = PgLedger::connect(&config).await.expect("connect the PostgreSQL ledger");
    Some(TestLedger {
        ledger: Arc::new(ledger),
        pg: Some(PgDatabase { config, dbname }),
        sqlite: None,
    })
}

/// SQLite, then PostgreSQL when a server is named.
pub(crate) async fn backends(test: &str) -> Vec<TestLedger> {
    let mut all = vec![sqlite().await];
    all.extend(postgres(test).await);
    all
}

/// A session of `turns` turns (user, tool call with arguments in the model's key order, tool
/// result, assistant); the arguments make some rows non-canonical (JCS would sort their keys).
pub(crate) fn log(session: &str, turns: usize) -> Vec<RuntimeEvent> {
    let mut builder = LogBuilder::new(session);
    for turn in 0..turns {
        builder.turn(&format!("t{turn}")).user(&format!("request {turn}: ünïcödé ✓ \"quoted\""));
        builder.tool_call(
            &format!("c{turn}"),
            "shell",
            json!({"z": 1.0, "cmd": "ls", "a": [1, 2]}),
        );
        builder.tool_result(&format!("c{turn}"), "shell", json!(format!("src\ntests\n{turn}")));
        builder.assistant("done");
    }
    builder.build()
}

/// One user event of `session` at `seq` with id `id` (for writers that choose their `seq`).
pub(crate) fn event_at(session: &str, seq: u64, id: &str) -> RuntimeEvent {
    let mut builder = LogBuilder::new(session);
    builder.turn(&format!("turn-{id}")).user(&format!("from {id}"));
    let mut event = builder.build().remove(0);
    event.seq = seq;
    event.runtime_event_id = id.to_owned();
    event
}

/// A summary checkpoint over `events[..covered]`, naming `previous`.
pub(crate) fn checkpoint(
    events: &[RuntimeEvent],
    covered: usize,
    id: &str,
    previous: Option<&str>,
) -> HistoryCompactCheckpoint {
    let coverage: Coverage = coverage_of(&events[..covered]).expect("non-empty prefix");
    HistoryCompactCheckpoint {
        checkpoint_id: id.into(),
        session_id: events[0].session_id.clone(),
        created_at_ms: 1,
        high_water: HighWater { name: "manual".into(), seq: events[covered - 1].seq },
        coverage,
        projection: CheckpointProjection::Summary(
            "## Goal\nx\n## Progress\nx\n## Next Steps\nx\n## Critical Context\nx".into(),
        ),
        limitations: vec![],
        estimated_tokens: 10,
        previous_checkpoint_id: previous.map(str::to_owned),
        produced_by: Some("test".into()),
        manifest: None,
    }
}
