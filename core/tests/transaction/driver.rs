//! A scripted host: answers each effect from a fixed script, records every effect handed out,
//! and keeps an in-memory ledger of durably appended checkpoints.
//!
//! The script must match the effects exactly: an effect with no scripted answer, or an answer
//! of the wrong kind, fails the test, and so does an answer left over at the end. So every
//! test states precisely which provider calls and appends happen.

use std::collections::VecDeque;

use contextfold_core::compaction::{
    AppendFailure, CompactInput, Compaction, CompactionOutcome, Effect, FinishReason,
    MalformedInputCircuit, NativeRequest, ProviderFailure, ProviderFailureKind, Step,
    SummarizeEffect, SummaryResponse,
};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use serde_json::{Value, json};

/// One scripted host reaction.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// Answer a Summarize effect.
    Summary(Result<SummaryResponse, ProviderFailure>),
    /// Answer a CompactNatively effect.
    Native(Result<Vec<Value>, ProviderFailure>),
    /// Answer an AppendCheckpoint effect (`Ok` appends to the ledger).
    Append(Result<(), AppendFailure>),
}

/// A completion that stopped naturally.
pub(crate) fn summary(text: impl Into<String>) -> Answer {
    Answer::Summary(Ok(SummaryResponse { text: text.into(), finish_reason: FinishReason::Stop }))
}

/// A completion that stopped on the output-length limit.
pub(crate) fn length_finish(text: impl Into<String>) -> Answer {
    Answer::Summary(Ok(SummaryResponse { text: text.into(), finish_reason: FinishReason::Length }))
}

/// A failed summarizer call.
pub(crate) fn summary_failure(kind: ProviderFailureKind) -> Answer {
    Answer::Summary(Err(failure(kind)))
}

/// Native output items.
pub(crate) fn native(items: Vec<Value>) -> Answer {
    Answer::Native(Ok(items))
}

/// A failed native call.
pub(crate) fn native_failure(kind: ProviderFailureKind) -> Answer {
    Answer::Native(Err(failure(kind)))
}

/// One valid compaction output item.
pub(crate) fn compaction_item(n: u32) -> Value {
    json!({"type": "compaction", "id": format!("cmp_{n}"), "encrypted_content": format!("gAAAA-opaque-{n}")})
}

/// A successful durable append.
pub(crate) fn append_ok() -> Answer {
    Answer::Append(Ok(()))
}

/// A failed durable append.
pub(crate) fn append_err(conflict: bool) -> Answer {
    Answer::Append(Err(AppendFailure { conflict, message: "scripted append failure".into() }))
}

/// A provider failure of `kind`.
pub(crate) fn failure(kind: ProviderFailureKind) -> ProviderFailure {
    ProviderFailure { kind, message: format!("scripted {kind:?}") }
}

/// What one driven compaction did.
#[derive(Debug)]
pub(crate) struct Driven {
    /// The final outcome.
    pub(crate) outcome: CompactionOutcome,
    /// Every effect handed out, in order.
    pub(crate) effects: Vec<Effect>,
    /// Checkpoints durably appended.
    pub(crate) ledger: Vec<HistoryCompactCheckpoint>,
    /// The circuit after the transaction.
    pub(crate) circuit: MalformedInputCircuit,
}

impl Driven {
    /// The Summarize effects handed out.
    pub(crate) fn summaries(&self) -> Vec<&SummarizeEffect> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Summarize(s) => Some(&**s),
                _ => None,
            })
            .collect()
    }

    /// The CompactNatively effects handed out.
    pub(crate) fn natives(&self) -> Vec<&NativeRequest> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::CompactNatively(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    /// The AppendCheckpoint effects handed out.
    pub(crate) fn appends(&self) -> Vec<&HistoryCompactCheckpoint> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::AppendCheckpoint(c) => Some(c.as_ref()),
                _ => None,
            })
            .collect()
    }
}

/// The name of an effect, for failure messages.
pub(crate) fn effect_name(effect: &Effect) -> &'static str {
    match effect {
        Effect::Summarize(_) => "summarize",
        Effect::CompactNatively(_) => "compact-natively",
        Effect::AppendCheckpoint(_) => "append-checkpoint",
    }
}

/// Runs one compaction to its end against `script`.
pub(crate) fn drive(input: CompactInput<'_>, script: Vec<Answer>) -> Driven {
    let tx = Compaction::start(input).expect("valid input");
    drive_started(tx, script, Vec::new())
}

/// Continues an already started transaction against `script`, recording into `ledger`.
pub(crate) fn drive_started(
    mut tx: Compaction<'_>,
    script: Vec<Answer>,
    mut ledger: Vec<HistoryCompactCheckpoint>,
) -> Driven {
    let mut script: VecDeque<Answer> = script.into();
    let mut effects = Vec::new();
    let outcome = loop {
        let effect = match tx.poll().expect("driver order") {
            Step::Done(outcome) => break *outcome,
            Step::Effect(effect) => effect,
        };
        let name = effect_name(&effect);
        let answer = script
            .pop_front()
            .unwrap_or_else(|| panic!("unscripted {name} effect handed out: {effect:?}"));
        match (&effect, answer) {
            (Effect::Summarize(_), Answer::Summary(result)) => {
                tx.handle_summary(result).expect("summary expected")
            }
            (Effect::CompactNatively(_), Answer::Native(result)) => {
                tx.handle_native(result).expect("native expected")
            }
            (Effect::AppendCheckpoint(checkpoint), Answer::Append(result)) => {
                if result.is_ok() {
                    ledger.push(checkpoint.as_ref().clone());
                }
                tx.handle_append(result).expect("append expected")
            }
            (_, answer) => panic!("{name} effect handed out, but the script answers {answer:?}"),
        }
        effects.push(effect);
    };
    assert!(script.is_empty(), "scripted answers left over (effects not handed out): {script:?}");
    Driven { outcome, effects, ledger, circuit: tx.into_circuit() }
}

/// Asserts the automatic triggers' raw tail: the events after `covered` up to the largest safe
/// cut fit [`RAW_TAIL_SHARE_PERCENT`] of `budget`, and the fold did not stop earlier than it had
/// to (one more safe unit would not fit).
pub(crate) fn assert_raw_tail_share(
    events: &[RuntimeEvent],
    cuts: &[usize],
    covered: usize,
    budget: u64,
    share_percent: u64,
) {
    use contextfold_core::budget::{CharEstimator, estimate_events};
    let share = budget * share_percent / 100;
    let largest = *cuts.last().expect("a safe cut");
    assert!(cuts.contains(&covered), "coverage ends at a safe cut");
    assert!(covered < largest, "the newest unit stays raw");
    let tail = estimate_events(&CharEstimator, &events[covered..largest]);
    assert!(tail <= share, "raw tail of {tail} tokens over its share {share}");
    if let Some(&earlier) = cuts.iter().rev().find(|&&cut| cut < covered) {
        let more = estimate_events(&CharEstimator, &events[earlier..largest]);
        assert!(more > share, "one more unit ({more} tokens) would fit the share {share}");
    }
}

/// Drives `input` to its end, answering every summarize effect with `summarize(effect, fold)`
/// (a stop finish) and appending every checkpoint; returns the outcome and the ledger.
pub(crate) fn drive_summaries(
    input: CompactInput<'_>,
    mut summarize: impl FnMut(&SummarizeEffect, &[RuntimeEvent]) -> String,
) -> (CompactionOutcome, Vec<HistoryCompactCheckpoint>) {
    let events = input.events.clone();
    let mut tx = Compaction::start(input).expect("valid input");
    let mut ledger = Vec::new();
    loop {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) => {
                let text = summarize(&effect, &events[effect.fold.start..effect.fold.end]);
                let answer = SummaryResponse { text, finish_reason: FinishReason::Stop };
                tx.handle_summary(Ok(answer)).expect("summary expected");
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                ledger.push(*checkpoint);
                tx.handle_append(Ok(())).expect("append expected");
            }
            Step::Effect(other) => panic!("unexpected effect {other:?}"),
            Step::Done(outcome) => return (*outcome, ledger),
        }
    }
}

/// [`drive_summaries`] with the extractive summary each effect asks for (the summarizer is
/// unlabelled unless the input names it, so the core treats it as one with an input window).
pub(crate) fn drive_extractive(
    input: CompactInput<'_>,
) -> (CompactionOutcome, Vec<HistoryCompactCheckpoint>) {
    let events = input.events.to_vec();
    drive_summaries(input, |effect, _| {
        contextfold_core::compaction::extractive_summary_for(&events, effect)
    })
}
