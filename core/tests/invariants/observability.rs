//! Invariants 9 (failure is observable) and 10 (authority is preserved).

use contextfold_core::compaction::{OutcomeKind, Trigger};
use contextfold_core::projection::Part;
use contextfold_core::{EventContent, ProviderState, ReasonCode};
use proptest::prelude::*;

use crate::scenario::{AppendScript, Driver, scenario};

/// Invariant 9: Every outcome names its reason in its diagnostics; a failed append, a provider
/// failure and a fail-open path each leave a diagnostic; only a failed manual compaction
/// adds the visible `context_compaction_failed_open` note.
#[test]
fn invariant_09_failure_is_observable() {
    crate::check("invariant_09_failure_is_observable", scenario(), |case| {
        let trace = Driver::run(case);
        for record in &trace.compactions {
            let outcome = &record.outcome;
            prop_assert!(
                outcome.diagnostics.iter().any(|d| d.code == outcome.reason),
                "reason {} has no diagnostic",
                outcome.reason
            );
            if record.append_results.contains(&AppendScript::Fails) {
                prop_assert!(
                    outcome.diagnostics.iter().any(|d| d.code == ReasonCode::AppendFailed),
                    "append failure not in diagnostics: {:?}",
                    outcome.diagnostics
                );
            }
            if record.append_results.contains(&AppendScript::Conflict) {
                prop_assert!(
                    outcome.diagnostics.iter().any(|d| d.code == ReasonCode::SuccessorConflict),
                    "lost compare-and-swap not in diagnostics: {:?}",
                    outcome.diagnostics
                );
            }
            let failed = matches!(outcome.outcome, OutcomeKind::FailedOpen);
            if failed && record.trigger == Trigger::Manual {
                let noted = matches!(&outcome.failure_note,
                Some(EventContent::RuntimeNote { code, .. }) if code == "context_compaction_failed_open");
                prop_assert!(noted, "manual fail-open without its note");
            } else {
                prop_assert!(outcome.failure_note.is_none(), "note outside a manual fail-open");
            }
        }
        Ok(())
    })
}

/// Invariant 10: A summary never becomes a source fact: no checkpoint text or provider state is
/// written as a RuntimeEvent, V3 provider state never reaches the model as text, and it is
/// replayed only to the connection and model that produced it.
#[test]
fn invariant_10_authority_is_preserved() {
    crate::check("invariant_10_authority_is_preserved", scenario(), |case| {
        let trace = Driver::run(case);
        for record in &trace.compactions {
            for cp in &record.offered {
                if let Some(summary) = cp.summary() {
                    // The driver applies every failure note an outcome hands back, so a summary
                    // smuggled into one would land in the log.
                    prop_assert!(
                        trace.final_log.iter().all(|e| match &e.content {
                            EventContent::SystemNote { text }
                            | EventContent::AssistantText { text }
                            | EventContent::RuntimeNote { text, .. }
                            | EventContent::UserText { text, .. } => !text.contains(summary.trim()),
                            _ => true,
                        }),
                        "a summary became a RuntimeEvent"
                    );
                }
                if let Some(ProviderState::OpenaiCodexRemoteV2 { encrypted_content, .. }) =
                    cp.provider_state()
                {
                    let json = serde_json::to_string(&trace.final_log).expect("serializable");
                    prop_assert!(
                        !json.contains(encrypted_content.as_str()),
                        "provider state in the log"
                    );
                }
            }
        }
        for p in &trace.projections {
            // V3 state replays only to the connection and model that produced it.
            if let Some(ProviderState::OpenaiCodexRemoteV2 { connection_slug, model_id, .. }) = p
                .projection
                .checkpoint
                .as_ref()
                .and(p.checkpoint.as_ref())
                .and_then(|c| c.provider_state())
            {
                prop_assert!(
                    *connection_slug == p.provider.connection_slug
                        && *model_id == p.provider.model_id,
                    "V3 state of {}/{} replayed to {}/{}",
                    connection_slug,
                    model_id,
                    p.provider.connection_slug,
                    p.provider.model_id
                );
            }
            let Some(ProviderState::OpenaiCodexRemoteV2 { encrypted_content, .. }) =
                p.checkpoint.as_ref().and_then(|c| c.provider_state())
            else {
                continue;
            };
            for part in p.projection.messages.iter().flat_map(|m| m.parts.iter()) {
                if let Part::Text { text } = part {
                    prop_assert!(
                        !text.contains(encrypted_content.as_str()),
                        "provider state rendered as text"
                    );
                }
            }
        }
        Ok(())
    })
}
