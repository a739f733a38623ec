//! The calibrated projection: [`project_with`] measured by a base estimator scaled by the
//! session's calibration, with the request's own (uncalibrated) estimate beside it. The native
//! host, the wasm component and the npm binding all project through [`project_calibrated`] (or,
//! when they project by other means, measure with [`calibrated_estimator`] and
//! [`CalibratedProjection::measured`]).

use serde::Serialize;

use super::materialize::estimate_messages;
use super::{ProjectInput, Projection, project_with};
use crate::budget::TokenEstimator;
use crate::calibration::{CalibratedEstimator, Calibration, UNIT_RATIO_PERMILLE};
use crate::compaction::native::ProviderIdentity;
use crate::event::LogError;
use crate::verified_prefix::PrefixVerifier;

/// A projection with how it was measured. JSON: the projection's fields, then
/// `uncalibratedTokens` and `ratioPermille`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CalibratedProjection {
    /// The core's projection, measured with the calibrated estimator.
    #[serde(flatten)]
    pub projection: Projection,
    /// The messages measured by the base estimator alone: the request's own estimate, which a
    /// [`crate::calibration::UsageFact`] records.
    pub uncalibrated_tokens: u64,
    /// The calibration ratio `estimated_tokens` was measured with, in thousandths.
    pub ratio_permille: u32,
}

impl CalibratedProjection {
    /// `projection`, measured with a calibrated estimator of ratio `ratio_permille` over `base`:
    /// its uncalibrated estimate is measured again by `base` only when the ratio is not 1.0.
    pub fn measured(
        projection: Projection,
        base: &dyn TokenEstimator,
        ratio_permille: u32,
    ) -> Self {
        let uncalibrated_tokens = match ratio_permille {
            UNIT_RATIO_PERMILLE => projection.estimated_tokens,
            _ => estimate_messages(base, &projection.messages),
        };
        CalibratedProjection { projection, uncalibrated_tokens, ratio_permille }
    }
}

/// `base` scaled by the calibration's ratio for the request's provider and model (1.0 without
/// a calibration or a provider).
pub fn calibrated_estimator<E: TokenEstimator>(
    base: E,
    calibration: Option<&Calibration>,
    provider: Option<&ProviderIdentity>,
) -> CalibratedEstimator<E> {
    match (calibration, provider) {
        (Some(calibration), Some(p)) => calibration.estimator(base, &p.provider, &p.model_id),
        _ => CalibratedEstimator::unit(base),
    }
}

/// Projects `input` measured by `base` scaled by `calibration` (for `input.provider`),
/// verifying the checkpoint's prefix with `verifier`.
pub fn project_calibrated(
    input: &ProjectInput<'_>,
    base: &dyn TokenEstimator,
    calibration: Option<&Calibration>,
    verifier: &mut dyn PrefixVerifier,
) -> Result<CalibratedProjection, LogError> {
    let estimator = calibrated_estimator(base, calibration, input.provider);
    let projection = project_with(input, &estimator, verifier)?;
    Ok(CalibratedProjection::measured(projection, base, estimator.ratio_permille))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{CharEstimator, ModelFacts};
    use crate::calibration::UsageFact;
    use crate::log_builder::LogBuilder;
    use crate::verified_prefix::FullVerification;

    #[test]
    fn a_calibration_scales_the_estimate_and_keeps_the_uncalibrated_one() {
        let mut log = LogBuilder::new("s");
        log.turn("t1").user(&"hello world ".repeat(100));
        let model = ModelFacts { context_window: Some(100_000), ..Default::default() };
        let provider = ProviderIdentity {
            provider: "p".into(),
            connection_slug: "c".into(),
            model_id: "m".into(),
        };
        let input = ProjectInput {
            events: log.events(),
            current_turn_id: None,
            checkpoint: None,
            model: &model,
            provider: Some(&provider),
            fail_open: false,
        };
        let mut verifier = FullVerification::default();
        let unit = project_calibrated(&input, &CharEstimator, None, &mut verifier).unwrap();
        assert_eq!(unit.ratio_permille, UNIT_RATIO_PERMILLE);
        assert_eq!(unit.uncalibrated_tokens, unit.projection.estimated_tokens);

        let mut calibration = Calibration::default();
        let fact: UsageFact = serde_json::from_value(serde_json::json!({
            "provider": "p", "model": "m", "estimatedInputTokens": 1000,
            "kind": "response", "inputTokens": 2000,
        }))
        .unwrap();
        calibration.observe(&fact);
        let scaled =
            project_calibrated(&input, &CharEstimator, Some(&calibration), &mut verifier).unwrap();
        assert!(scaled.ratio_permille > UNIT_RATIO_PERMILLE);
        assert_eq!(scaled.uncalibrated_tokens, unit.projection.estimated_tokens);
        assert!(scaled.projection.estimated_tokens > scaled.uncalibrated_tokens);
    }
}
