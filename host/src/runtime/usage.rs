//! Usage facts and calibration in the session runtime.
//!
//! The agent (or a host client) reports what the provider answered for each model request with
//! [`SessionRuntime::record_usage`]: the fact is appended to the AgentRun ledger
//! (`model_usage_recorded`) before it counts, then folded into the session's calibration, which
//! every later projection, trigger and compaction of this runtime measures with. The calibration
//! is loaded from the ledger's facts on first use, so a new process starts where the last left.

use std::sync::Arc;

use contextfold_core::budget::{
    CalibratedEstimator, Calibration, PieceEstimator, UsageFact, UsageReport,
};
use contextfold_core::compaction::ProviderIdentity;
use contextfold_core::projection::calibrated_estimator;

use super::compactors::{NativeCompactor, Summarizer};
use super::error::RuntimeError;
use super::session::{BaseEstimator, ProjectionReport, SessionRuntime, unique_tag};
use crate::tokenizer::OpenAiTokenizer;

/// The uncalibrated estimator a runtime starts from: the [`PieceEstimator`] (its ratio to a
/// provider's count stays nearly constant within a kind of content, so calibration from the
/// provider's reported usage makes it accurate), corrected by calibration. Exact counting for an
/// OpenAI model is one call away: [`exact_estimator_for`] with [`SessionRuntime::with_estimator`].
pub(crate) fn base_estimator_for(_provider: &ProviderIdentity) -> BaseEstimator {
    Arc::new(PieceEstimator)
}

/// Exact counting for an OpenAI model ([`OpenAiTokenizer`]: `o200k_base` or `cl100k_base` by
/// model id), or `None` for a model without a published tokenizer.
pub fn exact_estimator_for(model_id: &str) -> Option<BaseEstimator> {
    OpenAiTokenizer::for_model(model_id).map(|tokenizer| Arc::new(tokenizer) as BaseEstimator)
}

impl<S: Summarizer, N: NativeCompactor> SessionRuntime<S, N> {
    /// The session's calibration (loaded from its usage facts on first use).
    pub async fn calibration(&self) -> Result<Calibration, RuntimeError> {
        if let Some(calibration) = &self.state().calibration {
            return Ok(calibration.clone());
        }
        let loaded = self.ledger.calibration(&self.config.session_id).await?;
        Ok(self.state().calibration.get_or_insert(loaded).clone())
    }

    /// The estimator every measurement of this runtime uses: the base estimator scaled by the
    /// calibrated ratio of the session's provider and model.
    pub async fn estimator(&self) -> Result<CalibratedEstimator<BaseEstimator>, RuntimeError> {
        let calibration = self.calibration().await?;
        let provider = Some(&self.config.provider);
        Ok(calibrated_estimator(Arc::clone(&self.base_estimator), Some(&calibration), provider))
    }

    /// Records what the provider reported for one model request, durably, then learns from
    /// it. Returns the provider and model's ratio in use afterwards, in thousandths. A fact whose
    /// counts cannot be true is refused before anything is written
    /// ([`RuntimeError::InvalidUsageFact`]).
    pub async fn record_usage(&self, fact: UsageFact) -> Result<u32, RuntimeError> {
        fact.validate()?;
        self.calibration().await?;
        let run_id = self.active_run_id().unwrap_or_else(|| "usage".to_owned());
        let now_ms = self.now_ms();
        let event_id = format!("usage-{now_ms}-{}", unique_tag());
        let recorded = fact.clone();
        let session = &self.config.session_id;
        self.ledger.append_usage_fact(session, &run_id, &event_id, now_ms, recorded).await?;
        let mut state = self.state();
        Ok(state.calibration.get_or_insert_with(Calibration::default).observe(&fact))
    }

    /// The usage fact of a response to the request `report` describes: its own uncalibrated
    /// estimate (plus the model's fixed overhead) against the provider's counts.
    pub fn usage_fact(&self, report: &ProjectionReport, usage: UsageReport) -> UsageFact {
        UsageFact {
            provider: self.config.provider.provider.clone(),
            model: self.config.provider.model_id.clone(),
            estimated_input_tokens: report.uncalibrated_tokens
                + self.config.model.fixed_overhead_tokens,
            report: usage,
        }
    }
}
