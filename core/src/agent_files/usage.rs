//! [`UsageTrail`]: the provider-reported usage of an imported session's requests, as
//! [`UsageFact`]s the calibration can learn from.
//!
//! A fact compares the provider's count of a request with contextfold's own estimate of it. A
//! session file shows the history each request carried, but not all of the request: the agent's
//! system prompt and tool schemas (thousands of tokens for Claude Code and Codex) are sent with
//! every request and written nowhere. Taking the visible history alone as the estimate would teach
//! a ratio several times too high. So the trail takes the first reported request's count beyond
//! its visible history as the hidden part (counted as it is, ratio 1), and every fact's estimate
//! is its visible history plus that hidden part. The estimator is the core's uncalibrated
//! [`CharEstimator`], the one the runtime's facts are made with.

use crate::budget::{CharEstimator, estimate_event};
use crate::calibration::{UsageFact, UsageReport};
use crate::event::RuntimeEvent;

/// The usage facts of one imported conversation, in request order.
#[derive(Debug, Default)]
pub(crate) struct UsageTrail {
    provider: String,
    /// The request history starts at this event index (moves on after the agent's own compaction).
    since: usize,
    /// Events `since..counted` are in `visible`.
    counted: usize,
    visible: u64,
    /// Tokens of every request the file does not show (system prompt, tool schemas).
    hidden: Option<u64>,
    facts: Vec<UsageFact>,
}

impl UsageTrail {
    /// A trail of requests to `provider` (`anthropic`, `openai`).
    pub(crate) fn new(provider: impl Into<String>) -> Self {
        Self { provider: provider.into(), ..Self::default() }
    }

    /// The agent compacted its own context: later requests carry `events[since..]` only (its
    /// summary note and what follows).
    pub(crate) fn restart_at(&mut self, since: usize) {
        self.since = since;
        self.counted = since;
        self.visible = 0;
    }

    /// Records a response of `model` to a request that carried `events[since..]` (the events
    /// imported before the response), with the counts the provider reported.
    pub(crate) fn record(&mut self, events: &[RuntimeEvent], model: &str, report: Counts) {
        for event in events.get(self.counted..).unwrap_or_default() {
            self.visible += estimate_event(&CharEstimator, event);
        }
        self.counted = self.counted.max(events.len());
        if report.input_tokens == 0 {
            return;
        }
        let hidden = *self.hidden.get_or_insert(report.input_tokens.saturating_sub(self.visible));
        self.facts.push(UsageFact {
            provider: self.provider.clone(),
            model: model.to_owned(),
            estimated_input_tokens: self.visible + hidden,
            report: UsageReport::Response {
                input_tokens: report.input_tokens,
                cached_input_tokens: report.cached_input_tokens,
                cache_write_tokens: report.cache_write_tokens,
                output_tokens: report.output_tokens,
            },
        });
    }

    /// The facts recorded.
    pub(crate) fn finish(self) -> Vec<UsageFact> {
        self.facts
    }
}

/// What a provider reported for one request (every input token counted, cached included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Input tokens, cached ones included.
    pub(crate) input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub(crate) cached_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub(crate) cache_write_tokens: u64,
    /// Output tokens.
    pub(crate) output_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_builder::LogBuilder;

    fn counts(input_tokens: u64) -> Counts {
        Counts { input_tokens, ..Counts::default() }
    }

    #[test]
    fn the_first_request_sets_the_hidden_part() {
        let mut log = LogBuilder::new("s");
        log.user(&"a".repeat(400));
        let first = log.events().to_vec();
        let visible = estimate_event(&CharEstimator, &first[0]);
        let mut trail = UsageTrail::new("anthropic");
        trail.record(&first, "m", counts(visible + 5_000));
        log.assistant(&"b".repeat(800));
        let second = log.events().to_vec();
        let grown = visible + estimate_event(&CharEstimator, &second[1]);
        trail.record(&second, "m", counts(2 * grown + 5_000));
        let facts = trail.finish();
        assert_eq!(facts.len(), 2);
        assert_eq!(facts[0].estimated_input_tokens, visible + 5_000);
        assert_eq!(facts[1].estimated_input_tokens, grown + 5_000);
    }

    #[test]
    fn a_restart_counts_only_what_follows() {
        let mut log = LogBuilder::new("s");
        log.user(&"a".repeat(4_000)).assistant("ok");
        let mut trail = UsageTrail::new("openai");
        trail.record(log.events(), "m", counts(2_000));
        log.user("summary of the above");
        trail.restart_at(2);
        trail.record(log.events(), "m", counts(600));
        let facts = trail.finish();
        let summary = estimate_event(&CharEstimator, &log.events()[2]);
        let hidden = facts[0].estimated_input_tokens
            - estimate_event(&CharEstimator, &log.events()[0])
            - estimate_event(&CharEstimator, &log.events()[1]);
        assert_eq!(facts[1].estimated_input_tokens, summary + hidden);
    }

    #[test]
    fn no_count_no_fact() {
        let mut trail = UsageTrail::new("openai");
        trail.record(&[], "m", counts(0));
        assert!(trail.finish().is_empty());
    }
}
