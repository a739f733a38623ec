//! Writing the chosen material in the section template ([`crate::compaction::summary_template`]).
//!
//! Quoted user text goes as `> ` lines under its item, so its own headings, labels and code
//! fences stay body text of the Goal section and its lines keep their exact spacing.

use super::material::{Material, cut};
use crate::quality::ArtifactClass;
use crate::quality::gate::end_cleanly;

/// One chosen item: an index into its [`Material`] list, or the text itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Slot {
    /// The task, whole or its opening.
    Task {
        text: String,
        whole: bool,
    },
    /// The task named, not quoted: the live head replays it right after the summary.
    TaskReplayed,
    Request(usize),
    Done(usize),
    Decision(usize),
    Note(usize),
    /// How a large result began ([`Material::openings`]), cut to `chars` characters.
    Opening {
        index: usize,
        chars: usize,
    },
    Plan(usize),
    Critical(ArtifactClass, String),
}

/// The chosen items in the order they were chosen, and their text (for "already quoted").
#[derive(Debug, Clone, Default)]
pub(super) struct Chosen {
    pub(super) slots: Vec<Slot>,
    pub(super) quoted: String,
    /// The text of the live head replayed beside the summary: quoted there, not here.
    pub(super) replayed: String,
}

impl Chosen {
    /// The chosen indexes of one list, ascending.
    fn indexes(&self, pick: impl Fn(&Slot) -> Option<usize>) -> Vec<usize> {
        let mut indexes: Vec<usize> = self.slots.iter().filter_map(pick).collect();
        crate::sort::sort(&mut indexes);
        indexes
    }
}

/// The summary text.
pub(super) fn render(material: &Material, chosen: &Chosen) -> String {
    let mut out =
        String::from("(extractive summary: copied from the event log, not paraphrased)\n");
    let mut goal = Vec::new();
    let event = material.task.as_ref().map_or("", |t| t.event_id.as_str());
    for slot in &chosen.slots {
        match slot {
            Slot::Task { text, whole } => {
                let how = match whole {
                    true => "quoted whole",
                    false => "its opening; the whole text is that event in the log",
                };
                goal.push(format!("Task (event {event}; {how}):\n{}", quote(text)));
            }
            Slot::TaskReplayed => goal.push(format!("Task (event {event}; {REPLAYED_TASK})")),
            _ => {}
        }
    }
    for i in chosen.indexes(|s| if let Slot::Request(i) = s { Some(*i) } else { None }) {
        goal.push(format!("Later request:\n{}", quote(&material.requests[i])));
    }
    section(&mut out, "Goal", &goal, "- (no user request in the covered events)");

    let mut done: Vec<String> = chosen
        .indexes(|s| if let Slot::Done(i) = s { Some(*i) } else { None })
        .into_iter()
        .map(|i| material.done[i].clone())
        .collect();
    done.extend(chosen.slots.iter().filter_map(|slot| match slot {
        Slot::Opening { index, chars } => Some(cut(&material.openings[*index], *chars)),
        _ => None,
    }));
    section(&mut out, "Done and In Progress", &done, "- No tool calls in the covered events.");

    let mut decisions: Vec<String> = chosen
        .indexes(|s| if let Slot::Decision(i) = s { Some(*i) } else { None })
        .into_iter()
        .map(|i| material.decisions[i].clone())
        .collect();
    decisions.extend(
        chosen
            .indexes(|s| if let Slot::Note(i) = s { Some(*i) } else { None })
            .into_iter()
            .map(|i| material.notes[i].clone()),
    );
    section(&mut out, "Key Decisions", &decisions, "None.");

    let mut next = vec![match goal.is_empty() {
        true => "Continue from the raw recent history.".to_owned(),
        false => "Continue from the latest request (the last item under Goal).".to_owned(),
    }];
    next.extend(
        chosen
            .indexes(|s| if let Slot::Plan(i) = s { Some(*i) } else { None })
            .into_iter()
            .map(|i| format!("plan: {}", material.plan[i])),
    );
    section(&mut out, "Next Steps", &next, "");

    // One group per class, newest first (the material runs oldest first): a `#### <class>`
    // line, then one `- ` line per artifact, so a command costs its own text and two bytes.
    let mut groups = String::new();
    for class in ArtifactClass::ALL {
        let mut items: Vec<&str> = chosen
            .slots
            .iter()
            .filter_map(|s| match s {
                Slot::Critical(c, text) if *c == class => Some(text.as_str()),
                _ => None,
            })
            .collect();
        if items.is_empty() {
            continue;
        }
        let order: Vec<&str> = material
            .artifacts
            .iter()
            .filter(|(c, _)| *c == class)
            .map(|(_, t)| t.as_str())
            .collect();
        crate::sort::sort_by_key(&mut items, |text| {
            std::cmp::Reverse(order.iter().position(|t| t == text))
        });
        groups.push_str(&group_heading(class));
        for item in items {
            groups.push_str("- ");
            groups.push_str(item);
            groups.push('\n');
        }
    }
    let left = left_out(material, &format!("{out}{groups}{}", chosen.replayed));
    let empty = "- No paths, commands or errors recorded.";
    let lead: Vec<String> = left.into_iter().collect();
    section(&mut out, "Critical Context", &lead, if groups.is_empty() { empty } else { "" });
    out.push_str(&groups);
    end_cleanly(&mut out);
    out
}

/// How the Goal names a task the live head replays after the summary.
pub(super) const REPLAYED_TASK: &str =
    "not quoted here: it opens the turn replayed verbatim right after this summary";

/// `text` as `> ` lines (an empty line as `>`).
fn quote(text: &str) -> String {
    text.lines()
        .map(|line| if line.is_empty() { ">".to_owned() } else { format!("> {line}") })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The line that counts, per class, the artifacts `body` does not quote, and names the events
/// that hold their exact text.
fn left_out(material: &Material, body: &str) -> Option<String> {
    let mut counts = Vec::new();
    for class in ArtifactClass::ALL {
        let missing = material
            .artifacts
            .iter()
            .filter(|(c, text)| *c == class && !body.contains(text.as_str()))
            .count();
        if missing > 0 {
            counts.push(format!("{missing} {}", class.name()));
        }
    }
    if counts.is_empty() {
        return None;
    }
    let span = match &material.span {
        Some((_, last)) => format!(
            "the log's events through {last}, read by the archive address under limitations"
        ),
        None => {
            "the log's covered events, read by the archive address under limitations".to_owned()
        }
    };
    Some(format!("Left out for room ({}; exact text in {span})", counts.join(", ")))
}

/// The line that opens the group of one class under Critical Context (a level-4 heading, which
/// the summary validator reads as body text).
pub(super) fn group_heading(class: ArtifactClass) -> String {
    format!("#### {}\n", class.name())
}

fn section(out: &mut String, title: &str, items: &[String], empty: &str) {
    out.push_str("\n## ");
    out.push_str(title);
    out.push('\n');
    if items.is_empty() && !empty.is_empty() {
        out.push_str(empty);
        out.push('\n');
    }
    for item in items {
        out.push_str("- ");
        out.push_str(item);
        out.push('\n');
    }
}
