//! A checkpoint's coverage proven from PostgreSQL's stored rows, in one streamed pass: the same
//! [`CoveredReader`] the SQLite store feeds (`storage/covered.rs`), fed rows as the server sends
//! them (`query_raw`), so memory holds one turn's head and the tail, never the covered events,
//! whatever the ledger's size.

use std::pin::pin;

use contextfold_core::budget::TokenEstimator;
use contextfold_core::checkpoint::HistoryCompactCheckpoint;
use futures_util::TryStreamExt;

use super::{PgError, PgLedger};
use crate::storage::{CoveredLog, CoveredReader, RowView, StoreError, TOKENS_ESTIMATOR_KEY};

impl PgLedger {
    /// Proves `checkpoint`'s coverage of `session_id` from the stored rows
    /// ([`crate::storage::Store::read_covered`]'s contract): `None` when the rows do not match.
    pub async fn read_covered(
        &self,
        session_id: &str,
        checkpoint: &HistoryCompactCheckpoint,
        estimator: &(dyn TokenEstimator + Send + Sync),
    ) -> Result<Option<CoveredLog>, StoreError> {
        let client = self.client("proving a checkpoint from the rows").await?;
        let ledger_estimator: Option<String> = client
            .query_opt("SELECT value FROM ledger_meta WHERE key = $1", &[&TOKENS_ESTIMATOR_KEY])
            .await
            .map_err(PgError::during("reading the ledger's token estimator"))?
            .map(|row| row.get(0));
        let Some(mut reader) =
            CoveredReader::new(session_id, checkpoint, estimator, ledger_estimator.as_deref())
        else {
            return Ok(None);
        };
        let statement = client
            .prepare_cached(
                "SELECT seq, runtime_event_id, event_json, canonical, turn_id, run_id, \
                 live_head, tokens FROM runtime_events WHERE session_id = $1 ORDER BY seq",
            )
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
            if !reader.push(view)? {
                return Ok(None);
            }
        }
        reader.finish()
    }
}
