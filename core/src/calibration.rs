//! Token calibration: what the provider reported, turned into a correction of the estimate.
//!
//! Providers count tokens their own way, and a characters-based estimate is off by -75% to
//! +130% depending on content (prose, source code, minified JSON, CJK text, base64). Every
//! response carries the provider's own count of the request, so the runtime can learn, per
//! provider and model, how the provider's count relates to its estimate.
//!
//! The method, pure and deterministic (the [`Calibration`] state is an input and an output; the
//! host persists it or rebuilds it from the session's [`UsageFact`]s):
//!
//! - Every fact gives one **sample**: the provider's count divided by the request's own
//!   uncalibrated estimate, in thousandths ([`UsageFact::ratio_sample`]). A context-overflow
//!   error is a fact too: with the counted tokens it is an exact sample; without them the
//!   request is known to exceed the limit, so the sample is the smallest ratio consistent with
//!   the refusal ([`OVERFLOW_MARGIN_PERMILLE`] above the limit's ratio), or, when neither count
//!   nor limit is known, the current ratio raised by [`OVERFLOW_STEP_PERMILLE`]. A response to a
//!   request estimated below `MIN_SAMPLE_ESTIMATE_TOKENS` gives no sample: what the estimate
//!   cannot see (tool schemas, framing) dominates such a request.
//! - Each provider and model keeps its newest `CALIBRATION_WINDOW` samples. The ratio in use
//!   is an **upper quantile** of them ([`CALIBRATION_QUANTILE_PERCENT`], nearest rank), never a
//!   mean: with fewer than ten samples it is their maximum, so the pre-turn and mid-turn triggers
//!   fire before the provider would refuse.
//! - The quantile is raised by [`CALIBRATION_MARGIN_PERMILLE`] (2%), so a request estimated right
//!   at the budget is not refused for the rounding of one piece, then clamped to
//!   [`MIN_RATIO_PERMILLE`]..=[`MAX_RATIO_PERMILLE`]; without samples the ratio is 1.0 (the
//!   estimate as it is).
//!
//! Limits: one ratio per provider and model corrects the content mix of recent requests; when a
//! session's content shifts (prose, then base64), the first request after the shift is estimated
//! with the old ratio, and an overflow there becomes the next sample. The ratio scales every part
//! of the estimate, images included, because the provider reports one count per request.

use crate::attachment::Attachment;
use crate::budget::TokenEstimator;

use serde::{Deserialize, Serialize};

/// Responses to requests estimated below this many tokens give no sample: in so small a request
/// what the estimate does not see (tool definitions, the provider's message framing: tens to
/// hundreds of tokens) outweighs what it measures, so its ratio says little about the next,
/// larger request (an agent's first step, the task alone beside the tool schemas, measures
/// 3-5x). Such a request is far below any window's limit. Overflow facts always count.
pub(crate) const MIN_SAMPLE_ESTIMATE_TOKENS: u64 = 512;

/// Samples kept per provider and model (newest last).
pub(crate) const CALIBRATION_WINDOW: usize = 16;
/// The upper quantile of the samples that becomes the ratio in use (nearest rank).
pub(crate) const CALIBRATION_QUANTILE_PERCENT: usize = 90;
/// The margin added to the quantile, in thousandths of it.
pub(crate) const CALIBRATION_MARGIN_PERMILLE: u32 = 20;
/// The smallest ratio in use, in thousandths (the estimate at a quarter).
pub(crate) const MIN_RATIO_PERMILLE: u32 = 250;
/// The largest ratio in use, in thousandths (the estimate at eight times).
pub(crate) const MAX_RATIO_PERMILLE: u32 = 8_000;
/// The ratio of an overflow without a count is this much (thousandths) above the limit's ratio.
pub(crate) const OVERFLOW_MARGIN_PERMILLE: u32 = 100;
/// An overflow with neither count nor limit raises the ratio in use by this much (thousandths).
pub(crate) const OVERFLOW_STEP_PERMILLE: u32 = 250;
/// Provider and model entries kept; the least recently updated is dropped beyond this.
pub(crate) const MAX_CALIBRATED_MODELS: usize = 64;
/// The ratio of an uncalibrated model, in thousandths.
pub const UNIT_RATIO_PERMILLE: u32 = 1_000;

/// What one model request taught about the provider's count: a response's reported usage, or a
/// context-overflow refusal. A durable fact of the session, outside the RuntimeEvent digest.
///
/// JSON (camelCase, the report's fields beside the others): `{ "provider", "model",
/// "estimatedInputTokens", "kind": "response" | "overflow", ... }`; other keys are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageFact {
    /// Provider of the request (`openai`, `anthropic`, …).
    pub provider: String,
    /// Model of the request.
    pub model: String,
    /// The request's own estimate of its input tokens, uncalibrated.
    pub estimated_input_tokens: u64,
    /// What the provider answered.
    #[serde(flatten)]
    pub report: UsageReport,
}

/// The provider's side of a [`UsageFact`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum UsageReport {
    /// A response with its usage. `input_tokens` is every input token the provider counted,
    /// cached ones included (OpenAI `prompt_tokens`; Anthropic `input_tokens` +
    /// `cache_read_input_tokens` + `cache_creation_input_tokens`).
    Response {
        /// Input tokens counted, cached included.
        input_tokens: u64,
        /// Input tokens read from the provider's prompt cache.
        #[serde(default)]
        cached_input_tokens: u64,
        /// Input tokens written to the prompt cache (Anthropic's cache creation).
        #[serde(default)]
        cache_write_tokens: u64,
        /// Output tokens.
        #[serde(default)]
        output_tokens: u64,
    },
    /// A context-length refusal, with the counts where the provider gave them.
    Overflow {
        /// Tokens the provider counted, if it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counted_tokens: Option<u64>,
        /// The limit the request exceeded, if known (the provider's message or the window).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_tokens: Option<u64>,
    },
}

impl UsageFact {
    /// The fact's ratio sample in thousandths, given the ratio in use when it arrived; `None`
    /// when the fact carries no estimate to compare with, or is the response to a request
    /// estimated below `MIN_SAMPLE_ESTIMATE_TOKENS`.
    ///
    /// ```
    /// use contextfold_core::budget::{UsageFact, UsageReport};
    /// let fact = |report| UsageFact { provider: "p".into(), model: "m".into(), estimated_input_tokens: 1_000, report };
    /// let reported = fact(UsageReport::Response { input_tokens: 1_330, cached_input_tokens: 0, cache_write_tokens: 0, output_tokens: 9 });
    /// assert_eq!(reported.ratio_sample(1_000), Some(1_330));
    /// let refused = fact(UsageReport::Overflow { counted_tokens: None, limit_tokens: Some(1_200) });
    /// assert_eq!(refused.ratio_sample(1_000), Some(1_300));
    /// ```
    pub fn ratio_sample(&self, current_permille: u32) -> Option<u32> {
        let estimate = self.estimated_input_tokens;
        if estimate == 0 {
            return None;
        }
        let ratio = |tokens: u64| permille(tokens, estimate);
        Some(match self.report {
            UsageReport::Response { .. } if estimate < MIN_SAMPLE_ESTIMATE_TOKENS => return None,
            UsageReport::Response { input_tokens, .. } => ratio(input_tokens),
            UsageReport::Overflow { counted_tokens: Some(counted), .. } => ratio(counted),
            UsageReport::Overflow { counted_tokens: None, limit_tokens: Some(limit) } => {
                ratio(limit).saturating_add(OVERFLOW_MARGIN_PERMILLE).max(current_permille)
            }
            UsageReport::Overflow { counted_tokens: None, limit_tokens: None } => {
                current_permille.saturating_add(OVERFLOW_STEP_PERMILLE)
            }
        })
    }
}

/// A usage fact whose counts cannot be true. Code: `invalid_usage_fact`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UsageFactError {
    /// The provider or model is empty.
    #[error("a usage fact names its provider and model")]
    Unnamed,
    /// A response counted no input token.
    #[error("a response fact counts at least one input token")]
    NoInput,
    /// Cached and cache-write tokens exceed the input tokens, which include them.
    #[error(
        "cached ({cached}) and cache-write ({written}) tokens exceed the input tokens ({input}), \
         which include them"
    )]
    CachedExceedsInput {
        /// Cached input tokens.
        cached: u64,
        /// Cache-write tokens.
        written: u64,
        /// Input tokens.
        input: u64,
    },
}

impl UsageFactError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        "invalid_usage_fact"
    }
}

impl UsageFact {
    /// Checks what the JSON shape cannot: a named provider and model, and counts that can be
    /// true (a response counts at least one input token, cached ones among them). Every host
    /// checks a fact with this before recording it.
    pub fn validate(&self) -> Result<(), UsageFactError> {
        if self.provider.is_empty() || self.model.is_empty() {
            return Err(UsageFactError::Unnamed);
        }
        if let UsageReport::Response {
            input_tokens, cached_input_tokens, cache_write_tokens, ..
        } = self.report
        {
            if input_tokens == 0 {
                return Err(UsageFactError::NoInput);
            }
            if cached_input_tokens.saturating_add(cache_write_tokens) > input_tokens {
                return Err(UsageFactError::CachedExceedsInput {
                    cached: cached_input_tokens,
                    written: cache_write_tokens,
                    input: input_tokens,
                });
            }
        }
        Ok(())
    }
}

/// `tokens / estimate` in thousandths, rounded up.
fn permille(tokens: u64, estimate: u64) -> u32 {
    let value = (u128::from(tokens) * 1_000).div_ceil(u128::from(estimate));
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// The learned ratios of a session's providers and models. Serializes as JSON for hosts that
/// keep it between calls.
///
/// JSON: `{ "models": [{ "provider", "model", "samplesPermille": [...] }] }` (`models` may be
/// left out; no other keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Calibration {
    /// One entry per provider and model, least recently updated first.
    #[serde(default)]
    pub models: Vec<ModelCalibration>,
}

/// The samples of one provider and model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelCalibration {
    /// Provider.
    pub provider: String,
    /// Model.
    pub model: String,
    /// Ratio samples in thousandths, newest last, at most `CALIBRATION_WINDOW`.
    pub samples_permille: Vec<u32>,
}

impl ModelCalibration {
    /// The ratio in use: the upper quantile of the samples, clamped.
    pub fn ratio_permille(&self) -> u32 {
        let mut sorted = self.samples_permille.clone();
        crate::sort::sort(&mut sorted);
        let Some(rank) = (sorted.len() * CALIBRATION_QUANTILE_PERCENT).div_ceil(100).checked_sub(1)
        else {
            return UNIT_RATIO_PERMILLE;
        };
        sorted.get(rank).map_or(UNIT_RATIO_PERMILLE, |&r| {
            clamp(r.saturating_add(r * CALIBRATION_MARGIN_PERMILLE / 1_000))
        })
    }
}

fn clamp(ratio: u32) -> u32 {
    ratio.clamp(MIN_RATIO_PERMILLE, MAX_RATIO_PERMILLE)
}

impl Calibration {
    /// A calibration learned from `facts`, in order.
    pub fn from_facts<'a>(facts: impl IntoIterator<Item = &'a UsageFact>) -> Self {
        let mut calibration = Self::default();
        for fact in facts {
            calibration.observe(fact);
        }
        calibration
    }

    /// Learns from one fact; returns the provider and model's ratio in use afterwards. A fact
    /// without an estimate changes nothing.
    pub fn observe(&mut self, fact: &UsageFact) -> u32 {
        let current = self.ratio_permille(&fact.provider, &fact.model);
        let Some(sample) = fact.ratio_sample(current) else { return current };
        let index =
            self.models.iter().position(|m| m.provider == fact.provider && m.model == fact.model);
        let mut entry = match index {
            Some(index) => self.models.remove(index),
            None => ModelCalibration {
                provider: fact.provider.clone(),
                model: fact.model.clone(),
                samples_permille: Vec::new(),
            },
        };
        entry.samples_permille.push(sample);
        let excess = entry.samples_permille.len().saturating_sub(CALIBRATION_WINDOW);
        entry.samples_permille.drain(..excess);
        let ratio = entry.ratio_permille();
        self.models.push(entry);
        let excess = self.models.len().saturating_sub(MAX_CALIBRATED_MODELS);
        self.models.drain(..excess);
        ratio
    }

    /// The ratio in use for a provider and model, in thousandths ([`UNIT_RATIO_PERMILLE`] when
    /// nothing was learned).
    pub fn ratio_permille(&self, provider: &str, model: &str) -> u32 {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.model == model)
            .map_or(UNIT_RATIO_PERMILLE, ModelCalibration::ratio_permille)
    }

    /// `base` corrected by the ratio of `provider` and `model`.
    pub fn estimator<E: TokenEstimator>(
        &self,
        base: E,
        provider: &str,
        model: &str,
    ) -> CalibratedEstimator<E> {
        CalibratedEstimator { base, ratio_permille: self.ratio_permille(provider, model) }
    }
}

/// An estimator scaled by a learned ratio: every estimate of `base` times the ratio, rounded to
/// the nearest token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalibratedEstimator<E> {
    /// The uncalibrated estimator.
    pub base: E,
    /// The ratio, in thousandths.
    pub ratio_permille: u32,
}

impl<E> CalibratedEstimator<E> {
    /// `base` at ratio 1.0.
    pub fn unit(base: E) -> Self {
        Self { base, ratio_permille: UNIT_RATIO_PERMILLE }
    }

    fn scale(&self, tokens: u64) -> u64 {
        if self.ratio_permille == UNIT_RATIO_PERMILLE {
            return tokens;
        }
        let scaled = (u128::from(tokens) * u128::from(self.ratio_permille) + 500) / 1_000;
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }
}

impl<E: TokenEstimator> TokenEstimator for CalibratedEstimator<E> {
    fn estimate_text(&self, text: &str) -> u64 {
        self.scale(self.base.estimate_text(text))
    }

    fn message_overhead(&self) -> u64 {
        self.scale(self.base.message_overhead())
    }

    fn estimate_attachment(&self, attachment: &Attachment) -> u64 {
        self.scale(self.base.estimate_attachment(attachment))
    }

    fn tally_base(&self) -> Option<&dyn TokenEstimator> {
        Some(&self.base)
    }

    fn scale_tally(&self, base_tokens: u64) -> u64 {
        self.scale(base_tokens)
    }

    /// The base's name, with the ratio when it is not 1.0 (at 1.0 the estimates are the base's).
    fn name(&self) -> String {
        match self.ratio_permille {
            UNIT_RATIO_PERMILLE => self.base.name(),
            ratio => format!("{} x{}.{:03}", self.base.name(), ratio / 1_000, ratio % 1_000),
        }
    }
}

#[cfg(test)]
mod tests;
