//! One streamed pass over a session's stored rows, shared by every backend.
//!
//! The cold paths read the ledger row by row in `seq` order and never hold it: proving a
//! checkpoint's coverage (`covered.rs`), verifying every recorded checkpoint and recomputing
//! each row's derived columns (`sweep.rs`). What they do with a row is a [`RowVisitor`]; how
//! rows reach it is the backend's one loop: [`Store::scan_rows`] over a rusqlite statement here,
//! `PgLedger::scan_rows` over a `query_raw` stream on PostgreSQL. A visitor is written once and
//! runs on both.

use rusqlite::params;

use super::covered::RowView;
use super::{Store, StoreError};

/// What one streamed pass does with each row.
pub(crate) trait RowVisitor: Send {
    /// Takes the next row; `Ok(false)` stops the pass (nothing more is needed).
    fn visit(&mut self, row: RowView<'_>) -> Result<bool, StoreError>;
}

/// The rows' columns, in [`RowView`] order.
pub(crate) const ROW_COLUMNS: &str =
    "seq, runtime_event_id, event_json, canonical, turn_id, run_id, live_head, tokens";

impl Store {
    /// Feeds `session_id`'s rows to `visitor` in `seq` order until it stops or they end, in one
    /// read transaction (a consistent snapshot).
    pub(crate) fn scan_rows(
        &self,
        session_id: &str,
        visitor: &mut dyn RowVisitor,
    ) -> Result<(), StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM runtime_events WHERE session_id = ?1 ORDER BY seq"
            ))
            .map_err(StoreError::sqlite("preparing the streamed ledger read"))?;
        let mut rows = statement
            .query(params![session_id])
            .map_err(StoreError::sqlite("streaming the ledger"))?;
        let read = |e| StoreError::Sqlite { operation: "reading a ledger row", source: e };
        while let Some(row) = rows.next().map_err(read)? {
            let text = |index: usize| row.get_ref(index).and_then(|v| Ok(v.as_str()?));
            let view = RowView {
                seq: row.get::<_, i64>(0).map_err(read)? as u64,
                id: text(1).map_err(read)?,
                json: row.get_ref(2).and_then(|v| Ok(v.as_bytes()?)).map_err(read)?,
                canonical: row.get(3).map_err(read)?,
                turn: text(4).map_err(read)?,
                run: text(5).map_err(read)?,
                live_head: row.get(6).map_err(read)?,
                tokens: row.get::<_, Option<i64>>(7).map_err(read)?.map(|t| t.max(0) as u64),
            };
            if !visitor.visit(view)? {
                break;
            }
        }
        Ok(())
    }
}
