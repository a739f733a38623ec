//! Capacity from model facts, and token estimation.
//!
//! Policy comes only from model facts and fixed runtime invariants: there are no environment
//! variables or knobs. For a known context window the runtime reserves one quarter of it, capped
//! at [`MAX_RESERVE_TOKENS`]; for an unknown window it uses a history budget of
//! [`UNKNOWN_WINDOW_HISTORY_BUDGET`] plus the same classic reserve.

pub use crate::calibration::{
    CalibratedEstimator, Calibration, ModelCalibration, UNIT_RATIO_PERMILLE, UsageFact,
    UsageFactError, UsageReport,
};

mod pieces;

pub use pieces::{PIECE_ESTIMATOR_NAME, PieceEstimator};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::attachment::{Attachment, attachment_tokens};
use crate::event::{EventContent, RuntimeEvent};

/// The classic output/overhead reserve, and the cap on the reserve of a known window.
pub const MAX_RESERVE_TOKENS: u64 = 16_384;
/// History budget used when the model's context window is unknown.
pub const UNKNOWN_WINDOW_HISTORY_BUDGET: u64 = 32_000;

/// What the runtime knows about the selected model.
///
/// JSON: `{ "contextWindow"?, "fixedOverheadTokens"?, "rawTailSharePercent"?,
/// "afterCompactionSharePercent"?, "prepareAtPercent"? }` (a `null` window is unknown; other keys are ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelFacts {
    /// Total context window in tokens, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Tokens the next request spends outside history (system prompt, tool schemas). They are
    /// subtracted from the history budget.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fixed_overhead_tokens: u64,
    /// This model's share of the history budget, in percent, that an automatic compaction
    /// keeps raw; `None`: [`crate::compaction::RAW_TAIL_SHARE_PERCENT`].
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "share_percent")]
    pub raw_tail_share_percent: Option<u64>,
    /// This model's share of the history budget, in percent, that the request right after a
    /// compaction may fill; `None`: [`crate::compaction::AFTER_COMPACTION_SHARE_PERCENT`].
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "share_percent")]
    pub after_compaction_share_percent: Option<u64>,
    /// This model's soft threshold: the share of the history budget, in percent, at which a
    /// runtime starts preparing the next checkpoint in the background; `None`:
    /// [`crate::compaction::PREPARE_AT_PERCENT`].
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "share_percent")]
    pub prepare_at_percent: Option<u64>,
}

impl ModelFacts {
    /// The raw-tail share in force for this model, in percent.
    pub fn raw_tail_share(&self) -> u64 {
        self.raw_tail_share_percent.unwrap_or(crate::compaction::RAW_TAIL_SHARE_PERCENT)
    }

    /// The soft threshold in force for this model, in percent of the history budget.
    pub fn prepare_at_share(&self) -> u64 {
        self.prepare_at_percent.unwrap_or(crate::compaction::PREPARE_AT_PERCENT)
    }

    /// The after-compaction share in force for this model, in percent.
    pub fn after_compaction_share(&self) -> u64 {
        self.after_compaction_share_percent
            .unwrap_or(crate::compaction::AFTER_COMPACTION_SHARE_PERCENT)
    }
}

/// A share of the budget in percent: a whole number from 0 to 90 (a share above 90 would leave
/// no room to grow before the next compaction).
fn share_percent<'de, D: serde::Deserializer<'de>>(reader: D) -> Result<Option<u64>, D::Error> {
    match Option::<u64>::deserialize(reader)? {
        Some(share) if share > 90 => {
            Err(serde::de::Error::custom(format!("a share of {share}%: expected 0 to 90")))
        }
        share => Ok(share),
    }
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The budget derived from [`ModelFacts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextBudget {
    /// The window the budget was derived from (`history_budget + reserve` when unknown).
    pub context_window: u64,
    /// Tokens reserved for the response and request overhead.
    pub reserve: u64,
    /// Tokens available to history: checkpoint + raw tail + current turn.
    pub history_budget: u64,
}

impl ContextBudget {
    /// Derives the budget exactly as the design specifies.
    ///
    /// ```
    /// use contextfold_core::budget::{ContextBudget, ModelFacts};
    /// let known = ContextBudget::from_model(&ModelFacts { context_window: Some(200_000), ..Default::default() });
    /// assert_eq!((known.reserve, known.history_budget), (16_384, 183_616));
    /// let small = ContextBudget::from_model(&ModelFacts { context_window: Some(8_000), ..Default::default() });
    /// assert_eq!((small.reserve, small.history_budget), (2_000, 6_000));
    /// let unknown = ContextBudget::from_model(&ModelFacts::default());
    /// assert_eq!((unknown.reserve, unknown.history_budget), (16_384, 32_000));
    /// ```
    pub fn from_model(facts: &ModelFacts) -> Self {
        let (context_window, reserve, history) = match facts.context_window {
            Some(window) => {
                let reserve = (window / 4).min(MAX_RESERVE_TOKENS);
                (window, reserve, window - reserve)
            }
            None => (
                UNKNOWN_WINDOW_HISTORY_BUDGET + MAX_RESERVE_TOKENS,
                MAX_RESERVE_TOKENS,
                UNKNOWN_WINDOW_HISTORY_BUDGET,
            ),
        };
        Self {
            context_window,
            reserve,
            history_budget: history.saturating_sub(facts.fixed_overhead_tokens),
        }
    }
}

/// Estimates tokens. Inject a real tokenizer by implementing this trait; the default is
/// [`CharEstimator`].
pub trait TokenEstimator {
    /// Estimated tokens of a piece of text.
    fn estimate_text(&self, text: &str) -> u64;

    /// Fixed per-message overhead (role markers, separators).
    fn message_overhead(&self) -> u64 {
        MESSAGE_OVERHEAD_TOKENS
    }

    /// Estimated tokens of one image or file. The default follows the providers' published
    /// image rules, taking the larger ([`crate::attachment::attachment_tokens`]); an estimator
    /// for one provider may apply only its rule.
    fn estimate_attachment(&self, attachment: &Attachment) -> u64 {
        attachment_tokens(attachment)
    }

    /// The estimator whose estimates this one scales by one ratio (calibration), if any. A
    /// long running tally ([`source_tokens`]) is kept in its units and scaled once, so it stays
    /// valid when only the ratio changes.
    fn tally_base(&self) -> Option<&dyn TokenEstimator> {
        None
    }

    /// Converts a tally in [`Self::tally_base`] units to this estimator's.
    fn scale_tally(&self, base_tokens: u64) -> u64 {
        base_tokens
    }

    /// A stable name for this estimator's per-event estimates when they are a pure function of
    /// the event that never changes between builds of one name, so a store may keep them beside
    /// each event (the native ledger keeps [`PieceEstimator`]'s). `None` (the default): compute
    /// them every time.
    fn stored_name(&self) -> Option<&'static str> {
        None
    }

    /// This estimator's identity as a checkpoint's manifest records it (`chars-v1`,
    /// `pieces-v1 x1.082`, `tiktoken:o200k_base`): estimates of one name are the same estimates.
    /// The default is the stored name, or `custom`.
    fn name(&self) -> String {
        self.stored_name().unwrap_or("custom").to_owned()
    }
}

impl<T: TokenEstimator + ?Sized> TokenEstimator for &T {
    fn estimate_text(&self, text: &str) -> u64 {
        (**self).estimate_text(text)
    }

    fn message_overhead(&self) -> u64 {
        (**self).message_overhead()
    }

    fn estimate_attachment(&self, attachment: &Attachment) -> u64 {
        (**self).estimate_attachment(attachment)
    }

    fn tally_base(&self) -> Option<&dyn TokenEstimator> {
        (**self).tally_base()
    }

    fn scale_tally(&self, base_tokens: u64) -> u64 {
        (**self).scale_tally(base_tokens)
    }

    fn stored_name(&self) -> Option<&'static str> {
        (**self).stored_name()
    }

    fn name(&self) -> String {
        (**self).name()
    }
}

impl<T: TokenEstimator + ?Sized> TokenEstimator for std::sync::Arc<T> {
    fn estimate_text(&self, text: &str) -> u64 {
        (**self).estimate_text(text)
    }

    fn message_overhead(&self) -> u64 {
        (**self).message_overhead()
    }

    fn estimate_attachment(&self, attachment: &Attachment) -> u64 {
        (**self).estimate_attachment(attachment)
    }

    fn tally_base(&self) -> Option<&dyn TokenEstimator> {
        (**self).tally_base()
    }

    fn scale_tally(&self, base_tokens: u64) -> u64 {
        (**self).scale_tally(base_tokens)
    }

    fn stored_name(&self) -> Option<&'static str> {
        (**self).stored_name()
    }

    fn name(&self) -> String {
        (**self).name()
    }
}

/// Per-message overhead used by the default estimator.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// The default estimate: one token per four ASCII bytes (rounded up) plus one token per
/// non-ASCII character. It overestimates English prose slightly and treats CJK and emoji as at
/// least one token per character, so it errs on the side of a smaller request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CharEstimator;

impl TokenEstimator for CharEstimator {
    fn name(&self) -> String {
        "chars-v1".to_owned()
    }

    fn estimate_text(&self, text: &str) -> u64 {
        // Counted on bytes, not chars: in valid UTF-8 an ASCII character is a byte below 0x80
        // and every other character has exactly one leading byte (0xC0 and up), so the bytes
        // with the top bit set (`high`) and the leading bytes (`lead`) give both char counts.
        // Eight bytes at a time (SWAR): each byte lane of `lanes` counts its flags, at most 255
        // words per run so that no lane overflows; then the lanes are summed. Fast without
        // vectorization or inlining (the npm module is built for size).
        let bytes = text.as_bytes();
        let (mut high, mut lead) = (0u64, 0u64);
        let (words, tail) = bytes.as_chunks::<8>();
        for run in words.chunks(255) {
            let (mut high_lanes, mut lead_lanes) = (0u64, 0u64);
            for word in run {
                let word = u64::from_le_bytes(*word);
                high_lanes += (word >> 7) & LOW_BITS;
                lead_lanes += ((word & (word << 1)) >> 7) & LOW_BITS;
            }
            high += sum_byte_lanes(high_lanes);
            lead += sum_byte_lanes(lead_lanes);
        }
        for &byte in tail {
            high += u64::from(byte >> 7);
            lead += u64::from(byte >= 0xc0);
        }
        (bytes.len() as u64 - high).div_ceil(4) + lead
    }
}

/// The lowest bit of each byte of a `u64`.
const LOW_BITS: u64 = 0x0101_0101_0101_0101;

/// The sum of the 8 byte lanes of `lanes` (each at most 255).
fn sum_byte_lanes(lanes: u64) -> u64 {
    const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;
    // Pairs of lanes into four 16-bit lanes (at most 510 each), then those summed in the top 16
    // bits of one product (at most 2040).
    let pairs = (lanes & LOW_BYTES) + ((lanes >> 8) & LOW_BYTES);
    pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48
}

/// Estimated model-visible tokens of one event: its text, or its call/result JSON, plus the
/// per-message overhead. Reasoning counts too (it is replayed where the provider accepts it).
pub fn estimate_event(estimator: &dyn TokenEstimator, event: &RuntimeEvent) -> u64 {
    let body = match &event.content {
        EventContent::UserText { text, .. }
        | EventContent::AssistantText { text }
        | EventContent::Reasoning { text, .. }
        | EventContent::SystemNote { text } => estimator.estimate_text(text),
        EventContent::RuntimeNote { code, text } => {
            estimator.estimate_text(code) + estimator.estimate_text(text)
        }
        EventContent::ToolCall { tool_name, input, .. }
        | EventContent::HostedToolCall { tool_name, input, .. } => {
            estimator.estimate_text(tool_name) + estimate_value(estimator, input)
        }
        EventContent::ToolResult { output, .. } | EventContent::HostedToolResult { output, .. } => {
            estimate_value(estimator, output)
        }
    };
    let attachments: u64 =
        event.attachments().iter().map(|a| estimator.estimate_attachment(a)).sum();
    body + attachments + estimator.message_overhead()
}

/// Estimated tokens of the events a checkpoint replaces (its source): the events' estimates
/// in the units of the estimator's [`TokenEstimator::tally_base`], scaled once. Every
/// "smaller than its source" decision measures the source this way, so a cached tally of a
/// verified prefix ([`crate::verified_prefix::VerifiedPrefix`]) gives the same figure as a
/// count from scratch.
pub fn source_tokens(estimator: &dyn TokenEstimator, events: &[RuntimeEvent]) -> u64 {
    let base = estimator.tally_base().unwrap_or(estimator);
    estimator.scale_tally(estimate_events(base, events))
}

/// Estimated tokens of a run of events.
pub fn estimate_events(estimator: &dyn TokenEstimator, events: &[RuntimeEvent]) -> u64 {
    events.iter().map(|event| estimate_event(estimator, event)).sum()
}

/// Estimated tokens of a JSON value: a string counts as its text, anything else as its JSON.
pub fn estimate_value(estimator: &dyn TokenEstimator, value: &Value) -> u64 {
    match value {
        Value::String(text) => estimator.estimate_text(text),
        other => estimator.estimate_text(&crate::json_text::json_text(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_is_a_quarter_capped() {
        let b = |w| {
            ContextBudget::from_model(&ModelFacts { context_window: Some(w), ..Default::default() })
        };
        assert_eq!(b(65_536).reserve, 16_384);
        assert_eq!(b(65_535).reserve, 16_383);
        assert_eq!(b(1_000_000).history_budget, 1_000_000 - 16_384);
        assert_eq!(b(0).history_budget, 0);
    }

    #[test]
    fn overhead_reduces_history_and_saturates() {
        let facts = ModelFacts {
            context_window: Some(8_000),
            fixed_overhead_tokens: 1_000,
            ..Default::default()
        };
        assert_eq!(ContextBudget::from_model(&facts).history_budget, 5_000);
        let facts = ModelFacts {
            context_window: Some(8_000),
            fixed_overhead_tokens: 9_000,
            ..Default::default()
        };
        assert_eq!(ContextBudget::from_model(&facts).history_budget, 0);
    }

    #[test]
    fn shares_are_read_written_and_bounded() {
        let json = serde_json::json!({"contextWindow": 8_000, "rawTailSharePercent": 10,
            "afterCompactionSharePercent": 40});
        let facts: ModelFacts = serde_json::from_value(json.clone()).expect("valid shares");
        assert_eq!((facts.raw_tail_share(), facts.after_compaction_share()), (10, 40));
        assert_eq!(serde_json::to_value(&facts).expect("json"), json);
        let defaults = ModelFacts::default();
        assert_eq!((defaults.raw_tail_share(), defaults.after_compaction_share()), (25, 75));
        for key in ["rawTailSharePercent", "afterCompactionSharePercent"] {
            let error = serde_json::from_value::<ModelFacts>(serde_json::json!({ key: 95 }))
                .expect_err("95%");
            assert!(error.to_string().contains("expected 0 to 90"), "{error}");
        }
    }

    #[test]
    fn char_estimator_counts_ascii_and_unicode() {
        let e = CharEstimator;
        assert_eq!(e.estimate_text(""), 0);
        assert_eq!(e.estimate_text("abcd"), 1);
        assert_eq!(e.estimate_text("abcde"), 2);
        assert_eq!(e.estimate_text("日本語"), 3);
        assert_eq!(e.estimate_text("ab日"), 2);
    }

    #[test]
    fn char_estimator_counts_chars_across_word_and_run_boundaries() {
        let by_chars = |text: &str| {
            let ascii = text.chars().filter(char::is_ascii).count() as u64;
            ascii.div_ceil(4) + (text.chars().count() as u64 - ascii)
        };
        for length in [7, 8, 9, 239, 240, 241, 479, 480, 1000, 2039, 2040, 2041, 5000] {
            for filler in ["a", "é", "世", "😀", "ab世😀é\n"] {
                let text: String = filler.repeat(length).chars().take(length).collect();
                assert_eq!(
                    CharEstimator.estimate_text(&text),
                    by_chars(&text),
                    "{filler} x {length}"
                );
            }
        }
    }
}
