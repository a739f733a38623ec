//! Usage facts: what the provider reported for each model request of a session.
//!
//! Every model request the host makes (or the agent reports) leaves one
//! `model_usage_recorded` AgentRun event whose payload is the core's
//! [`UsageFact`] JSON: input tokens counted by the provider (cached ones included), cached and
//! cache-written input tokens, output tokens, the request's own uncalibrated estimate, provider
//! and model; or a context-overflow refusal with the counts the provider gave. The facts live in
//! the AgentRun ledger, outside the RuntimeEvent digest: they describe the provider, not the
//! conversation, so no checkpoint covers them. The session's [`Calibration`] is a pure function
//! of them, in ledger order ([`Store::calibration`]).

use contextfold_core::budget::{Calibration, UsageFact};

use super::Store;
use super::error::StoreError;
use super::events::{AgentRunRecord, agent_run_kind, read_agent_run_events};

impl Store {
    /// Appends one usage fact of `session_id` as a durable AgentRun event.
    pub fn append_usage_fact(
        &self,
        session_id: &str,
        run_id: &str,
        event_id: &str,
        recorded_at_ms: u64,
        fact: &UsageFact,
    ) -> Result<(), StoreError> {
        let payload = serde_json::to_value(fact).map_err(|e| StoreError::LedgerUnreadable {
            session_id: session_id.to_owned(),
            detail: format!("a usage fact does not serialize: {e}"),
        })?;
        self.append_agent_run_event(&AgentRunRecord {
            event_id: event_id.to_owned(),
            session_id: session_id.to_owned(),
            run_id: run_id.to_owned(),
            kind: agent_run_kind::USAGE_RECORDED.to_owned(),
            recorded_at_ms,
            payload,
        })
    }

    /// Every usage fact of `session_id`, in the order recorded. A recorded fact that does not
    /// parse is a typed error ([`StoreError::LedgerUnreadable`]), never silently skipped.
    pub fn usage_facts(&self, session_id: &str) -> Result<Vec<UsageFact>, StoreError> {
        let records = {
            let conn = self.lock();
            read_agent_run_events(&conn, session_id, Some(agent_run_kind::USAGE_RECORDED))?
        };
        usage_facts_of(session_id, records)
    }

    /// The calibration the session's usage facts teach, in ledger order.
    pub fn calibration(&self, session_id: &str) -> Result<Calibration, StoreError> {
        Ok(Calibration::from_facts(&self.usage_facts(session_id)?))
    }
}

/// The usage facts of `session_id` among its AgentRun `records` (every backend reads them
/// alike): one that does not parse is [`StoreError::LedgerUnreadable`], never skipped.
pub(crate) fn usage_facts_of(
    session_id: &str,
    records: Vec<super::AgentRunRecord>,
) -> Result<Vec<UsageFact>, StoreError> {
    records
        .into_iter()
        .filter(|record| record.kind == super::agent_run_kind::USAGE_RECORDED)
        .map(|record| {
            serde_json::from_value(record.payload).map_err(|e| StoreError::LedgerUnreadable {
                session_id: session_id.to_owned(),
                detail: format!("usage fact {} does not parse: {e}", record.event_id),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use contextfold_core::budget::UsageReport;

    use super::*;

    fn fact(estimate: u64, input: u64) -> UsageFact {
        UsageFact {
            provider: "openai".into(),
            model: "gpt-5".into(),
            estimated_input_tokens: estimate,
            report: UsageReport::Response {
                input_tokens: input,
                cached_input_tokens: input / 2,
                cache_write_tokens: 0,
                output_tokens: 7,
            },
        }
    }

    #[test]
    fn facts_survive_a_reopen_and_teach_the_calibration() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("usage.sqlite");
        {
            let store = Store::open(&path)?;
            store.append_usage_fact("s", "run-t1", "u1", 1, &fact(1_000, 1_400))?;
            store.append_usage_fact("s", "run-t1", "u2", 2, &fact(2_000, 2_200))?;
            store.append_usage_fact("other", "run-t1", "u3", 3, &fact(1_000, 5_000))?;
        }
        let store = Store::open(&path)?;
        assert_eq!(store.usage_facts("s")?, vec![fact(1_000, 1_400), fact(2_000, 2_200)]);
        assert_eq!(store.calibration("s")?.ratio_permille("openai", "gpt-5"), 1_428);
        assert_eq!(store.calibration("other")?.ratio_permille("openai", "gpt-5"), 5_100);
        assert!(store.usage_facts("none")?.is_empty());
        Ok(())
    }
}
