//! The `projection` export: pure functions over a log, converted to and from WIT values.

use contextfold_core::checkpoint::{
    FullVerification, PrefixOptions as CoreOptions, PrefixVerifier, ReplayPlan as CorePlan,
    evaluate_replay, match_checkpoint_prefix, safe_boundaries, select_safe_prefix,
    split_current_turn,
};
use contextfold_core::compaction::validate_summary;
use contextfold_core::digest::{digest_prefix, prefix_digests};
use contextfold_core::event::validate_log;
use contextfold_core::projection::{ProjectInput, project_calibrated};
use contextfold_core::{CharEstimator, ContextBudget, RuntimeEvent};

use crate::contextfold::compaction::types::{CompactionError, Diagnostic, FinishReason};
use crate::exports::contextfold::compaction::projection::{
    Guest, PrefixOptions, ProjectRequest, ReplayDecision, ReplayPlan, ReplayRejection,
    ReplayRequest, SafePrefix, SummaryDefect,
};
use crate::{Component, convert};

fn plan(plan: &CorePlan) -> ReplayPlan {
    ReplayPlan {
        covered: plan.covered as u64,
        checkpoint_tokens: plan.checkpoint_tokens,
        source_tokens: plan.source_tokens,
        replay_tokens: plan.replay_tokens,
        current_tokens: plan.current_tokens,
    }
}

/// `project` of `request` over `events` (the core's calibrated projection), verifying with
/// `verifier`.
pub(crate) fn project_events(
    events: &[RuntimeEvent],
    request: &ProjectRequest,
    verifier: &mut dyn PrefixVerifier,
) -> Result<String, CompactionError> {
    let checkpoint = convert::parse_optional_checkpoint(request.checkpoint.as_deref())?;
    let model = convert::model_facts(&request.model)?;
    let provider = request.provider.as_ref().map(convert::provider_identity);
    let input = ProjectInput {
        events,
        current_turn_id: request.current_turn.as_deref(),
        checkpoint: checkpoint.as_ref(),
        model: &model,
        provider: provider.as_ref(),
        fail_open: request.fail_open,
    };
    let calibration = convert::parse_calibration(request.calibration_json.as_deref())?;
    let report = project_calibrated(&input, &CharEstimator, Some(&calibration), verifier)
        .map_err(|e| convert::log_error(&e))?;
    Ok(serde_json::to_string(&report).unwrap_or_default())
}

impl Guest for Component {
    type EventLog = crate::event_log::GuestLog;

    fn project(request: ProjectRequest) -> Result<String, CompactionError> {
        let events = convert::parse_events(&request.events)?;
        project_events(&events, &request, &mut FullVerification::default())
    }

    fn calibrate(
        calibration_json: Option<String>,
        fact_json: String,
    ) -> Result<String, CompactionError> {
        let mut calibration = convert::parse_calibration(calibration_json.as_deref())?;
        calibration.observe(&convert::parse_usage_fact(&fact_json)?);
        Ok(serde_json::to_string(&calibration).unwrap_or_default())
    }

    fn digest_prefix(events: String) -> Result<String, CompactionError> {
        Ok(digest_prefix(&convert::parse_events(&events)?))
    }

    fn prefix_digests(events: String) -> Result<Vec<String>, CompactionError> {
        Ok(prefix_digests(&convert::parse_events(&events)?))
    }

    fn select_safe_prefix(
        events: String,
        options: PrefixOptions,
    ) -> Result<Option<SafePrefix>, CompactionError> {
        let events = convert::parse_events(&events)?;
        let options = CoreOptions {
            current_turn_id: options.current_turn,
            reserve_tail_tokens: options.reserve_tail_tokens,
            reserve_tail_turns: options.reserve_tail_turns as usize,
        };
        let prefix = select_safe_prefix(&events, &options, &CharEstimator)
            .map_err(|e| convert::log_error(&e))?;
        Ok(prefix.map(|p| SafePrefix { end: p.end as u64, turn_count: p.turn_count }))
    }

    fn safe_boundaries(
        events: String,
        current_turn: Option<String>,
    ) -> Result<Vec<u64>, CompactionError> {
        let events = convert::parse_events(&events)?;
        let cuts = safe_boundaries(&events, current_turn.as_deref())
            .map_err(|e| convert::log_error(&e))?;
        Ok(cuts.into_iter().map(|cut| cut as u64).collect())
    }

    fn match_checkpoint(
        checkpoint: String,
        events: String,
    ) -> Result<Result<u64, Diagnostic>, CompactionError> {
        let checkpoint = convert::parse_checkpoint(&checkpoint)?;
        let events = convert::parse_events(&events)?;
        Ok(match match_checkpoint_prefix(&checkpoint, &events) {
            Ok(matched) => Ok(matched.covered as u64),
            Err(mismatch) => Err(Diagnostic {
                code: mismatch.code().as_str().to_owned(),
                detail: mismatch.to_string(),
                tokens: None,
            }),
        })
    }

    fn evaluate_replay(request: ReplayRequest) -> Result<ReplayDecision, CompactionError> {
        let events = convert::parse_events(&request.events)?;
        validate_log(&events).map_err(|e| convert::log_error(&e))?;
        let checkpoint = convert::parse_checkpoint(&request.checkpoint)?;
        let prior_end = split_current_turn(&events, request.current_turn.as_deref())
            .map_err(|e| convert::log_error(&e))?;
        let budget = ContextBudget::from_model(&convert::model_facts(&request.model)?);
        let provider = request.provider.as_ref().map(convert::provider_identity);
        Ok(
            match evaluate_replay(
                &checkpoint,
                &events,
                prior_end,
                &budget,
                provider.as_ref(),
                &CharEstimator,
            ) {
                Ok(accepted) => ReplayDecision::Accepted(plan(&accepted)),
                Err(rejection) => ReplayDecision::Rejected(ReplayRejection {
                    diagnostic: convert::diagnostic(&rejection.diagnostic),
                    plan: rejection.plan.as_ref().map(plan),
                }),
            },
        )
    }

    fn validate_summary(
        text: String,
        finish: FinishReason,
        fold_tokens: u64,
    ) -> Result<u64, SummaryDefect> {
        validate_summary(&text, convert::finish_reason(&finish), fold_tokens, &CharEstimator)
            .map(|summary| summary.estimated_tokens)
            .map_err(|defect| SummaryDefect {
                code: defect.code().as_str().to_owned(),
                detail: defect.detail().to_owned(),
            })
    }
}
