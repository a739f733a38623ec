//! The choices of an extractive summary and the room they leave.

use super::cost;
use super::render::{Chosen, Slot, group_heading};
use crate::quality::ArtifactClass;

/// The choices so far and the room they leave.
pub(super) struct Picker {
    pub(super) room: u64,
    pub(super) chosen: Chosen,
    /// The text of the chosen task and artifacts: what a rolling update reads back as artifacts.
    pub(super) durable: String,
    /// Per chosen slot, in the same order: what it cost and the text it quotes.
    spent: Vec<(u64, String)>,
}

impl Picker {
    /// Nothing chosen yet, `room` tokens to spend, `replayed` the live head beside the summary.
    pub(super) fn new(room: u64, replayed: String) -> Self {
        let chosen = Chosen { replayed, ..Chosen::default() };
        Self { room, chosen, durable: String::new(), spent: Vec::new() }
    }

    /// Takes `slot` (rendered as about `text`) when it fits the room left.
    pub(super) fn take(&mut self, slot: Slot, text: &str) {
        self.take_with(slot, text, 0);
    }

    /// Takes `slot` when it and `extra` tokens of framing fit the room left.
    pub(super) fn take_with(&mut self, slot: Slot, text: &str, extra: u64) {
        let cost = cost(&format!("- {text}\n")) + extra;
        if cost <= self.room {
            self.room -= cost;
            self.chosen.quoted.push_str(text);
            self.chosen.quoted.push('\n');
            if is_durable(&slot) {
                self.durable.push_str(text);
                self.durable.push('\n');
            }
            self.chosen.slots.push(slot);
            self.spent.push((cost, text.to_owned()));
        }
    }

    /// Whether the live head replayed beside the summary quotes `text` exactly.
    pub(super) fn is_replayed(&self, text: &str) -> bool {
        !self.chosen.replayed.is_empty() && self.chosen.replayed.contains(text)
    }

    /// Takes an artifact unless something already chosen, or the live head, quotes it exactly.
    pub(super) fn artifact(&mut self, class: ArtifactClass, text: &str) {
        if !self.chosen.quoted.contains(text) && !self.is_replayed(text) {
            self.list(class, text);
        }
    }

    /// Lists an artifact under Critical Context; the first of its class also pays for the
    /// class's group heading.
    pub(super) fn list(&mut self, class: ArtifactClass, text: &str) {
        let opens_group =
            !self.chosen.slots.iter().any(|s| matches!(s, Slot::Critical(c, _) if *c == class));
        let heading = if opens_group { cost(&group_heading(class)) } else { 0 };
        self.take_with(Slot::Critical(class, text.to_owned()), text, heading);
    }

    /// Drops every listed artifact that the task or a longer listed artifact quotes exactly
    /// (both are read back by a rolling update, so the shorter one stays known), gives its
    /// room back, and returns how many it dropped.
    pub(super) fn drop_redundant(&mut self) -> usize {
        let durable: Vec<(usize, &str)> = self
            .chosen
            .slots
            .iter()
            .zip(&self.spent)
            .enumerate()
            .filter(|(_, (slot, _))| is_durable(slot))
            .map(|(i, (_, (_, text)))| (i, text.as_str()))
            .collect();
        let redundant: Vec<usize> = durable
            .iter()
            .filter(|(i, _)| matches!(self.chosen.slots[*i], Slot::Critical(..)))
            .filter(|(i, text)| {
                durable
                    .iter()
                    .any(|(j, other)| j != i && other.len() > text.len() && other.contains(text))
            })
            .map(|(i, _)| *i)
            .collect();
        for &i in redundant.iter().rev() {
            self.chosen.slots.remove(i);
            self.room += self.spent.remove(i).0;
        }
        if !redundant.is_empty() {
            self.chosen.quoted.clear();
            self.durable.clear();
            for (slot, (_, text)) in self.chosen.slots.iter().zip(&self.spent) {
                self.chosen.quoted.push_str(text);
                self.chosen.quoted.push('\n');
                if is_durable(slot) {
                    self.durable.push_str(text);
                    self.durable.push('\n');
                }
            }
        }
        redundant.len()
    }
}

/// Whether a rolling update reads `slot` back (the task and Critical Context).
fn is_durable(slot: &Slot) -> bool {
    matches!(slot, Slot::Task { .. } | Slot::Critical(..))
}
