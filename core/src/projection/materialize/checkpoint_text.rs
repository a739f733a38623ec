//! The model-visible form of a checkpoint: a V2 text block or a V3 provider-state part.
//!
//! The V2 block is deterministic text. For a checkpoint with summary `S` it reads, line by line:
//!
//! ```text
//! <contextfold_checkpoint id="cp-1" session="s" events="12" turns="3" through="run-t2/t2/e12" digest="sha256:…">
//! summary:
//! S
//! coverage: the first 12 events (3 turns) of session s, through run run-t2, turn t2, event e12; high water pre_turn at seq 12
//! limitations:
//! - This is a replay-time summary of a covered RuntimeEvent prefix; exact wording remains in the RuntimeEvent log.
//! - <each limitation of the checkpoint, in order, on one line>
//! </contextfold_checkpoint>
//! ```
//!
//! Attribute values escape `&`, `"`, `<` and `>` as XML entities. The summary is copied in full
//! and followed by a line break if it does not end with one. A checkpoint limitation has its line
//! breaks replaced by spaces, and is skipped when it repeats the fixed [`REPLAY_LIMITATION`].

use crate::checkpoint::{CheckpointProjection, HistoryCompactCheckpoint};
use crate::projection::message::{Message, Part, Role};

/// The tag name of the V2 checkpoint block.
pub(crate) const CHECKPOINT_TAG: &str = "contextfold_checkpoint";

/// The limitation every V2 block states, whatever the checkpoint itself lists.
pub(crate) const REPLAY_LIMITATION: &str = "This is a replay-time summary of a covered RuntimeEvent prefix; \
exact wording remains in the RuntimeEvent log.";

/// The text block of a V2 checkpoint; `None` for V3 (provider state is never rendered as text).
pub(crate) fn render_checkpoint_text(checkpoint: &HistoryCompactCheckpoint) -> Option<String> {
    let CheckpointProjection::Summary(summary) = &checkpoint.projection else {
        return None;
    };
    let coverage = &checkpoint.coverage;
    let through = &coverage.through;
    let mut text = String::with_capacity(summary.len() + 512);
    text.push('<');
    text.push_str(CHECKPOINT_TAG);
    let boundary = format!("{}/{}/{}", through.run_id, through.turn_id, through.runtime_event_id);
    let attributes = [
        ("id", checkpoint.checkpoint_id.as_str()),
        ("session", checkpoint.session_id.as_str()),
        ("events", &coverage.event_count.to_string()),
        ("turns", &coverage.turn_count.to_string()),
        ("through", &boundary),
        ("digest", &coverage.source_digest),
    ];
    for (name, value) in attributes {
        text.push(' ');
        text.push_str(name);
        text.push_str("=\"");
        push_escaped(&mut text, value);
        text.push('"');
    }
    text.push_str(">\nsummary:\n");
    text.push_str(summary);
    if !summary.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "coverage: the first {} events ({} turns) of session {}, through run {}, turn {}, event {}; \
         high water {} at seq {}\n",
        coverage.event_count,
        coverage.turn_count,
        checkpoint.session_id,
        through.run_id,
        through.turn_id,
        through.runtime_event_id,
        checkpoint.high_water.name,
        checkpoint.high_water.seq,
    ));
    text.push_str("limitations:\n- ");
    text.push_str(REPLAY_LIMITATION);
    text.push('\n');
    for limitation in &checkpoint.limitations {
        let line = limitation.replace("\r\n", " ").replace(['\n', '\r'], " ");
        if line == REPLAY_LIMITATION {
            continue;
        }
        text.push_str("- ");
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str("</");
    text.push_str(CHECKPOINT_TAG);
    text.push('>');
    Some(text)
}

/// The one message a checkpoint contributes: V2 → a [`Role::System`] message with the text
/// block; V3 → a [`Role::Assistant`] message with one [`Part::ProviderState`].
pub(crate) fn checkpoint_message(checkpoint: &HistoryCompactCheckpoint) -> Message {
    match &checkpoint.projection {
        CheckpointProjection::ProviderState(state) => Message {
            role: Role::Assistant,
            parts: vec![Part::ProviderState { state: state.clone() }],
        },
        CheckpointProjection::Summary(_) => {
            Message::text(Role::System, render_checkpoint_text(checkpoint).unwrap_or_default())
        }
    }
}

fn push_escaped(out: &mut String, value: &str) {
    for ch in value.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            other => out.push(other),
        }
    }
}
