//! What background preparation costs through the real component (issue 39): `Plugin::
//! preparations` counts each preparation's end (used, superseded, wasted, failed) with its
//! summarizer tokens, as the native runtime's `PreparationStats` does, and a model's
//! `prepare-at-percent` (WIT `model-facts`) reaches the core. Needs the built component: run
//! `scripts/test-component.sh`.

use crate::component_prepare::{
    Counting, SESSION, codes, compactor, history, outcome, request, step, until_hard_trigger,
    until_prepared,
};
use crate::component_support::ledger_with;

use contextfold_host::component::ComponentError;
use contextfold_host::component::bindings::contextfold::compaction::types::{OutcomeKind, Trigger};
use contextfold_host::preparation::PreparationStats;

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_used_preparation_counts_its_tokens_as_used() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    assert_eq!(plugin.preparations(SESSION), PreparationStats::default());
    let (next, _) = until_prepared(&mut plugin, &ledger);
    // Skipped preparations (below the soft threshold) cost nothing and are not counted.
    let tokens = provider.tokens();
    assert!(tokens > 0);
    let held = PreparationStats {
        started: 1,
        prepared: 1,
        held: 1,
        tokens,
        held_tokens: tokens,
        ..PreparationStats::default()
    };
    assert_eq!(plugin.preparations(SESSION), held);
    let result = until_hard_trigger(&mut plugin, &ledger, next);
    assert!(codes(&result).iter().any(|c| c == "prepared_checkpoint_used"), "{:?}", codes(&result));
    assert_eq!(provider.tokens(), tokens, "the adopting compaction spent nothing");
    assert_eq!(
        plugin.preparations(SESSION),
        PreparationStats {
            started: 1,
            prepared: 1,
            used: 1,
            tokens,
            used_tokens: tokens,
            ..PreparationStats::default()
        }
    );
    assert_eq!(plugin.preparations("another-session"), PreparationStats::default());
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_newer_preparation_and_a_manual_compaction_supersede_the_held_one() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    let (next, _) = until_prepared(&mut plugin, &ledger);
    let first = provider.tokens();
    // The log grows; a newer preparation replaces the held checkpoint.
    step(&ledger, next, 1_200);
    let again = plugin.prepare(&request(Trigger::Prepare, "cp-prepared-2")).expect("runs");
    assert_eq!(again.outcome, OutcomeKind::Prepared, "{}", again.outcome_json);
    let second = provider.tokens() - first;
    assert_eq!(
        plugin.preparations(SESSION),
        PreparationStats {
            started: 2,
            prepared: 2,
            superseded: 1,
            wasted: 1,
            held: 1,
            tokens: first + second,
            wasted_tokens: first,
            held_tokens: second,
            ..PreparationStats::default()
        }
    );
    // A manual compaction records its own checkpoint: the held one can no longer succeed it.
    let manual = plugin.compact(&request(Trigger::Manual, "cp-manual")).expect("compacts");
    assert_eq!(manual.outcome, OutcomeKind::Recorded, "{}", manual.outcome_json);
    assert_eq!(plugin.prepared_checkpoint(SESSION), None);
    let stats = plugin.preparations(SESSION);
    assert_eq!((stats.superseded, stats.wasted, stats.used), (2, 2, 0), "{stats:?}");
    assert_eq!((stats.held, stats.held_tokens), (0, 0), "{stats:?}");
    assert_eq!(stats.wasted_tokens, first + second, "{stats:?}");
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_refused_preparation_is_wasted_and_a_failed_one_counts_as_failed() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    let (next, _) = until_prepared(&mut plugin, &ledger);
    let tokens = provider.tokens();
    // Another writer records a checkpoint first: the held one is refused when needed.
    let mut other = compactor(&ledger, &Counting::default());
    let recovered = other.compact(&request(Trigger::Overflow, "cp-other")).expect("compacts");
    assert_eq!(recovered.outcome, OutcomeKind::Recorded, "{}", recovered.outcome_json);
    step(&ledger, next, 40_000);
    let result = plugin.compact(&request(Trigger::MidTurn, "cp-foreground")).expect("runs");
    assert!(codes(&result).iter().any(|c| c == "prepared_checkpoint_rejected"));
    assert_eq!(
        plugin.preparations(SESSION),
        PreparationStats {
            started: 1,
            prepared: 1,
            wasted: 1,
            tokens,
            wasted_tokens: tokens,
            ..PreparationStats::default()
        }
    );
    // A preparation whose summarizer fails builds nothing: failed, its request's tokens wasted.
    step(&ledger, next + 1, 30_000);
    provider.fail(true);
    let before = provider.tokens();
    let failed = plugin.prepare(&request(Trigger::Prepare, "cp-failing")).expect("runs");
    assert_ne!(failed.outcome, OutcomeKind::Prepared, "{}", failed.outcome_json);
    assert_ne!(failed.outcome, OutcomeKind::Skipped, "{}", failed.outcome_json);
    let spent = provider.tokens() - before;
    assert!(spent > 0);
    let stats = plugin.preparations(SESSION);
    assert_eq!((stats.started, stats.failed, stats.held), (2, 1, 0), "{stats:?}");
    assert_eq!((stats.tokens, stats.wasted_tokens), (tokens + spent, tokens + spent));
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_model_with_prepare_at_percent_20_prepares_where_the_default_does_not() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    let default = plugin.prepare(&request(Trigger::Prepare, "cp-default")).expect("runs");
    assert_eq!(
        (default.outcome, default.reason.as_str()),
        (OutcomeKind::Skipped, "below_soft_threshold"),
        "{}",
        default.outcome_json
    );
    assert_eq!(provider.calls(), 0);
    let mut early = request(Trigger::Prepare, "cp-early");
    early.model.prepare_at_percent = Some(20);
    let prepared = plugin.prepare(&early).expect("runs");
    assert_eq!(prepared.outcome, OutcomeKind::Prepared, "{}", prepared.outcome_json);
    assert_eq!(outcome(&prepared)["checkpoint"]["checkpointId"], "cp-early");
    assert_eq!(plugin.preparations(SESSION).prepared, 1);
    // The core's range holds across the boundary: above 90% is refused, typed.
    let mut late = request(Trigger::Prepare, "cp-late");
    late.model.prepare_at_percent = Some(95);
    match plugin.prepare(&late) {
        Err(ComponentError::Guest(error)) => {
            assert_eq!((error.kind, error.code.as_str()), ("invalid_input", "invalid_model_facts"));
        }
        other => panic!("expected invalid_model_facts, got {other:?}"),
    }
}
