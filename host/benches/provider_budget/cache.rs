//! Row c: cache reuse between checkpoints. For each pair of consecutive answered requests
//! under the same checkpoint, the share of the previous request's serialized message list
//! (bytes, each message's JSON one after the other) that comes back as the next request's
//! prefix, in OpenAI Chat and Anthropic Messages shapes (without the moving `cache_control`
//! mark); a pair below 100% is a break. A pruning epoch is a pair whose pruning diagnostics
//! (`stale_tool_results_pruned`, `stale_attachments_pruned`) appear or change. Breaks outside
//! epochs are split by where they happen: the first request of a new turn, or within a turn.

use contextfold_core::projection::Message;
use contextfold_core::projection::anthropic::to_anthropic;
use contextfold_core::projection::openai_chat::to_openai_chat;

use crate::session::{BenchResult, SentRequest};

/// One session's figures in one wire shape.
#[derive(Debug, Default)]
pub(crate) struct CacheReuse {
    pub(crate) pairs: u64,
    pub(crate) reused_bytes: u64,
    pub(crate) previous_bytes: u64,
    pub(crate) breaks: u64,
    pub(crate) epochs: u64,
    pub(crate) breaks_outside_epochs: u64,
    /// Breaks outside epochs where the next request is the first of a new turn (the live head
    /// of a checkpoint cut inside the previous turn stops being replayed there).
    pub(crate) breaks_at_turn_start: u64,
}

impl CacheReuse {
    /// Bytes of the previous requests that came back, over all pairs.
    pub(crate) fn share(&self) -> f64 {
        if self.previous_bytes == 0 {
            return 1.0;
        }
        self.reused_bytes as f64 / self.previous_bytes as f64
    }
}

/// Which serialization a pair is compared in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    Chat,
    Anthropic,
}

fn serialize(messages: &[Message], shape: Shape) -> BenchResult<Vec<u8>> {
    let mut out = Vec::new();
    match shape {
        Shape::Chat => {
            for message in to_openai_chat(messages)? {
                out.extend(message.to_string().into_bytes());
            }
        }
        Shape::Anthropic => {
            let history = to_anthropic(messages)?;
            if let Some(system) = history.system {
                out.extend(serde_json::to_string(&system)?.into_bytes());
            }
            for message in history.messages {
                out.extend(message.to_string().into_bytes());
            }
        }
    }
    Ok(out)
}

/// Measures every pair of `sent` in `shape`.
pub(crate) fn measure(sent: &[SentRequest], shape: Shape) -> BenchResult<CacheReuse> {
    let mut reuse = CacheReuse::default();
    let mut previous: Option<(&SentRequest, Vec<u8>)> = None;
    for request in sent {
        let bytes = serialize(&request.messages, shape)?;
        if let Some((before, before_bytes)) = &previous
            && before.checkpoint == request.checkpoint
        {
            let common = before_bytes.iter().zip(&bytes).take_while(|(a, b)| a == b).count() as u64;
            let epoch = before.pruning != request.pruning;
            reuse.pairs += 1;
            reuse.reused_bytes += common;
            reuse.previous_bytes += before_bytes.len() as u64;
            reuse.epochs += u64::from(epoch);
            if common < before_bytes.len() as u64 {
                reuse.breaks += 1;
                reuse.breaks_outside_epochs += u64::from(!epoch);
                reuse.breaks_at_turn_start += u64::from(!epoch && before.turn != request.turn);
            }
        }
        previous = Some((request, bytes));
    }
    Ok(reuse)
}
