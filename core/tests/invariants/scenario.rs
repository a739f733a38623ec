//! Generated sessions and scripted provider behaviour: the plans [`Driver`] plays and the
//! [`Trace`] it records for the invariant properties to inspect.
//!
//! The plans cover what real agent logs carry, not only tidy turns: parallel tool calls,
//! interrupted calls, error results, results arriving in a later turn, hosted (provider-run)
//! calls, system and runtime notes, pinned events, an abandoned streaming (`partial`) step,
//! model-window and provider switches, manual and overflow-triggered compactions, a clock that
//! goes backwards; and providers that answer well, malformed, truncated, empty, refused, fail
//! in every class, cancel, or lose the append (failed or lost compare-and-swap).

use contextfold_core::checkpoint::RecordedCheckpointEvent;
use contextfold_core::compaction::{CompactionOutcome, ProviderFailureKind, Trigger};
use contextfold_core::projection::Projection;
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use proptest::prelude::*;

pub(crate) use crate::driver::Driver;

/// One tool call of an agent step.
#[derive(Debug, Clone)]
pub(crate) struct CallPlan {
    /// Size of its result.
    pub(crate) result_bytes: usize,
    /// No result is ever recorded (the call was interrupted).
    pub(crate) interrupted: bool,
    /// The result reports a tool failure (`isError`).
    pub(crate) error: bool,
    /// The result is recorded only after the next turn's user message.
    pub(crate) late: bool,
    /// A provider-run (hosted) call, answered in the same step.
    pub(crate) hosted: bool,
}

/// A note recorded before a turn's user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotePlan {
    None,
    System,
    Runtime,
}

/// One user turn.
#[derive(Debug, Clone)]
pub(crate) struct TurnPlan {
    /// Agent steps, each a batch of parallel tool calls.
    pub(crate) steps: Vec<Vec<CallPlan>>,
    /// Switch the model's context window to this one before the turn.
    pub(crate) window: Option<u64>,
    /// Run a manual compaction between the previous turn and this one.
    pub(crate) manual_before: bool,
    /// Switch to another connection and model (V3 state no longer matches).
    pub(crate) switch_provider: bool,
    /// A system or runtime note before the user message.
    pub(crate) note: NotePlan,
    /// The user message is pinned (part of the live head, never covered while live).
    pub(crate) pin_user: bool,
    /// The turn's first step starts streaming (a `partial` event), is evaluated while live,
    /// then abandoned.
    pub(crate) abandoned_stream: bool,
    /// After this step (index), the provider answers with a context overflow although the
    /// estimate fit: the runtime compacts with [`Trigger::Overflow`].
    pub(crate) overflow_after_step: Option<usize>,
    /// The host clock moves back 90 s before this turn instead of forward.
    pub(crate) clock_back: bool,
}

/// How the scripted text summarizer answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SummaryScript {
    Good,
    MissingSection,
    LengthFinish,
    OpenFence,
    Empty,
    Refusal,
    Fail(ProviderFailureKind),
    Cancel,
}

/// How the scripted Codex compactor answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NativeScript {
    One,
    Zero,
    Two,
    Fail(ProviderFailureKind),
}

/// How the in-memory ledger answers an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppendScript {
    Durable,
    Fails,
    /// Another writer won the compare-and-swap (nothing of ours is recorded).
    Conflict,
}

/// A whole generated case: the session and the providers' behaviour (cycled).
#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    pub(crate) native: bool,
    pub(crate) turns: Vec<TurnPlan>,
    pub(crate) summaries: Vec<SummaryScript>,
    pub(crate) natives: Vec<NativeScript>,
    pub(crate) appends: Vec<AppendScript>,
}

/// One compaction as seen from outside the transaction.
#[derive(Debug, Clone)]
pub(crate) struct CompactionRecord {
    pub(crate) trigger: Trigger,
    pub(crate) current_turn: Option<String>,
    pub(crate) log_before: Vec<RuntimeEvent>,
    /// The log after the driver applied what the outcome handed back (a failure note).
    pub(crate) log_after: Vec<RuntimeEvent>,
    pub(crate) ledger_before: Vec<RecordedCheckpointEvent>,
    pub(crate) ledger_after: Vec<RecordedCheckpointEvent>,
    pub(crate) previous: Option<HistoryCompactCheckpoint>,
    pub(crate) offered: Vec<HistoryCompactCheckpoint>,
    pub(crate) append_results: Vec<AppendScript>,
    pub(crate) outcome: CompactionOutcome,
}

/// One projection of the next request.
#[derive(Debug, Clone)]
pub(crate) struct ProjectionRecord {
    pub(crate) events: Vec<RuntimeEvent>,
    pub(crate) current_turn: Option<String>,
    /// The checkpoint the driver offered: the tip it holds in memory, as a host does.
    pub(crate) checkpoint: Option<HistoryCompactCheckpoint>,
    pub(crate) ledger: Vec<RecordedCheckpointEvent>,
    pub(crate) model: contextfold_core::ModelFacts,
    /// The connection and model the request goes to.
    pub(crate) provider: contextfold_core::compaction::ProviderIdentity,
    pub(crate) fail_open: bool,
    pub(crate) projection: Projection,
}

/// Everything that happened in one case.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub(crate) compactions: Vec<CompactionRecord>,
    pub(crate) projections: Vec<ProjectionRecord>,
    pub(crate) final_log: Vec<RuntimeEvent>,
    pub(crate) final_ledger: Vec<RecordedCheckpointEvent>,
}

fn failure_kind() -> impl Strategy<Value = ProviderFailureKind> {
    prop_oneof![
        Just(ProviderFailureKind::Rejected),
        Just(ProviderFailureKind::Overflow),
        Just(ProviderFailureKind::Auth),
        Just(ProviderFailureKind::Billing),
        Just(ProviderFailureKind::RateLimited),
        Just(ProviderFailureKind::Unavailable),
        Just(ProviderFailureKind::Cancelled),
    ]
}

fn summary_script() -> impl Strategy<Value = SummaryScript> {
    prop_oneof![
        12 => Just(SummaryScript::Good),
        1 => Just(SummaryScript::MissingSection),
        1 => Just(SummaryScript::LengthFinish),
        1 => Just(SummaryScript::OpenFence),
        1 => Just(SummaryScript::Empty),
        1 => Just(SummaryScript::Refusal),
        2 => failure_kind().prop_map(SummaryScript::Fail),
        1 => Just(SummaryScript::Cancel),
    ]
}

fn native_script() -> impl Strategy<Value = NativeScript> {
    prop_oneof![
        6 => Just(NativeScript::One),
        1 => Just(NativeScript::Zero),
        1 => Just(NativeScript::Two),
        2 => failure_kind().prop_map(NativeScript::Fail),
    ]
}

fn call_plan() -> impl Strategy<Value = CallPlan> {
    let size = prop_oneof![6 => 50usize..400, 3 => 1_000usize..4_000, 1 => 12_000usize..24_000];
    (size, 0u8..25, 0u8..10, 0u8..20, 0u8..16).prop_map(|(result_bytes, cut, err, late, hosted)| {
        CallPlan {
            result_bytes,
            interrupted: cut == 0,
            error: err == 0,
            late: late == 0 && cut != 0,
            hosted: hosted == 0,
        }
    })
}

fn turn_plan() -> impl Strategy<Value = TurnPlan> {
    let window = prop_oneof![
        8 => Just(None),
        1 => prop::sample::select(vec![4_000u64, 6_000, 12_000, 16_000, 32_000, 128_000]).prop_map(Some),
    ];
    let note = prop_oneof![8 => Just(NotePlan::None), 1 => Just(NotePlan::System), 1 => Just(NotePlan::Runtime)];
    (
        (prop::collection::vec(prop::collection::vec(call_plan(), 1..4), 0..4), window, 0u8..12),
        (0u8..20, note, 0u8..10, 0u8..10, 0u8..12, 0usize..4, 0u8..12),
    )
        .prop_map(
            |((steps, window, manual), (switch, note, pin, stream, overflow, at, back))| TurnPlan {
                overflow_after_step: (overflow == 0 && at < steps.len()).then_some(at),
                steps,
                window,
                manual_before: manual == 0,
                switch_provider: switch == 0,
                note,
                pin_user: pin == 0,
                abandoned_stream: stream == 0,
                clock_back: back == 0,
            },
        )
}

/// Sessions of 3–14 turns with scripted providers.
pub(crate) fn scenario() -> impl Strategy<Value = Scenario> {
    (
        any::<bool>(),
        prop::collection::vec(turn_plan(), 3..14),
        prop::collection::vec(summary_script(), 1..8),
        prop::collection::vec(native_script(), 1..6),
        prop::collection::vec(
            prop_oneof![
                12 => Just(AppendScript::Durable),
                1 => Just(AppendScript::Fails),
                1 => Just(AppendScript::Conflict),
            ],
            1..6,
        ),
    )
        .prop_map(|(native, turns, summaries, natives, appends)| Scenario {
            native,
            turns,
            summaries,
            natives,
            appends,
        })
}

/// The number of proptest cases: `CONTEXTFOLD_PROPTEST_CASES`, default 128.
pub(crate) fn cases() -> u32 {
    std::env::var("CONTEXTFOLD_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(128)
}
