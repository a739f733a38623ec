//! Summary validation (`validate_summary`) under both finish reasons and small and large folds.
#![no_main]

use contextfold_core::CharEstimator;
use contextfold_core::compaction::{FinishReason, validate_summary};
use contextfold_fuzz::{assert_code, text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let summary = text(input);
    for (finish, fold) in
        [(FinishReason::Stop, 100), (FinishReason::Stop, 20_000), (FinishReason::Length, 100)]
    {
        let stop = finish == FinishReason::Stop;
        match validate_summary(&summary, finish, fold, &CharEstimator) {
            Ok(_) => assert!(
                stop && !summary.trim().is_empty(),
                "an empty or length-cut summary was accepted"
            ),
            Err(defect) => assert_code("summary", defect.code().as_str()),
        }
    }
});
