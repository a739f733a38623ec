//! Reading a previous summary back into [`Material`], so a rolling update keeps what the
//! earlier steps kept. Summaries of this version are read exactly; items of the earlier
//! extractive format (`- User: "…"`, `` - command: `…` ``, `` - error from `tool`: … ``) and of
//! LLM summaries are read as well as their shape allows: an unknown line under a section is
//! kept as that section's item.

use super::material::{Material, Task};
use crate::quality::ArtifactClass;
use crate::quality::gate::EXACT_ARTIFACTS_LINE;

/// Where the lines being read go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Preamble,
    Goal,
    Done,
    Decisions,
    Next,
    Critical,
}

/// A quoted block being read (`> ` lines after a `- Task …:` or `- Later request:` item).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Task,
    Request,
}

/// The material `summary` carries.
pub(super) fn parse_previous(summary: &str) -> Material {
    let mut material = Material::default();
    let mut place = Place::Preamble;
    let mut quote = Quote::None;
    let mut quoted: Vec<&str> = Vec::new();
    // The class of the Critical Context group being read (`#### <class>`), if any.
    let mut group: Option<ArtifactClass> = None;
    for line in summary.lines() {
        if quote != Quote::None {
            if let Some(text) = line.strip_prefix("> ").or((line == ">").then_some("")) {
                quoted.push(text);
                continue;
            }
            finish_quote(&mut material, quote, &mut quoted);
            quote = Quote::None;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            place = match heading.trim() {
                "Goal" => Place::Goal,
                "Done and In Progress" => Place::Done,
                "Key Decisions" => Place::Decisions,
                "Next Steps" => Place::Next,
                "Critical Context" => Place::Critical,
                _ => Place::Preamble,
            };
            group = None;
            continue;
        }
        if let Some(name) = line.strip_prefix("#### ").filter(|_| place == Place::Critical) {
            group = ArtifactClass::from_name(name.trim());
            continue;
        }
        let Some(item) = line.strip_prefix("- ") else { continue };
        match place {
            Place::Preamble => {}
            Place::Goal => {
                if let Some(label) = item.strip_prefix("Task (") {
                    let event_id = label
                        .strip_prefix("event ")
                        .and_then(|rest| rest.split([';', ')']).next())
                        .unwrap_or("")
                        .to_owned();
                    material.task = Some(Task { event_id, text: String::new() });
                    quote = Quote::Task;
                } else if item.starts_with("Later request") {
                    quote = Quote::Request;
                } else if let Some(text) = old_user_item(item) {
                    match material.task {
                        None => {
                            material.task = Some(Task { event_id: String::new(), text });
                        }
                        Some(_) => material.requests.push(text),
                    }
                } else if !item.starts_with('(') {
                    material.requests.push(item.to_owned());
                }
            }
            Place::Done => {
                if !item.starts_with("No tool calls") {
                    material.done.push(item.to_owned());
                }
            }
            Place::Decisions => match item.starts_with("Note: ") {
                true => material.notes.push(item.to_owned()),
                false => material.decisions.push(item.to_owned()),
            },
            Place::Next => {
                if let Some(step) = item.strip_prefix("plan: ") {
                    material.plan.push(step.to_owned());
                }
            }
            Place::Critical => {
                if line == EXACT_ARTIFACTS_LINE {
                    group = None;
                } else if let Some(class) = group {
                    material.artifacts.push((class, item.to_owned()));
                } else if let Some((class, text)) = critical_item(item) {
                    material.artifacts.push((class, text));
                }
            }
        }
    }
    if quote != Quote::None {
        finish_quote(&mut material, quote, &mut quoted);
    }
    // Critical Context lists each class newest first; material lists run oldest first.
    material.artifacts.reverse();
    material
}

fn finish_quote(material: &mut Material, quote: Quote, quoted: &mut Vec<&str>) {
    let text = quoted.join("\n");
    quoted.clear();
    match quote {
        Quote::Task => {
            if let Some(task) = material.task.as_mut() {
                task.text = text;
            }
        }
        Quote::Request => material.requests.push(text),
        Quote::None => {}
    }
}

/// A Critical Context item: `<class>: <text>` of this version, or the earlier format's
/// `` command: `…` ``, `` path: `…` `` and `` error from `tool`: … ``.
fn critical_item(item: &str) -> Option<(ArtifactClass, String)> {
    if let Some(rest) = item.strip_prefix("error from `") {
        let (_, line) = rest.split_once("`: ")?;
        return Some((ArtifactClass::Error, line.to_owned()));
    }
    let (name, text) = item.split_once(": ")?;
    let class = ArtifactClass::from_name(name)?;
    let text = match (name, text.strip_prefix('`').and_then(|t| t.strip_suffix('`'))) {
        ("command" | "path", Some(inner)) => inner,
        _ => text,
    };
    Some((class, text.to_owned()))
}

/// The text of the earlier format's `User: "…"` Goal item.
fn old_user_item(item: &str) -> Option<String> {
    let quoted = item.strip_prefix("User: \"")?;
    let end = quoted.rfind('"')?;
    Some(quoted[..end].to_owned())
}
