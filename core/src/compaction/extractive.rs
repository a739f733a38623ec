//! The offline extractive summarizer: the embedded default compactor (no key, no network).
//!
//! It does not paraphrase. It copies, exactly: the task (the first user message) whole, later
//! requests, one line per newest tool call with the command as issued and its outcome named for
//! what it was (`error:`, `rejected:`, `ok:`), decisions, the newest plan, and the exact artifacts of
//! [`crate::quality`] (constraint sentences, error lines, commands, paths, identifiers) in the
//! same section template the LLM summarizer is held to. Text is never re-flowed: lines keep
//! their inner whitespace, sentences are split only at real sentence ends.
//!
//! When the target is short, items are chosen by priority and recency, never by sort order:
//! the task (whole, or its opening when it alone would take more than a fifth of the target) and
//! every constraint first, then the plan and the newest request, then the newest error line,
//! call, command, path and identifier in turn, round after round; an artifact already quoted
//! elsewhere costs nothing, and one that only a call line quotes is listed as well while there
//! is room (a rolling update reads artifacts back from the task and Critical Context, and may
//! drop an old call line). Room left over stays unused: nothing pads it, except up to the
//! validator's floor for a large fold ([`floor_tokens`]). What the live head
//! replays right after the summary (the task of a turn still being worked on) is named, not
//! copied ([`extractive_summary_for`]). What had to be left out is counted per class and named
//! with the events that hold its exact text. It is pure and deterministic: the same fold gives
//! the same bytes. Every summary says it is extractive; checkpoints record
//! `produced_by: "extractive"`.

pub(crate) mod material;
mod picker;
mod previous;
mod render;
#[cfg(test)]
mod tests;

use crate::budget::{CharEstimator, PieceEstimator, TokenEstimator, estimate_events};
use crate::compaction::effects::SummarizeEffect;
use crate::compaction::summary_validation::{LARGE_FOLD_TOKENS, MIN_LARGE_FOLD_SUMMARY_TOKENS};
use crate::event::RuntimeEvent;
use crate::quality::ArtifactClass;

use material::{Material, cut, user_text};
use picker::Picker;
use previous::parse_previous;
use render::{Chosen, REPLAYED_TASK, Slot, render};

/// `produced_by` value of checkpoints written from extractive summaries.
pub const EXTRACTIVE_PRODUCER: &str = "extractive";

/// The newest calls listed with their outcomes; older calls are kept by their exact artifacts
/// (a command alone costs a fraction of its call line). Measured with `bench/quality.sh`
/// against 12: compact-then-project at 8k 85.3% → 87.4% of the folded artifacts, the agent loop
/// 78.1% → 80.3% (with the task at a quarter); 3 kept a little more (89.1% / 81.7% with the task
/// at a fifth) but leaves too few outcomes.
const CALLS_FIRST: usize = 6;

/// How many times the artifacts another listed artifact quotes are dropped and their room spent
/// again (each pass drops at least one, so a few reach a fixed point).
const REDUNDANCY_PASSES: usize = 4;

/// The classes the rounds list newest first, in their order within a round.
const LISTED: [ArtifactClass; 4] =
    [ArtifactClass::Error, ArtifactClass::Command, ArtifactClass::Path, ArtifactClass::Identifier];

/// The task is quoted whole when it takes at most 1/`TASK_SHARE_DIVISOR` of the target, else
/// its opening of that size (its rule sentences are kept as constraints either way, and a task
/// the live head replays is not quoted at all). Measured with `bench/quality.sh`,
/// compact-then-project at 8k (the agent loop replays its task), on top of `21e67fb`: a third
/// 83.4%, a quarter 85.3%; with the newest 6 calls a quarter 87.4%, a fifth 88.5%. At 8k a
/// fifth is about 900 tokens: an issue description and the start of its instructions.
const TASK_SHARE_DIVISOR: u64 = 5;

/// Writes a structured summary of `fold`, rolled forward from `previous_summary`, within
/// `target_tokens` under both built-in estimators (so it fits whichever one the runtime
/// measuring it uses). A compaction's summarizer calls [`extractive_summary_for`], which also
/// knows what the checkpoint's requests replay beside the summary.
pub fn extractive_summary(
    previous_summary: Option<&str>,
    fold: &[RuntimeEvent],
    target_tokens: u64,
) -> String {
    let material =
        previous_summary.map(parse_previous).unwrap_or_default().then(Material::from_fold(fold));
    summarize(&material, String::new(), target_tokens, fold_estimate(fold))
}

/// The summary a [`SummarizeEffect`] asks for, read from `events`, the log its compaction runs
/// over: [`extractive_summary_of`] its carried events, fold and live head.
pub fn extractive_summary_for(events: &[RuntimeEvent], effect: &SummarizeEffect) -> String {
    let pick = |indexes: &[usize]| -> Vec<RuntimeEvent> {
        indexes.iter().filter_map(|&i| events.get(i)).cloned().collect()
    };
    let end = effect.fold.end.min(events.len());
    extractive_summary_of(
        effect.previous_summary.as_deref(),
        &pick(&effect.carried),
        &events[effect.fold.start.min(end)..end],
        &pick(&effect.replayed_head),
        effect.target_tokens,
    )
}

/// [`extractive_summary`] of `carried` then `fold`, except that what the live head `replayed`
/// right after the summary quotes (the task of a turn still being worked on, above all) is
/// named, not quoted again.
pub fn extractive_summary_of(
    previous_summary: Option<&str>,
    carried: &[RuntimeEvent],
    fold: &[RuntimeEvent],
    replayed: &[RuntimeEvent],
    target_tokens: u64,
) -> String {
    let material = previous_summary
        .map(parse_previous)
        .unwrap_or_default()
        .then(Material::from_fold(carried))
        .then(Material::from_fold(fold));
    let replayed: Vec<String> = replayed.iter().filter_map(user_text).collect();
    let fold_tokens = fold_estimate(carried) + fold_estimate(fold);
    summarize(&material, replayed.join("\n"), target_tokens, fold_tokens)
}

/// The larger built-in estimate of `events`.
fn fold_estimate(events: &[RuntimeEvent]) -> u64 {
    estimate_events(&CharEstimator, events).max(estimate_events(&PieceEstimator, events))
}

/// The summary of `material` within `target_tokens`, quoting nothing the live head `replayed`
/// beside it already shows, and at least [`floor_tokens`] of a fold of `fold_tokens`.
fn summarize(
    material: &Material,
    replayed: String,
    target_tokens: u64,
    fold_tokens: u64,
) -> String {
    let mut chosen = choose(material, replayed, target_tokens);
    pad_to_floor(material, &mut chosen, floor_tokens(fold_tokens).min(target_tokens));
    loop {
        let text = render(material, &chosen);
        if fits_target(&text, target_tokens) || chosen.slots.is_empty() {
            return text;
        }
        // The per-item costs are estimates: give back the last choice until the whole fits.
        chosen.slots.pop();
    }
}

/// The fewest tokens a summary of a fold of `fold_tokens` (the larger built-in estimate) is
/// given. The validator refuses a summary under `MIN_LARGE_FOLD_SUMMARY_TOKENS` of a fold over
/// `LARGE_FOLD_TOKENS`, both measured by the runtime's estimator: one built-in estimate times
/// one calibrated ratio, which scales both sides. So a summary of a fiftieth of its fold (the
/// validator's own proportion) passes at any ratio; it is capped at twice the validator's
/// minimum, which passes at ratios from 0.5 on, so that a huge fold (whose payloads the runtime
/// may archive and not count) is not padded further. Without a floor, a fold of one step with
/// a 94 KB tool result was summarized in 182 tokens and every compaction of it was refused.
fn floor_tokens(fold_tokens: u64) -> u64 {
    let proportional = (fold_tokens * MIN_LARGE_FOLD_SUMMARY_TOKENS).div_ceil(LARGE_FOLD_TOKENS);
    proportional.min(2 * MIN_LARGE_FOLD_SUMMARY_TOKENS)
}

/// Brings `chosen` up to `floor` tokens by both built-in estimates with the least useful
/// material, which nothing else pads a summary with: the older calls' lines, then how large
/// results began, newest first, each opening as long as the rest of the floor needs.
fn pad_to_floor(material: &Material, chosen: &mut Chosen, floor: u64) {
    let short = |chosen: &Chosen| {
        let text = render(material, chosen);
        floor.saturating_sub(
            CharEstimator.estimate_text(&text).min(PieceEstimator.estimate_text(&text)),
        )
    };
    let mut missing = short(chosen);
    let older = material.done.len().saturating_sub(CALLS_FIRST);
    for index in (0..older).rev() {
        if missing == 0 {
            return;
        }
        if !chosen.slots.contains(&Slot::Done(index)) {
            chosen.slots.push(Slot::Done(index));
            let line = format!("- {}\n", material.done[index]);
            missing = missing.saturating_sub(
                CharEstimator.estimate_text(&line).min(PieceEstimator.estimate_text(&line)),
            );
        }
    }
    missing = short(chosen);
    for index in (0..material.openings.len()).rev() {
        if missing == 0 {
            return;
        }
        // About four characters a token; the next opening makes up for a short estimate.
        let chars = usize::try_from(missing.saturating_mul(4)).unwrap_or(usize::MAX);
        chosen.slots.push(Slot::Opening { index, chars });
        missing = short(chosen);
    }
}

/// Whether `text` is within `target_tokens` by the larger of the characters and the pieces
/// estimate (the cheap one first).
fn fits_target(text: &str, target_tokens: u64) -> bool {
    CharEstimator.estimate_text(text) <= target_tokens
        && PieceEstimator.estimate_text(text) <= target_tokens
}

/// Estimated tokens of one rendered item, plus one: estimates of parts need not add up to the
/// whole's ([`summarize`] gives back the last choices until the whole fits), and the slack
/// keeps a summary bound by the room the request leaves from filling it to the token (without
/// it, the real trajectories' last steps at 4k end a few tokens over the budget).
fn cost(text: &str) -> u64 {
    CharEstimator.estimate_text(text).max(PieceEstimator.estimate_text(text)) + 1
}

/// Picks what the summary quotes, in priority order, within `target_tokens`.
fn choose(material: &Material, replayed: String, target_tokens: u64) -> Chosen {
    // The frame: header, headings, fixed lines and the longest left-out line there can be.
    let frame = cost(&render(material, &Chosen::default()));
    let room = target_tokens.saturating_sub(frame);
    let mut picker = Picker::new(room, replayed);
    let task = material.task.as_ref();
    if task.is_some_and(|task| task.text.is_empty() || picker.is_replayed(&task.text)) {
        picker.take(Slot::TaskReplayed, REPLAYED_TASK);
    } else if let Some(task) = task {
        let share = target_tokens / TASK_SHARE_DIVISOR;
        let quoted = task.text.replace('\n', "\n> ");
        if cost(&quoted) <= share.min(picker.room) {
            picker.take(Slot::Task { text: task.text.clone(), whole: true }, &quoted);
        } else {
            // Its opening, as much as a fifth of the target holds; its rules come next as
            // constraints.
            let keep = (task.text.chars().count() as u64 * share / cost(&quoted).max(1)) as usize;
            let opening = cut(&task.text, keep);
            let quoted = opening.replace('\n', "\n> ");
            picker.take(Slot::Task { text: opening, whole: false }, &quoted);
        }
    }
    let of = |class| -> Vec<&str> {
        material.artifacts.iter().filter(|(c, _)| *c == class).map(|(_, t)| t.as_str()).collect()
    };
    for constraint in of(ArtifactClass::Constraint) {
        picker.artifact(ArtifactClass::Constraint, constraint);
    }
    for (index, line) in material.plan.iter().enumerate() {
        picker.take(Slot::Plan(index), line);
    }
    let requests = material.requests.len();
    if let Some(newest) = material.requests.last().filter(|r| !picker.is_replayed(r)) {
        picker.take(Slot::Request(requests - 1), newest);
    }
    // Newest first, one of each kind per round.
    let errors = of(ArtifactClass::Error);
    let commands = of(ArtifactClass::Command);
    let paths = of(ArtifactClass::Path);
    let identifiers = of(ArtifactClass::Identifier);
    let rounds = [
        errors.len(),
        material.done.len(),
        commands.len(),
        paths.len(),
        identifiers.len(),
        requests,
        material.decisions.len(),
        material.notes.len(),
    ];
    let newest = |len: usize, round: usize| (round < len).then(|| len - 1 - round);
    for round in 0..rounds.into_iter().max().unwrap_or(0) {
        if let Some(i) = newest(errors.len(), round) {
            picker.artifact(ArtifactClass::Error, errors[i]);
        }
        if let Some(i) = newest(material.done.len(), round).filter(|_| round < CALLS_FIRST) {
            picker.take(Slot::Done(i), &material.done[i]);
        }
        // A command whose call line was just taken is already quoted, so it costs nothing.
        if let Some(i) = newest(commands.len(), round) {
            picker.artifact(ArtifactClass::Command, commands[i]);
        }
        if let Some(i) = newest(paths.len(), round) {
            picker.artifact(ArtifactClass::Path, paths[i]);
        }
        if let Some(i) = newest(identifiers.len(), round) {
            picker.artifact(ArtifactClass::Identifier, identifiers[i]);
        }
        if let Some(i) = newest(requests.saturating_sub(1), round)
            .filter(|&i| !picker.is_replayed(&material.requests[i]))
        {
            picker.take(Slot::Request(i), &material.requests[i]);
        }
        if let Some(i) = newest(material.decisions.len(), round) {
            picker.take(Slot::Decision(i), &material.decisions[i]);
        }
        if let Some(i) = newest(material.notes.len(), round) {
            picker.take(Slot::Note(i), &material.notes[i]);
        }
    }
    // Artifacts only a call line quotes, listed as well while there is room: a rolling update
    // reads artifacts back from the task and Critical Context alone, and may drop an old call
    // line with its command.
    for (class, text) in material.artifacts.iter().rev() {
        if picker.chosen.quoted.contains(text.as_str())
            && !picker.durable.contains(text.as_str())
            && !picker.is_replayed(text)
        {
            picker.list(*class, text);
        }
    }
    // An artifact listed early may be quoted by a longer one listed later (an identifier
    // inside a path, a path inside a command): give its room back to what was left out.
    let classes = [&errors, &commands, &paths, &identifiers];
    for _ in 0..REDUNDANCY_PASSES {
        if picker.drop_redundant() == 0 {
            break;
        }
        let longest = classes.iter().map(|texts| texts.len()).max().unwrap_or(0);
        for round in 0..longest {
            for (class, texts) in LISTED.into_iter().zip(classes) {
                if let Some(i) = newest(texts.len(), round) {
                    picker.artifact(class, texts[i]);
                }
            }
        }
    }
    // Nothing pads the room that is left (older call lines, the openings of large results),
    // except up to a large fold's floor (`pad_to_floor`): the request after compaction fills
    // it with raw steps or leaves it to grow into, and a padded summary cost compression (long
    // trajectories at 32k: 81.3% against 90.3% without) and compactions, for no artifact kept
    // (docs/performance.md).
    picker.chosen
}
