use super::*;
use crate::budget::CharEstimator;

fn fact(estimate: u64, report: UsageReport) -> UsageFact {
    UsageFact {
        provider: "openai".into(),
        model: "gpt-test".into(),
        estimated_input_tokens: estimate,
        report,
    }
}

fn reported(estimate: u64, input: u64) -> UsageFact {
    fact(
        estimate,
        UsageReport::Response {
            input_tokens: input,
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 10,
        },
    )
}

#[test]
fn uncalibrated_is_the_estimate_itself() {
    let calibration = Calibration::default();
    assert_eq!(calibration.ratio_permille("openai", "gpt-test"), UNIT_RATIO_PERMILLE);
    let estimator = calibration.estimator(CharEstimator, "openai", "gpt-test");
    let text = "a fairly ordinary sentence of English prose";
    assert_eq!(estimator.estimate_text(text), CharEstimator.estimate_text(text));
}

#[test]
fn one_report_sets_the_ratio_and_scales_every_part() {
    let mut calibration = Calibration::default();
    assert_eq!(calibration.observe(&reported(1_000, 1_334)), 1_360);
    let estimator = calibration.estimator(CharEstimator, "openai", "gpt-test");
    assert_eq!(estimator.estimate_text(&"x".repeat(4_000)), 1_360);
    assert_eq!(estimator.message_overhead(), 5);
    // Another model is untouched.
    assert_eq!(calibration.ratio_permille("openai", "other"), UNIT_RATIO_PERMILLE);
}

#[test]
fn the_ratio_is_an_upper_quantile_not_a_mean() {
    let mut calibration = Calibration::default();
    for input in [900, 950, 1_300, 1_000, 980] {
        calibration.observe(&reported(1_000, input));
    }
    // Fewer than ten samples: the maximum, plus the margin.
    assert_eq!(calibration.ratio_permille("openai", "gpt-test"), 1_326);
    for _ in 0..11 {
        calibration.observe(&reported(1_000, 1_000));
    }
    // The window keeps the newest 16: 1_300, 1_000, 980, then 13 x 1_000 minus the oldest.
    let entry = &calibration.models[0];
    assert_eq!(entry.samples_permille.len(), CALIBRATION_WINDOW);
    // The 90th percentile of sixteen samples is the 15th smallest: 1_000, not the single 1_300.
    assert_eq!(calibration.ratio_permille("openai", "gpt-test"), 1_020);
}

#[test]
fn overflow_facts_raise_the_ratio() {
    let mut calibration = Calibration::default();
    calibration.observe(&reported(1_000, 1_000));
    let counted = fact(
        2_000,
        UsageReport::Overflow { counted_tokens: Some(3_000), limit_tokens: Some(2_400) },
    );
    assert_eq!(calibration.observe(&counted), 1_530);
    let limit_only =
        fact(2_000, UsageReport::Overflow { counted_tokens: None, limit_tokens: Some(3_600) });
    // 3_600 / 2_000 = 1.8, plus the overflow margin (1.9), plus the calibration margin.
    assert_eq!(calibration.observe(&limit_only), 1_938);
    let blind = fact(2_000, UsageReport::Overflow { counted_tokens: None, limit_tokens: None });
    // The ratio in use (1.938) plus the overflow step is the sample; then the margin.
    assert_eq!(calibration.observe(&blind), (1_938 + OVERFLOW_STEP_PERMILLE) * 1_020 / 1_000);
}

#[test]
fn ratios_are_clamped_and_empty_estimates_ignored() {
    let mut calibration = Calibration::default();
    assert_eq!(calibration.observe(&reported(0, 5_000)), UNIT_RATIO_PERMILLE);
    assert!(calibration.models.is_empty());
    assert_eq!(calibration.observe(&reported(1_000, 100_000_000)), MAX_RATIO_PERMILLE);
    let mut low = Calibration::default();
    assert_eq!(low.observe(&reported(1_000_000, 10)), MIN_RATIO_PERMILLE);
}

/// An agent's first step (the task alone, beside tool schemas the estimate cannot see) measures
/// several times its estimate: it teaches no ratio, and the larger requests after it do.
#[test]
fn requests_below_the_sample_floor_teach_no_ratio() {
    let mut calibration = Calibration::default();
    let first_step = reported(MIN_SAMPLE_ESTIMATE_TOKENS - 1, 4 * MIN_SAMPLE_ESTIMATE_TOKENS);
    assert_eq!(calibration.observe(&first_step), UNIT_RATIO_PERMILLE);
    assert!(calibration.models.is_empty());
    assert_eq!(calibration.observe(&reported(MIN_SAMPLE_ESTIMATE_TOKENS, 640)), 1_275);
    let refused =
        fact(100, UsageReport::Overflow { counted_tokens: Some(150), limit_tokens: None });
    assert_eq!(calibration.observe(&refused), 1_530, "an overflow counts at any size");
}

#[test]
fn models_beyond_the_cap_drop_the_least_recently_updated() {
    let mut calibration = Calibration::default();
    for index in 0..=MAX_CALIBRATED_MODELS {
        let mut f = reported(1_000, 1_200);
        f.model = format!("m{index}");
        calibration.observe(&f);
    }
    assert_eq!(calibration.models.len(), MAX_CALIBRATED_MODELS);
    assert_eq!(calibration.ratio_permille("openai", "m0"), UNIT_RATIO_PERMILLE);
    assert_eq!(calibration.ratio_permille("openai", "m1"), 1_224);
}

#[test]
fn facts_and_calibration_round_trip_as_json() {
    let facts = vec![
        reported(1_000, 1_250),
        fact(1_000, UsageReport::Overflow { counted_tokens: None, limit_tokens: Some(1_100) }),
    ];
    let json = serde_json::to_value(&facts).unwrap_or_default();
    assert_eq!(json[0]["kind"], "response");
    assert_eq!(json[0]["inputTokens"], 1_250);
    assert_eq!(json[1]["kind"], "overflow");
    assert_eq!(json[1]["limitTokens"], 1_100);
    let back: Vec<UsageFact> = serde_json::from_value(json).unwrap_or_default();
    assert_eq!(back, facts);
    let calibration = Calibration::from_facts(&facts);
    let text = serde_json::to_string(&calibration).unwrap_or_default();
    let parsed: Calibration = serde_json::from_str(&text).unwrap_or_default();
    assert_eq!(parsed, calibration);
    assert!(
        serde_json::from_str::<UsageFact>(
            r#"{"provider":"p","model":"m","estimatedInputTokens":1,"kind":"bogus"}"#
        )
        .is_err()
    );
}

#[test]
fn facts_that_cannot_be_true_are_refused() {
    assert_eq!(reported(1_000, 1_200).validate(), Ok(()));
    let mut unnamed = reported(1_000, 1_200);
    unnamed.model.clear();
    assert_eq!(unnamed.validate(), Err(UsageFactError::Unnamed));
    assert_eq!(reported(1_000, 0).validate(), Err(UsageFactError::NoInput));
    let cached = fact(
        1_000,
        UsageReport::Response {
            input_tokens: 100,
            cached_input_tokens: 90,
            cache_write_tokens: 20,
            output_tokens: 0,
        },
    );
    let error = cached.validate().expect_err("more cached than counted");
    assert_eq!(error.code(), "invalid_usage_fact");
    let overflow = fact(1_000, UsageReport::Overflow { counted_tokens: None, limit_tokens: None });
    assert_eq!(overflow.validate(), Ok(()));
}

#[test]
fn the_wire_forms_are_the_documented_ones() {
    let text = r#"{"provider":"p","model":"m","estimatedInputTokens":900,"kind":"overflow","limitTokens":1000}"#;
    let fact: UsageFact = serde_json::from_str(text).unwrap();
    assert_eq!(
        fact.report,
        UsageReport::Overflow { counted_tokens: None, limit_tokens: Some(1000) }
    );
    assert_eq!(serde_json::to_string(&fact).unwrap(), text);
    let response = r#"{"provider":"p","model":"m","estimatedInputTokens":9,"kind":"response","inputTokens":10,"unknown":1}"#;
    let fact: UsageFact = serde_json::from_str(response).expect("unknown keys ignored");
    assert_eq!(
        serde_json::to_string(&fact).unwrap(),
        r#"{"provider":"p","model":"m","estimatedInputTokens":9,"kind":"response","inputTokens":10,"cachedInputTokens":0,"cacheWriteTokens":0,"outputTokens":0}"#
    );
    let missing = r#"{"provider":"p","model":"m","estimatedInputTokens":9,"kind":"response"}"#;
    assert!(serde_json::from_str::<UsageFact>(missing).is_err(), "inputTokens is required");
    let error = serde_json::from_str::<Calibration>(r#"{"model":[]}"#).unwrap_err();
    assert!(error.to_string().starts_with("unknown field `model`, expected `models`"), "{error}");
    let empty: Calibration = serde_json::from_str("{}").unwrap();
    assert_eq!(serde_json::to_string(&empty).unwrap(), r#"{"models":[]}"#);
    let model = r#"{"models":[{"provider":"p","model":"m","samplesPermille":[1000],"x":1}]}"#;
    assert!(serde_json::from_str::<Calibration>(model).is_err(), "unknown model key refused");
}

#[test]
fn a_calibrated_estimator_is_named_by_its_base_and_ratio() {
    use crate::budget::{CharEstimator, TokenEstimator};
    let unit = CalibratedEstimator::unit(CharEstimator);
    assert_eq!(unit.name(), "chars-v1", "at 1.0 the estimates are the base's");
    let scaled = CalibratedEstimator { base: CharEstimator, ratio_permille: 1_082 };
    assert_eq!(scaled.name(), "chars-v1 x1.082");
}
