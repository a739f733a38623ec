//! The internals of [`crate::compaction::Compaction`]: phases, attempts, rolling steps, the
//! write gate and the fail-open rules. Kept apart from the public driver API so each file reads
//! on its own.
//!
//! # Rolling steps
//!
//! One transaction may record several checkpoints. Each step folds the largest safe cut up to
//! the planner's target whose compactor input fits (see [`crate::compaction::fold_search`]),
//! durably appends its checkpoint, and only then lets the next step build on it. Steps go on
//! while the request still exceeds the budget: up to the target, then (the reserved tail
//! dropped) up to the largest safe cut, and at most [`MAX_ROLLING_STEPS`] checkpoints. An
//! offline summarizer without an input window (the extractive one) folds the whole target at
//! once. When no fold fits because one event alone exceeds the window, the same search runs
//! again with the largest payloads sent as archive-addressed markers. `summary_input_cannot_fit`
//! remains only when even the smallest fold cannot fit that way.

use crate::budget::{TokenEstimator, estimate_events};
use crate::checkpoint::{CheckpointProjection, HighWater, HistoryCompactCheckpoint};
use crate::compaction::circuit::{FingerprintInput, InputFingerprint, RequestShape, fingerprint};
use crate::compaction::effects::{
    AppendFailure, Attempt, AttemptKind, CompactionOutcome, DriverError, Effect, MAX_ROLLING_STEPS,
    MAX_SUMMARY_TARGET_TOKENS, MIN_SUMMARY_TARGET_TOKENS, OutcomeKind, ProviderFailure,
    ProviderFailureKind, Step, SummarizeEffect, SummaryResponse, Trigger,
};
use crate::compaction::envelope::{envelope_tokens, summary_limitations};
use crate::compaction::extractive::EXTRACTIVE_PRODUCER;
use crate::compaction::fold_search::largest_fitting;
use crate::compaction::input::{CompactInput, Compactor};
use crate::compaction::native::{
    NativeBinding, NativeInputError, accept_native_output, build_native_request,
};
use crate::compaction::plan::{Sizes, UsableCheckpoint, replay_tokens};
use crate::compaction::summary_request::{
    SummaryRequest, build_oversized_summary_request, build_repair_request, build_summary_request,
    is_compaction_failure_note, shrink_for_overflow_retry, summary_payload,
};
use crate::compaction::summary_validation::validate_summary;
use crate::diagnostics::{Diagnostic, ReasonCode};
use crate::event::EventContent;
use crate::prefix_match::coverage_and_bytes;
use crate::projection::live_head::Remainder;
use crate::projection::materialize::{REPLAY_LIMITATION, estimate_messages, materialize_events};
use crate::projection::{ProjectInput, project};
use crate::prune::ArchiveAddress;
use crate::quality::gate::listed_artifact_tokens;
use crate::recovery::is_valid_successor;
use crate::replay::checkpoint_tokens;
use crate::safe_prefix::Fold;

mod head;
mod quality;

/// The result a handler is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiting {
    Summary,
    Native,
    Append,
}

impl Waiting {
    fn name(self) -> &'static str {
        match self {
            Waiting::Summary => "summary",
            Waiting::Native => "native",
            Waiting::Append => "append",
        }
    }
}

#[derive(Debug)]
enum Phase {
    Ready(Effect),
    Awaiting(Waiting),
    Done { outcome: Box<CompactionOutcome> },
}

/// State of the text-summary attempt.
#[derive(Debug)]
struct TextAttempt {
    previous_summary: Option<String>,
    fold_start: usize,
    fold_tokens: u64,
    request: SummaryRequest,
    fingerprint: InputFingerprint,
    repaired: bool,
    shrunk: bool,
    /// The gated first summary while its retention repair is pending.
    before_repair: Option<crate::quality::GateOutcome>,
    /// This step folds from the start of the log (see [`quality`]).
    recompacted: bool,
}

#[derive(Debug)]
pub(crate) struct Run<'a, E> {
    input: CompactInput<'a>,
    estimator: E,
    usable: Option<UsableCheckpoint>,
    sizes: Sizes,
    diagnostics: Vec<Diagnostic>,
    attempts: Vec<Attempt>,
    phase: Phase,
    /// End of this step's fold (`events[..end]` is covered once it is recorded).
    end: usize,
    /// Where the steps are heading: the planner's target, then the largest cut.
    target: usize,
    /// Every safe cut of the log, ascending.
    cuts: Vec<usize>,
    text: Option<TextAttempt>,
    text_fallback_used: bool,
    pending: Option<(HistoryCompactCheckpoint, u64)>,
    /// Checkpoints durably recorded by this transaction; the last one is the tip.
    recorded: Vec<HistoryCompactCheckpoint>,
    /// A re-compaction from the start failed once: this transaction rolls on instead.
    recompaction_refused: bool,
}

impl<'a, E: TokenEstimator> Run<'a, E> {
    pub(crate) fn new(
        input: CompactInput<'a>,
        estimator: E,
        usable: Option<UsableCheckpoint>,
        sizes: Sizes,
        diagnostics: Vec<Diagnostic>,
    ) -> Self {
        let placeholder = Box::new(CompactionOutcome {
            outcome: OutcomeKind::Skipped,
            reason: ReasonCode::BelowHighWater,
            checkpoint: None,
            diagnostics: Vec::new(),
            attempts: Vec::new(),
            failure_note: None,
            tokens: sizes.figures(sizes.before),
        });
        Self {
            input,
            estimator,
            usable,
            sizes,
            diagnostics,
            attempts: Vec::new(),
            phase: Phase::Done { outcome: placeholder },
            end: 0,
            target: 0,
            cuts: Vec::new(),
            text: None,
            text_fallback_used: false,
            pending: None,
            recorded: Vec::new(),
            recompaction_refused: false,
        }
    }

    pub(crate) fn begin(&mut self, target: usize, cuts: Vec<usize>) {
        self.target = target;
        self.cuts = cuts;
        self.start_step();
    }

    /// Starts one rolling step with the selected compactor.
    fn start_step(&mut self) {
        self.text_fallback_used = false;
        match self.input.compactor {
            Compactor::TextSummary => self.start_text(),
            Compactor::OpenaiCodexNative => self.start_native(),
        }
    }

    pub(crate) fn events(&self) -> &[crate::event::RuntimeEvent] {
        &self.input.events
    }

    fn prefix_end(&self) -> usize {
        self.end
    }

    /// Cuts this step may fold to: up to the target, past the usable coverage and past the
    /// latest durable checkpoint's claim (a step never records less coverage than the tip, even
    /// one that cannot replay here, so high water only moves forward and recovery picks it).
    fn candidates(&self) -> Vec<usize> {
        let tip = self.input.checkpoint.as_ref().map_or(0, |c| c.coverage.event_count);
        let tip = usize::try_from(tip).unwrap_or(usize::MAX);
        let covered = self.usable.as_ref().map_or(0, |u| u.covered).max(tip);
        let recompressing = self.recompressing();
        self.cuts
            .iter()
            .copied()
            .filter(|&cut| (cut > covered || recompressing && cut == covered) && cut <= self.target)
            .collect()
    }

    /// Whether this step compresses the usable checkpoint's own prefix again: the planner found
    /// it over the current budget with nothing new to fold ([`ReasonCode::RecompressForBudget`]).
    /// Its checkpoint is an equal-coverage successor, and must be smaller than the one it
    /// replaces.
    fn recompressing(&self) -> bool {
        self.recorded.is_empty() && self.usable.as_ref().is_some_and(|u| u.covered == self.target)
    }

    /// The summarizer's input window: none for the offline extractive summarizer, which reads
    /// the fold itself; otherwise the history budget.
    fn input_window(&self) -> u64 {
        match self.input.summarizer_label.as_deref() {
            Some(EXTRACTIVE_PRODUCER) => u64::MAX,
            _ => self.sizes.budget.history_budget,
        }
    }

    /// Reports that the whole target could not be folded in one step.
    fn note_split(&mut self, what: &str, end: usize) {
        if end < self.target {
            self.diagnostics.push(Diagnostic::new(
                ReasonCode::FoldSplit,
                format!(
                    "the {what} input for events[..{}] cannot fit; step {} folds events[..{end}]",
                    self.target,
                    self.recorded.len() + 1
                ),
            ));
        }
    }

    /// The summary target of this step (see [`SummarizeEffect::target_tokens`]): what the
    /// budget leaves beside the live head and the raw events after the fold. A preparation's
    /// is the same: the growth until its adoption fits between the after-compaction share and
    /// the budget, and a checkpoint that then does not fit is refused at adoption.
    fn summary_target(&self) -> u64 {
        let budget = self.sizes.budget.history_budget;
        let rest = replay_tokens(
            None,
            &self.input.events,
            self.sizes.prior_end,
            self.end,
            budget,
            &self.estimator,
        );
        let envelope = self.envelope();
        let room = budget.saturating_sub(rest).saturating_sub(envelope);
        let share_percent = self.input.model.after_compaction_share();
        let share = (budget * share_percent / 100).saturating_sub(rest).saturating_sub(envelope);
        // However large the rest of the request, the summary may take half the share.
        let floor = budget * share_percent / 200;
        // A summary must also be smaller than what it replaces, or the write gate refuses it.
        let smaller = self.replaced_tokens(self.end).saturating_sub(envelope);
        share
            .max(floor)
            .min(MAX_SUMMARY_TARGET_TOKENS)
            .min(room)
            .max(MIN_SUMMARY_TARGET_TOKENS)
            .min(smaller.max(1))
    }

    /// Tokens of the source a checkpoint over `events[..end]` replaces: the prefix, less the
    /// live head, which is replayed beside the checkpoint.
    fn replaced_tokens(&self, end: usize) -> u64 {
        let head = Remainder::split(&self.input.events, self.sizes.prior_end, end).head;
        let head_tokens: u64 =
            head.iter().map(|event| crate::budget::estimate_event(&self.estimator, event)).sum();
        crate::budget::source_tokens(&self.estimator, &self.input.events[..end])
            .saturating_sub(head_tokens)
    }

    /// Id of the checkpoint this step records: the given id for the first, `<id>.<n>` after.
    fn step_checkpoint_id(&self) -> String {
        match self.recorded.len() {
            0 => self.input.new_checkpoint_id.clone(),
            n => format!("{}.{}", self.input.new_checkpoint_id, n + 1),
        }
    }

    // ----- text summary -------------------------------------------------------------------

    fn start_text(&mut self) {
        let (previous_summary, fold_start) = match &self.usable {
            Some(u) => match u.checkpoint.summary() {
                Some(summary) => (Some(summary.to_owned()), u.covered),
                None => (None, 0),
            },
            None => (None, 0),
        };
        self.attempts.push(Attempt {
            kind: AttemptKind::TextSummary,
            dispatches: 0,
            result: ReasonCode::Cancelled,
        });
        let window = self.input_window();
        let (mut previous_summary, mut fold_start) = (previous_summary, fold_start);
        let (found, recompacted) = match self.recompaction_due() {
            Some((code, why)) => {
                let (events, estimator) = (&*self.input.events, &self.estimator);
                let fresh = largest_fitting(
                    &self.candidates(),
                    |end| build_summary_request(None, &events[..end], window, estimator),
                    |_| true,
                );
                let fresh_request = match &fresh {
                    Some(Ok((_, request))) => Some(request),
                    _ => None,
                };
                let fits = self.fold_from_start(
                    code,
                    fresh_request,
                    previous_summary.as_deref(),
                    fold_start,
                );
                let detail = if fits {
                    (previous_summary, fold_start) = (None, 0);
                    format!("{why}: folding the log again from its start")
                } else {
                    format!("{why}; the whole prefix does not fit one request, rolling on")
                };
                self.diagnostics.push(Diagnostic::new(code, detail));
                (fresh.filter(|_| fits), fits)
            }
            None => (None, false),
        };
        let (this, rolled) = (&*self, previous_summary.is_some());
        let found = found.or_else(|| {
            largest_fitting(
                &this.candidates(),
                |end| {
                    build_summary_request(
                        previous_summary.as_deref(),
                        &this.summarized(fold_start, end, rolled),
                        window,
                        &this.estimator,
                    )
                },
                |_| true,
            )
        });
        let found = match found {
            // One event alone exceeds the window: the same search again, with the largest
            // payloads sent as archive-addressed markers. The largest fold, not the smallest: a
            // fold that ends inside a turn replays that turn's notes and user texts verbatim
            // (its live head), so a small fold of a turn that opens with the oversized payload
            // replaces almost nothing, and its summary cannot be smaller than what it replaces.
            Some(Err(_)) => largest_fitting(
                &this.candidates(),
                |end| {
                    build_oversized_summary_request(
                        previous_summary.as_deref(),
                        &this.summarized(fold_start, end, rolled),
                        window,
                        &this.estimator,
                    )
                },
                |_| true,
            ),
            found => found,
        };
        let (end, request) = match found {
            Some(Ok(found)) => found,
            Some(Err(error)) => {
                let detail = format!(
                    "summarizer request not dispatched: even the smallest safe fold cannot fit: \
                     {error}"
                );
                return self.fail_open(ReasonCode::SummaryInputCannotFit, detail);
            }
            None => return self.fail_open(ReasonCode::NoSafePrefix, "no fold left".into()),
        };
        self.end = end;
        self.note_split("summarizer", end);
        // The fold as the summarizer can summarize it: a payload sent as an archive marker is
        // not part of what a summary's size is judged against.
        let fold = &self.input.events[fold_start..end];
        let archived: u64 = request
            .omitted_payloads
            .iter()
            .filter_map(|o| fold.iter().find(|e| e.runtime_event_id == o.runtime_event_id))
            .filter_map(summary_payload)
            .map(|payload| self.estimator.estimate_text(&payload))
            .sum();
        let fold_tokens = estimate_events(&self.estimator, fold).saturating_sub(archived);
        self.note_omissions(request.omitted_tool_results, "summarizer");
        self.note_payload_omissions(&request);
        let fingerprint = self.input_fingerprint(&request, &previous_summary, fold_start, end);
        if self.input.circuit.is_open(&fingerprint) {
            let detail = "this exact summarizer input already failed as malformed; not dispatched";
            return self.fail_open(ReasonCode::MalformedSummaryCircuitOpen, detail.into());
        }
        if self.cannot_help() {
            let (replaced, envelope) = (self.replaced_tokens(end), self.envelope());
            if replaced <= envelope {
                let detail = format!(
                    "the history fits and the fold replaces {replaced} tokens, no more than a \
                     checkpoint's own {envelope}-token envelope; nothing compacted"
                );
                return self.skip_no_smaller(detail);
            }
        }
        if self.input.trigger == Trigger::Prepare {
            let needed =
                listed_artifact_tokens(&self.input.events[fold_start..end], &self.estimator);
            let target = self.summary_target();
            if needed > target {
                return self.skip_preparation(needed, target);
            }
        }
        self.phase =
            Phase::Ready(self.summarize_effect(request.clone(), &previous_summary, fold_start));
        self.text = Some(TextAttempt {
            previous_summary,
            fold_start,
            fold_tokens,
            request,
            fingerprint,
            repaired: false,
            shrunk: false,
            before_repair: None,
            recompacted,
        });
    }

    fn summarize_effect(
        &self,
        request: SummaryRequest,
        previous_summary: &Option<String>,
        fold_start: usize,
    ) -> Effect {
        Effect::Summarize(Box::new(SummarizeEffect {
            request,
            previous_summary: previous_summary.clone(),
            fold: Fold { start: fold_start, end: self.prefix_end() },
            replayed_head: self.replayed_head(self.prefix_end()),
            carried: self.carried(self.prefix_end(), previous_summary.is_some()),
            target_tokens: self.summary_target(),
            provider_options: self.input.provider_options.clone(),
        }))
    }

    fn input_fingerprint(
        &self,
        request: &SummaryRequest,
        previous_summary: &Option<String>,
        fold_start: usize,
        end: usize,
    ) -> InputFingerprint {
        // Over what the summarizer sees: the notes of failed compactions are not part of it, so
        // a failed input stays the same input when its own failure note joins the log.
        let mut hasher = crate::digest::PrefixHasher::new();
        for event in &self.input.events[fold_start..end] {
            if !is_compaction_failure_note(event) {
                hasher.push(event);
            }
        }
        let fold_digest = hasher.digest();
        let previous = self.usable.as_ref().map(|u| u.checkpoint.checkpoint_id.as_str());
        fingerprint(&FingerprintInput {
            connection: &self.input.provider.connection_slug,
            model: &self.input.provider.model_id,
            route: if previous_summary.is_some() { "text_summary/rolling" } else { "text_summary" },
            history_budget: self.sizes.budget.history_budget,
            input_budget: self.input_window(),
            shape: RequestShape::of(request),
            previous_checkpoint_id: previous,
            folded_source_digest: &fold_digest,
        })
    }

    pub(crate) fn on_summary(&mut self, result: Result<SummaryResponse, ProviderFailure>) {
        let Some(mut text) = self.text.take() else { return };
        match result {
            Ok(response) => {
                let verdict = validate_summary(
                    &response.text,
                    response.finish_reason.clone(),
                    text.fold_tokens,
                    &self.estimator,
                );
                match verdict {
                    Ok(valid) => self.on_valid_summary(&mut text, &valid.text),
                    Err(defect) if text.before_repair.is_some() => {
                        self.accept_first_summary(&mut text, format!("{defect}"));
                    }
                    Err(defect) if text.recompacted => {
                        return self.roll_on_instead(format!("{defect}"));
                    }
                    Err(defect) if !text.repaired => {
                        text.repaired = true;
                        let repair = build_repair_request(&text.request, &response.text, &defect);
                        self.diagnostics.push(Diagnostic::new(
                            defect.code(),
                            format!("summary rejected ({defect}); one stricter repair request"),
                        ));
                        let effect =
                            self.summarize_effect(repair, &text.previous_summary, text.fold_start);
                        self.phase = Phase::Ready(effect);
                    }
                    Err(defect) => {
                        self.input.circuit.record_outcome(text.fingerprint.clone(), defect.code());
                        self.fail_open(
                            defect.code(),
                            format!("repaired summary rejected: {defect}"),
                        );
                    }
                }
            }
            Err(failure) if text.before_repair.is_some() => {
                self.accept_first_summary(&mut text, failure.message.clone());
            }
            Err(failure) if failure.kind == ProviderFailureKind::Overflow && !text.shrunk => {
                text.shrunk = true;
                let fold = &self.input.events[text.fold_start..self.prefix_end()];
                let retry = shrink_for_overflow_retry(
                    &text.request,
                    text.previous_summary.as_deref(),
                    fold,
                    &self.estimator,
                );
                match retry {
                    Some(request) => {
                        self.diagnostics.push(Diagnostic::new(
                            ReasonCode::ProviderOverflow,
                            format!(
                                "summarizer overflowed; one smaller retry of {} estimated tokens",
                                request.estimated_input_tokens
                            ),
                        ));
                        self.note_omissions(request.omitted_tool_results, "summarizer retry");
                        text.request = request.clone();
                        let effect =
                            self.summarize_effect(request, &text.previous_summary, text.fold_start);
                        self.phase = Phase::Ready(effect);
                    }
                    None => self.fail_open(
                        ReasonCode::SummaryInputCannotFit,
                        "summarizer overflowed and its input cannot shrink further".into(),
                    ),
                }
            }
            Err(failure) => self.provider_failed(failure),
        }
        self.text = Some(text);
    }

    /// `produced_by` of text checkpoints: `extractive` for the offline compactor, otherwise
    /// `text-summary:<model>`.
    fn producer(&self) -> String {
        match &self.input.summarizer_label {
            Some(label) => label.clone(),
            None => format!("text-summary:{}", self.input.provider.model_id),
        }
    }

    // ----- provider-native ----------------------------------------------------------------

    fn start_native(&mut self) {
        let (previous_state, fold_start) = match &self.usable {
            Some(u) => match u.checkpoint.provider_state() {
                Some(state) => (Some(state.clone()), u.covered),
                None => (None, 0),
            },
            None => (None, 0),
        };
        self.attempts.push(Attempt {
            kind: AttemptKind::ProviderNative,
            dispatches: 0,
            result: ReasonCode::Cancelled,
        });
        let budget = self.sizes.budget.history_budget;
        let (events, estimator) = (&self.input.events, &self.estimator);
        let build = |end: usize| {
            build_native_request(
                previous_state.as_ref(),
                &events[fold_start..end],
                budget,
                estimator,
            )
        };
        let too_large =
            |error: &NativeInputError| matches!(error, NativeInputError::CannotFit { .. });
        let found = largest_fitting(&self.candidates(), build, too_large);
        match found {
            Some(Ok((end, request))) => {
                self.end = end;
                self.note_split("native compaction", end);
                self.note_omissions(request.omitted_tool_results, "native compaction");
                self.phase = Phase::Ready(Effect::CompactNatively(request));
            }
            Some(Err(error)) => {
                self.attempt_failed(error.reason_code(), format!("{error}"));
                self.fall_back_to_text();
            }
            None => self.fail_open(ReasonCode::NoSafePrefix, "no fold left".into()),
        }
    }

    pub(crate) fn on_native(&mut self, result: Result<Vec<serde_json::Value>, ProviderFailure>) {
        match result {
            Ok(items) => {
                let binding = NativeBinding {
                    connection_slug: self.input.provider.connection_slug.clone(),
                    model_id: self.input.provider.model_id.clone(),
                };
                match accept_native_output(&items, &binding) {
                    Ok(state) => {
                        let manifest = self.native_manifest();
                        self.build_checkpoint(
                            CheckpointProjection::ProviderState(state),
                            Some(manifest),
                        );
                    }
                    Err(defect) => {
                        self.attempt_failed(defect.reason_code(), format!("{defect}"));
                        self.fall_back_to_text();
                    }
                }
            }
            Err(failure)
                if matches!(
                    failure.kind,
                    ProviderFailureKind::Rejected | ProviderFailureKind::Overflow
                ) =>
            {
                self.attempt_failed(failure.kind.code(), failure.message.clone());
                self.fall_back_to_text();
            }
            Err(failure) => self.provider_failed(failure),
        }
    }

    fn fall_back_to_text(&mut self) {
        if self.text_fallback_used {
            return self.fail_open(ReasonCode::NativeNoUniqueItem, "fallback already used".into());
        }
        self.text_fallback_used = true;
        self.start_text();
    }

    // ----- the write gate and the durable append ------------------------------------------

    fn build_checkpoint(
        &mut self,
        projection: CheckpointProjection,
        manifest: Option<crate::checkpoint::ProjectionManifest>,
    ) {
        let end = self.prefix_end();
        let prefix = &self.input.events[..end];
        let Some((coverage, source_bytes)) = coverage_and_bytes(prefix) else {
            return self.fail_open(ReasonCode::NoSafePrefix, "empty prefix".into());
        };
        let source = ArchiveAddress::for_source_digest(
            &prefix[0].session_id,
            &coverage.source_digest,
            source_bytes,
        );
        let limitations = self.limitations(&projection, source.ok());
        let mut checkpoint = HistoryCompactCheckpoint {
            checkpoint_id: self.step_checkpoint_id(),
            session_id: prefix[0].session_id.clone(),
            created_at_ms: self.input.now_ms,
            high_water: HighWater {
                name: self.input.trigger.as_str().into(),
                seq: prefix[end - 1].seq,
            },
            coverage,
            projection,
            limitations,
            estimated_tokens: 0,
            // Lineage and compare-and-swap name the latest durable checkpoint, even one that can
            // no longer replay here (another provider's state): the host appends only while it
            // is still the tip.
            previous_checkpoint_id: self.input.checkpoint.as_ref().map(|c| c.checkpoint_id.clone()),
            produced_by: manifest.as_ref().map(|m| m.summarizer.clone()),
            manifest,
        };
        checkpoint.estimated_tokens = match &checkpoint.projection {
            CheckpointProjection::Summary(_) => checkpoint_tokens(&checkpoint, &self.estimator),
            CheckpointProjection::ProviderState(state) => match state {
                crate::checkpoint::ProviderState::OpenaiCodexRemoteV2 {
                    encrypted_content, ..
                } => self.estimator.estimate_text(encrypted_content),
            },
        };
        let tokens = checkpoint_tokens(&checkpoint, &self.estimator);
        if let Err(conflict) =
            is_valid_successor(self.usable.as_ref().map(|u| &u.checkpoint), &checkpoint)
        {
            return self.fail_open(ReasonCode::SuccessorConflict, format!("{conflict}"));
        }
        if let Some(replaced) = self.usable.as_ref().filter(|_| self.recompressing())
            && tokens >= replaced.tokens
        {
            let detail = format!(
                "candidate ({tokens} tokens) is not smaller than checkpoint {} ({} tokens) over \
                 the same events",
                replaced.checkpoint.checkpoint_id, replaced.tokens
            );
            return self.fail_open(ReasonCode::ReplacementNotSmaller, detail);
        }
        let source_tokens = self.replaced_tokens(end);
        if tokens >= source_tokens {
            let detail = format!(
                "candidate ({tokens} tokens) is not smaller than the {source_tokens} source tokens"
            );
            if self.cannot_help() {
                return self.skip_no_smaller(detail);
            }
            return self.fail_open(ReasonCode::ReplacementNotSmaller, detail);
        }
        let budget = self.sizes.budget.history_budget;
        if let Some(floor) = self.pinned_floor(&checkpoint, end)
            && floor > budget
        {
            let detail = format!(
                "candidate ({tokens} tokens) with the live head it pins and what no safe cut \
                 covers is {floor} tokens, over the {budget} budget: no request could carry it \
                 with its task; not recorded"
            );
            return self.fail_open(ReasonCode::MinimumContextExceedsBudget, detail);
        }
        if self.input.trigger == Trigger::Prepare {
            return self.finish_prepared(checkpoint);
        }
        self.phase = Phase::Ready(Effect::AppendCheckpoint(Box::new(checkpoint.clone())));
        self.pending = Some((checkpoint, tokens));
    }

    /// Ends a preparation with its checkpoint unrecorded: the compaction that adopts it
    /// appends it ([`Run::begin_adopted`]). `tokens.after` is the request it would give now.
    fn finish_prepared(&mut self, checkpoint: HistoryCompactCheckpoint) {
        let after = self.tokens_with(&checkpoint, self.prefix_end());
        self.set_attempt_result(ReasonCode::CheckpointPrepared);
        self.diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::CheckpointPrepared,
            format!(
                "checkpoint {} prepared over {} events through {}; recorded only when adopted",
                checkpoint.checkpoint_id,
                checkpoint.coverage.event_count,
                checkpoint.coverage.through.runtime_event_id
            ),
            self.sizes.figures(after),
        ));
        self.finish(
            OutcomeKind::Prepared,
            ReasonCode::CheckpointPrepared,
            Some(checkpoint),
            None,
            after,
        );
    }

    /// Ends a preparation before its summarizer call: a summary within `target` tokens cannot
    /// keep the `needed` tokens of the fold's exact artifacts (it would lose some, or fail
    /// validation: a wasted call), so the foreground compaction at the hard trigger, over
    /// the log as it is then, decides.
    fn skip_preparation(&mut self, needed: u64, target: u64) {
        let code = ReasonCode::PreparationTooSmall;
        self.set_attempt_result(code);
        self.diagnostics.push(Diagnostic::with_tokens(
            code,
            format!(
                "not prepared: the fold's exact artifacts need {needed} tokens, its summary may \
                 take {target}; the hard trigger compacts in the foreground"
            ),
            self.sizes.figures(self.sizes.before),
        ));
        self.finish(OutcomeKind::Skipped, code, None, None, self.sizes.before);
    }

    /// Whether this is a manual compaction of a history that already fits, before any step
    /// recorded: one whose fold cannot be smaller than what it replaces has nothing to do.
    fn cannot_help(&self) -> bool {
        self.input.trigger == Trigger::Manual
            && self.recorded.is_empty()
            && self.sizes.before <= self.sizes.budget.history_budget
    }

    /// Ends a manual compaction that cannot help ([`Run::cannot_help`]) as a typed no-op:
    /// `skipped` with `replacement_not_smaller`, no checkpoint and no failure note, so asking
    /// again never grows the log.
    fn skip_no_smaller(&mut self, detail: String) {
        let code = ReasonCode::ReplacementNotSmaller;
        self.set_attempt_result(code);
        self.diagnostics.push(Diagnostic::with_tokens(
            code,
            detail,
            self.sizes.figures(self.sizes.before),
        ));
        self.finish(OutcomeKind::Skipped, code, None, None, self.sizes.before);
    }

    /// Plans like [`Run::begin`], but with a prepared checkpoint that passed
    /// [`crate::compaction::adoption`]'s checks: it goes straight to the durable append, and
    /// the transaction goes on from there as after any recorded step.
    pub(crate) fn begin_adopted(
        &mut self,
        target: usize,
        cuts: Vec<usize>,
        checkpoint: HistoryCompactCheckpoint,
        adoptable: crate::compaction::adoption::Adoptable,
    ) {
        (self.target, self.cuts) = (target, cuts);
        let (covered, tokens) = (adoptable.covered, adoptable.tokens);
        self.end = covered;
        self.diagnostics.push(Diagnostic::new(
            ReasonCode::PreparedCheckpointUsed,
            format!(
                "prepared checkpoint {} over {covered} events adopted; no summarizer call",
                checkpoint.checkpoint_id
            ),
        ));
        self.phase = Phase::Ready(Effect::AppendCheckpoint(Box::new(checkpoint.clone())));
        self.pending = Some((checkpoint, tokens));
    }

    /// Tokens of the smallest request `checkpoint` (covering `events[..end]`) can ever be sent
    /// in: itself, the live head its coverage pins, and the events after the largest safe cut,
    /// which no later step can fold. `None` when the coverage pins no head, or a later safe cut
    /// would end it (a later step may still fold the rest of a completed turn).
    fn pinned_floor(&self, checkpoint: &HistoryCompactCheckpoint, end: usize) -> Option<u64> {
        let (events, prior_end) = (&self.input.events, self.sizes.prior_end);
        let head = Remainder::split(events, prior_end, end).head;
        let ends_later =
            |cut: usize| cut > end && Remainder::split(events, prior_end, cut).head.is_empty();
        if head.is_empty() || self.cuts.iter().any(|&cut| ends_later(cut)) {
            return None;
        }
        let rest = &events[self.cuts.last().copied().unwrap_or(end).max(end)..];
        let pinned = head.into_iter().chain(rest);
        let messages = materialize_events(Some(checkpoint), pinned, &[]).messages;
        Some(estimate_messages(&self.estimator, &messages))
    }

    /// The fixed replay limitation, plus what the producer cannot promise.
    /// The checkpoint's limitations; a summary's also name `source`, the archive address of
    /// exactly what it covers, so what it left out can be read back (`archive_read`).
    fn limitations(
        &self,
        projection: &CheckpointProjection,
        source: Option<ArchiveAddress>,
    ) -> Vec<String> {
        match projection {
            CheckpointProjection::Summary(_) => {
                summary_limitations(self.extractive(), source.as_ref())
            }
            CheckpointProjection::ProviderState(_) => vec![REPLAY_LIMITATION.to_owned()],
        }
    }

    /// Whether the summarizer is the offline extractive one.
    fn extractive(&self) -> bool {
        self.input.summarizer_label.as_deref() == Some(EXTRACTIVE_PRODUCER)
    }

    /// Tokens of the envelope this step's summary checkpoint will carry.
    fn envelope(&self) -> u64 {
        let trigger = self.input.trigger.as_str();
        let id = self.step_checkpoint_id();
        envelope_tokens(
            &self.input.events,
            self.end,
            &id,
            trigger,
            self.extractive(),
            &self.estimator,
        )
    }

    pub(crate) fn on_append(&mut self, result: Result<(), AppendFailure>) {
        let Some((checkpoint, tokens)) = self.pending.take() else { return };
        match result {
            Ok(()) => self.step_recorded(checkpoint, tokens),
            Err(failure) => {
                let code = if failure.conflict {
                    ReasonCode::SuccessorConflict
                } else {
                    ReasonCode::AppendFailed
                };
                self.fail_open(code, format!("durable append failed: {}", failure.message));
            }
        }
    }

    /// A step's checkpoint is durable: it becomes the usable checkpoint, and the next step (if
    /// the request still exceeds the budget and a safe fold remains) builds on it.
    fn step_recorded(&mut self, checkpoint: HistoryCompactCheckpoint, tokens: u64) {
        let end = self.prefix_end();
        self.set_attempt_result(ReasonCode::CheckpointRecorded);
        let after = self.tokens_with(&checkpoint, end);
        let figures = self.sizes.figures(after);
        self.diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::CheckpointRecorded,
            format!(
                "checkpoint {} covers {} events through {}",
                checkpoint.checkpoint_id,
                checkpoint.coverage.event_count,
                checkpoint.coverage.through.runtime_event_id
            ),
            figures,
        ));
        self.usable = Some(UsableCheckpoint {
            checkpoint: checkpoint.clone(),
            covered: end,
            tokens,
            smaller_than_source: true,
        });
        self.input.checkpoint = Some(checkpoint.clone());
        self.recorded.push(checkpoint);
        let budget = self.sizes.budget.history_budget;
        let largest = self.cuts.last().copied().unwrap_or(end);
        if after > budget && (self.recorded.len() as u32) < MAX_ROLLING_STEPS && end < largest {
            if end >= self.target {
                // The reserved tail was kept raw and the request still does not fit.
                self.target = largest;
            }
            return self.start_step();
        }
        self.finish_recorded(after);
    }

    /// Tokens of the next request with `checkpoint` covering `events[..end]`.
    fn tokens_with(&self, checkpoint: &HistoryCompactCheckpoint, end: usize) -> u64 {
        let (events, prior_end) = (&self.input.events, self.sizes.prior_end);
        let budget = self.sizes.budget.history_budget;
        replay_tokens(Some(checkpoint), events, prior_end, end, budget, &self.estimator)
    }

    /// Ends a transaction that recorded at least one checkpoint: `recorded`, or `exhausted`
    /// when an automatic trigger's request still exceeds the budget.
    fn finish_recorded(&mut self, after: u64) {
        let figures = self.sizes.figures(after);
        let exhausted =
            self.input.trigger.is_automatic() && after > self.sizes.budget.history_budget;
        let (outcome, reason) = if exhausted {
            self.diagnostics.push(Diagnostic::with_tokens(
                ReasonCode::ContextBudgetExhausted,
                "recorded, but checkpoint + live head + raw tail + current turn still exceed \
                 the budget",
                figures,
            ));
            (OutcomeKind::Exhausted, ReasonCode::ContextBudgetExhausted)
        } else {
            (OutcomeKind::Recorded, ReasonCode::CheckpointRecorded)
        };
        let checkpoint = self.recorded.last().cloned();
        self.finish(outcome, reason, checkpoint, None, after);
    }

    // ----- endings ------------------------------------------------------------------------

    fn provider_failed(&mut self, failure: ProviderFailure) {
        if failure.kind == ProviderFailureKind::Cancelled {
            self.cancel();
            return;
        }
        self.fail_open(failure.kind.code(), failure.message);
    }

    fn attempt_failed(&mut self, code: ReasonCode, detail: String) {
        self.set_attempt_result(code);
        self.diagnostics.push(Diagnostic::new(code, detail));
    }

    fn set_attempt_result(&mut self, code: ReasonCode) {
        if let Some(last) = self.attempts.last_mut() {
            last.result = code;
        }
    }

    fn note_payload_omissions(&mut self, request: &SummaryRequest) {
        if let Some(first) = request.omitted_payloads.first() {
            self.diagnostics.push(Diagnostic::new(
                ReasonCode::EventPayloadsOmitted,
                format!(
                    "{} event payloads larger than the summarizer window sent as archive \
                     markers (first: event {} at {})",
                    request.omitted_payloads.len(),
                    first.runtime_event_id,
                    first.address
                ),
            ));
        }
    }

    fn note_omissions(&mut self, omitted: u64, what: &str) {
        if omitted > 0 {
            self.diagnostics.push(Diagnostic::new(
                ReasonCode::ToolResultsOmitted,
                format!("{omitted} older tool-result payloads omitted from the {what} request"),
            ));
        }
    }

    /// Fails open: no checkpoint. Manual compaction yields one visible note; an automatic
    /// trigger ends exhausted when the source-derived fallback still exceeds the budget. When an
    /// earlier rolling step already recorded a checkpoint, the transaction ends on that one.
    fn fail_open(&mut self, code: ReasonCode, detail: String) {
        self.set_attempt_result(code);
        self.diagnostics.push(Diagnostic::new(code, detail));
        if let Some(last) = self.recorded.last().cloned() {
            let after = self.tokens_with(&last, self.usable.as_ref().map_or(0, |u| u.covered));
            return self.finish_recorded(after);
        }
        let (outcome, reason, after) = self.fallback(code);
        let note = (!self.input.trigger.is_automatic()).then(|| {
            self.diagnostics.push(Diagnostic::new(
                ReasonCode::ContextCompactionFailedOpen,
                "manual compaction failed open; history is unchanged",
            ));
            EventContent::RuntimeNote {
                code: ReasonCode::ContextCompactionFailedOpen.as_str().into(),
                text: format!(
                    "Context compaction failed ({code}); no summary was recorded and the \
                     session continues on its source history."
                ),
            }
        });
        self.finish(outcome, reason, None, note, after);
    }

    /// Where a failure leaves the next request: the old checkpoint (never widened) with the
    /// newest raw turns that fit, or the raw source. Over budget, automatic triggers exhaust.
    /// The token figure is the fail-open projection's own measurement.
    fn fallback(&mut self, code: ReasonCode) -> (OutcomeKind, ReasonCode, u64) {
        let budget = self.sizes.budget.history_budget;
        let current = self.sizes.current_tokens;
        if let Some(u) = self.usable.as_ref().filter(|u| u.smaller_than_source)
            && u.tokens + current <= budget
        {
            let detail = format!(
                "previous checkpoint {} reused for its own {} events only",
                u.checkpoint.checkpoint_id, u.covered
            );
            self.diagnostics.push(Diagnostic::new(ReasonCode::PreviousCheckpointReused, detail));
            return (OutcomeKind::FailedOpen, code, self.fail_open_tokens());
        }
        if self.sizes.before <= budget || !self.input.trigger.is_automatic() {
            return (OutcomeKind::FailedOpen, code, self.sizes.before);
        }
        self.diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::ContextBudgetExhausted,
            format!("compaction failed ({code}) and history still exceeds the budget"),
            self.sizes.figures(self.sizes.before),
        ));
        (OutcomeKind::Exhausted, ReasonCode::ContextBudgetExhausted, self.sizes.before)
    }

    /// Estimated tokens of the fail-open projection (the usable checkpoint plus the newest raw
    /// turns that fit), as [`project`] computes it for the host.
    fn fail_open_tokens(&self) -> u64 {
        let input = ProjectInput {
            events: &self.input.events,
            current_turn_id: self.input.current_turn_id.as_deref(),
            checkpoint: self.usable.as_ref().map(|u| &u.checkpoint),
            model: &self.input.model,
            provider: Some(&self.input.provider),
            fail_open: true,
        };
        project(&input, &self.estimator).map_or(self.sizes.before, |p| p.estimated_tokens)
    }

    pub(crate) fn finish_without_work(&mut self, reason: ReasonCode, over_budget: bool) {
        let before = self.sizes.before;
        match reason {
            ReasonCode::BelowHighWater => {
                self.finish(OutcomeKind::Skipped, reason, None, None, before)
            }
            _ if !self.input.trigger.is_automatic() => {
                self.finish(OutcomeKind::Skipped, reason, None, None, before)
            }
            _ => {
                let (outcome, final_reason, after) = if over_budget {
                    self.fallback(reason)
                } else {
                    (OutcomeKind::Skipped, reason, before)
                };
                self.finish(outcome, final_reason, None, None, after);
            }
        }
    }

    fn finish(
        &mut self,
        outcome: OutcomeKind,
        reason: ReasonCode,
        checkpoint: Option<HistoryCompactCheckpoint>,
        failure_note: Option<EventContent>,
        after: u64,
    ) {
        self.phase = Phase::Done {
            outcome: Box::new(CompactionOutcome {
                outcome,
                reason,
                checkpoint,
                diagnostics: self.diagnostics.clone(),
                attempts: self.attempts.clone(),
                failure_note,
                tokens: self.sizes.figures(after),
            }),
        };
    }

    // ----- driver plumbing ----------------------------------------------------------------

    pub(crate) fn poll(&mut self) -> Result<Step, DriverError> {
        match std::mem::replace(&mut self.phase, Phase::Awaiting(Waiting::Summary)) {
            Phase::Ready(effect) => {
                let waiting = match &effect {
                    Effect::Summarize(_) => Waiting::Summary,
                    Effect::CompactNatively(_) => Waiting::Native,
                    Effect::AppendCheckpoint(_) => Waiting::Append,
                };
                if waiting != Waiting::Append
                    && let Some(last) = self.attempts.last_mut()
                {
                    last.dispatches += 1;
                }
                self.phase = Phase::Awaiting(waiting);
                Ok(Step::Effect(effect))
            }
            Phase::Awaiting(waiting) => {
                self.phase = Phase::Awaiting(waiting);
                Err(DriverError::EffectOutstanding(waiting.name()))
            }
            Phase::Done { outcome } => {
                let step = Step::Done(outcome.clone());
                self.phase = Phase::Done { outcome };
                Ok(step)
            }
        }
    }

    /// `Ok(true)` when the result is expected; `Ok(false)` for a late result after
    /// cancellation (discarded); an error when the driver is out of order.
    pub(crate) fn expect(&self, waiting: Waiting, got: &'static str) -> Result<bool, DriverError> {
        match &self.phase {
            Phase::Awaiting(w) if *w == waiting => Ok(true),
            Phase::Done { outcome } if outcome.outcome == OutcomeKind::Cancelled => Ok(false),
            Phase::Awaiting(w) => Err(DriverError::UnexpectedResult { got, expected: w.name() }),
            Phase::Ready(_) => Err(DriverError::UnexpectedResult { got, expected: "a poll" }),
            Phase::Done { .. } => Err(DriverError::UnexpectedResult { got, expected: "nothing" }),
        }
    }

    pub(crate) fn cancel(&mut self) -> bool {
        match &self.phase {
            Phase::Done { .. } | Phase::Awaiting(Waiting::Append) => false,
            Phase::Ready(_) | Phase::Awaiting(_) => {
                self.pending = None;
                self.set_attempt_result(ReasonCode::Cancelled);
                let detail = match self.recorded.len() {
                    0 => "cancelled by the host; nothing was persisted".to_owned(),
                    n => format!("cancelled by the host after {n} recorded rolling steps"),
                };
                self.diagnostics.push(Diagnostic::new(ReasonCode::Cancelled, detail));
                // Checkpoints of earlier rolling steps are durable: the transaction ends on
                // the last one, as if no further step had been needed.
                if let Some(last) = self.recorded.last().cloned() {
                    let after =
                        self.tokens_with(&last, self.usable.as_ref().map_or(0, |u| u.covered));
                    self.finish_recorded(after);
                    return true;
                }
                let before = self.sizes.before;
                self.finish(OutcomeKind::Cancelled, ReasonCode::Cancelled, None, None, before);
                true
            }
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done { .. })
    }

    pub(crate) fn outcome_kind(&self) -> Option<OutcomeKind> {
        match &self.phase {
            Phase::Done { outcome } => Some(outcome.outcome),
            _ => None,
        }
    }

    pub(crate) fn into_circuit(self) -> crate::compaction::circuit::MalformedInputCircuit {
        self.input.circuit
    }
}
