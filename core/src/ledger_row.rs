//! What a ledger stores for one event: its bytes and the per-event facts a reader needs without
//! parsing them.
//!
//! Every ledger writer — the native host's SQLite store, the npm package's `node:sqlite` store
//! (through the wasm binding's `ledgerRows`) — computes a row with [`LedgerRow::of`], so a
//! ledger written by any of them holds byte-identical rows and `contextfold verify --deep`
//! (which recomputes them) accepts it. The fields:
//!
//! - [`LedgerRow::json`]: the event's canonical JSON ([`canonical_event_json`], RFC 8785 over
//!   the event's serde form), so the prefix digest is SHA-256 over the stored bytes. An event
//!   whose canonical form would not parse back to exactly the same event (object keys not in
//!   sorted order, as in most tool-call arguments; a number JCS writes as a double, such as
//!   `1.0` or an integer above 2^53) keeps its serde JSON instead;
//! - [`LedgerRow::canonical`]: whether `json` is the canonical form;
//! - [`LedgerRow::live_head`]: whether a split turn replays the event verbatim
//!   ([`is_live_head_kind`]);
//! - [`LedgerRow::tokens`]: the event's estimate by [`PieceEstimator`] (the estimator named
//!   [`LEDGER_TOKENS_ESTIMATOR`]).
//!
//! The event's `turnId` and `runId` are copied into the ledger as they are.

use serde::Serialize;

use crate::RuntimeEvent;
use crate::budget::{PIECE_ESTIMATOR_NAME, PieceEstimator, estimate_event};
use crate::digest::canonical_event_json;
use crate::projection::live_head::is_live_head_kind;

/// The name of the estimator whose estimates [`LedgerRow::tokens`] holds (a ledger records it,
/// e.g. in the native host's `ledger_meta` table under `tokens_estimator`).
pub const LEDGER_TOKENS_ESTIMATOR: &str = PIECE_ESTIMATOR_NAME;

/// One event's stored form and derived facts (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerRow {
    /// The stored JSON text of the event: canonical when that round-trips, else serde JSON.
    pub json: String,
    /// Whether [`LedgerRow::json`] is the canonical form.
    pub canonical: bool,
    /// Whether the event is of a kind a split turn replays verbatim.
    pub live_head: bool,
    /// The event's estimate by [`PieceEstimator`].
    pub tokens: u64,
}

/// Why [`LedgerRow::of`] could not compute a row.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerRowError {
    /// The event has no serde JSON form.
    #[error("the event cannot be serialized: {0}")]
    Unserializable(#[source] serde_json::Error),
}

impl LedgerRowError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            LedgerRowError::Unserializable(_) => "event_unserializable",
        }
    }
}

impl LedgerRow {
    /// The stored form of `event` and its derived facts.
    ///
    /// The canonical form is kept only when it parses back to an event whose serde JSON is the
    /// same bytes as `event`'s: equal values are not enough, since JCS sorts object keys and a
    /// tool call's arguments must reach the provider in the order the model wrote them.
    pub fn of(event: &RuntimeEvent) -> Result<LedgerRow, LedgerRowError> {
        let serde = serde_json::to_string(event).map_err(LedgerRowError::Unserializable)?;
        let canonical = canonical_event_json(event);
        let round_trips = RuntimeEvent::from_json(&canonical)
            .ok()
            .and_then(|back| serde_json::to_string(&back).ok())
            .is_some_and(|back| back == serde);
        Ok(LedgerRow {
            json: if round_trips { canonical } else { serde },
            canonical: round_trips,
            live_head: is_live_head_kind(&event.content),
            tokens: estimate_event(&PieceEstimator, event),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{EventContent, LogBuilder};

    /// An ordinary event is stored in its canonical form; one whose canonical form loses a
    /// number or reorders keys keeps its serde JSON, says so, and still parses back to itself.
    #[test]
    fn canonical_bytes_are_stored_only_when_they_parse_back_to_the_event() {
        let mut log = LogBuilder::new("s");
        log.turn("t").user("fix it");
        log.tool_call("c1", "shell", json!({"cmd": "ls", "timeout": 30}));
        log.tool_call("c3", "shell", json!({"timeout": 30, "cmd": "ls"}));
        log.tool_call("c2", "shell", json!({"ratio": 1.0, "big": 9_007_199_254_740_993u64}));
        let events = log.build();
        let plain = LedgerRow::of(&events[1]).expect("derives");
        assert!(plain.canonical && !plain.live_head);
        assert_eq!(plain.json, canonical_event_json(&events[1]));
        for lossy in &events[2..] {
            let row = LedgerRow::of(lossy).expect("derives");
            assert!(!row.canonical, "{}", row.json);
            let back = RuntimeEvent::from_json(&row.json).expect("parses");
            assert_eq!(serde_json::to_string(&back).ok(), serde_json::to_string(lossy).ok());
        }
        let user = LedgerRow::of(&events[0]).expect("derives");
        assert!(user.live_head && matches!(events[0].content, EventContent::UserText { .. }));
        assert_eq!(user.tokens, estimate_event(&PieceEstimator, &events[0]));
    }
}
