//! PostgreSQL's one loop over a session's stored rows ([`PgLedger::scan_rows`]), streamed as
//! the server sends them (`query_raw`), and the cold paths built on it with the visitors every
//! backend shares (`storage/scan.rs`): a checkpoint's coverage proven from the rows
//! (`storage/covered.rs`), every recorded checkpoint verified and every row's derived columns
//! recomputed (`storage/sweep.rs`). Memory holds what the visitor keeps, never the ledger.

use std::pin::pin;

use contextfold_core::budget::TokenEstimator;
use contextfold_core::checkpoint::HistoryCompactCheckpoint;
use futures_util::TryStreamExt;

use super::{PgError, PgLedger};
use crate::storage::{
    CheckpointSweep, CheckpointSweeper, CoveredLog, CoveredReader, ROW_COLUMNS, RowCheck,
    RowChecker, RowView, RowVisitor, StoreError, TOKENS_ESTIMATOR_KEY,
};

impl PgLedger {
    /// Feeds `session_id`'s rows to `visitor` in `seq` order until it stops or they end; one
    /// statement, so one snapshot.
    pub(crate) async fn scan_rows(
        &self,
        session_id: &str,
        visitor: &mut dyn RowVisitor,
    ) -> Result<(), StoreError> {
        let client = self.client("streaming the ledger").await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM runtime_events WHERE session_id = $1 ORDER BY seq"
            ))
            .await
            .map_err(PgError::during("preparing the streamed ledger read"))?;
        let rows = client
            .query_raw(&statement, [session_id])
            .await
            .map_err(PgError::during("streaming the ledger"))?;
        let mut rows = pin!(rows);
        while let Some(row) =
            rows.try_next().await.map_err(PgError::during("reading a ledger row"))?
        {
            let json: &str = row.get(2);
            let view = RowView {
                seq: row.get::<_, i64>(0) as u64,
                id: row.get(1),
                json: json.as_bytes(),
                canonical: row.get(3),
                turn: row.get(4),
                run: row.get(5),
                live_head: row.get(6),
                tokens: row.get::<_, Option<i64>>(7).map(|t| t.max(0) as u64),
            };
            if !visitor.visit(view)? {
                break;
            }
        }
        Ok(())
    }

    /// Proves `checkpoint`'s coverage of `session_id` from the stored rows
    /// ([`crate::storage::Store::read_covered`]'s contract): `None` when the rows do not match.
    pub async fn read_covered(
        &self,
        session_id: &str,
        checkpoint: &HistoryCompactCheckpoint,
        estimator: &(dyn TokenEstimator + Send + Sync),
    ) -> Result<Option<CoveredLog>, StoreError> {
        let ledger_estimator: Option<String> = {
            let client = self.client("reading the ledger's token estimator").await?;
            client
                .query_opt("SELECT value FROM ledger_meta WHERE key = $1", &[&TOKENS_ESTIMATOR_KEY])
                .await
                .map_err(PgError::during("reading the ledger's token estimator"))?
                .map(|row| row.get(0))
        };
        let Some(mut reader) =
            CoveredReader::new(session_id, checkpoint, estimator, ledger_estimator.as_deref())
        else {
            return Ok(None);
        };
        self.scan_rows(session_id, &mut reader).await?;
        reader.finish()
    }

    /// Checks every one of `checkpoints` against `session_id`'s ledger in one streamed pass
    /// ([`crate::storage::Store::verify_checkpoints`]'s contract).
    pub async fn verify_checkpoints(
        &self,
        session_id: &str,
        checkpoints: &[HistoryCompactCheckpoint],
    ) -> Result<CheckpointSweep, StoreError> {
        let events = self.event_count(session_id).await?;
        let mut sweeper = CheckpointSweeper::new(session_id, checkpoints);
        self.scan_rows(session_id, &mut sweeper).await?;
        Ok(sweeper.finish(events))
    }

    /// Parses every row and recomputes its derived columns
    /// ([`crate::storage::Store::check_rows`]'s contract).
    pub async fn check_rows(&self, session_id: &str) -> Result<RowCheck, StoreError> {
        let mut checker = RowChecker::new(session_id);
        self.scan_rows(session_id, &mut checker).await?;
        Ok(checker.finish())
    }

    /// The number of events of `session_id`.
    pub async fn event_count(&self, session_id: &str) -> Result<u64, StoreError> {
        let client = self.client("counting events").await?;
        let count: i64 = client
            .query_one("SELECT count(*) FROM runtime_events WHERE session_id = $1", &[&session_id])
            .await
            .map_err(PgError::during("counting events"))?
            .get(0);
        Ok(count.max(0) as u64)
    }

    /// Every session with at least one event, with its event count, sorted by id.
    pub async fn session_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let client = self.client("listing sessions").await?;
        let rows = client
            .query(
                "SELECT session_id, count(*) FROM runtime_events GROUP BY session_id \
                 ORDER BY session_id",
                &[],
            )
            .await
            .map_err(PgError::during("listing sessions"))?;
        Ok(rows.iter().map(|row| (row.get(0), row.get::<_, i64>(1).max(0) as u64)).collect())
    }
}
