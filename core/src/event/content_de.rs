//! Reading an [`EventContent`] without buffering it.
//!
//! A derived internally tagged enum (`#[serde(tag = "type")]`) first copies the whole object
//! into serde's private `Content` tree to find its tag, then reads the variant from that copy:
//! every event's content is allocated twice, and the npm package's wasm held one copy of that
//! machinery per error type (about 100 KB of code). Here, when `type` is the first key (as every
//! writer of this crate and the package puts it), the fields after it are read straight into
//! [`Fields`], each refused by name if the kind has no such field, and the kind's required
//! fields are checked at the end. When `type` comes later, the object is kept as JSON, put in
//! that order and read again. The accepted JSON, the built values and the error classes (an
//! `unknown field …` message, a `missing field …` one, a wrong type) are the derive's: the
//! tests below compare both on every single-field change of every kind.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::EventContent;
use crate::attachment::Attachment;

/// The `type` of a content object.
#[derive(Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    UserText,
    AssistantText,
    Reasoning,
    ToolCall,
    ToolResult,
    HostedToolCall,
    HostedToolResult,
    SystemNote,
    RuntimeNote,
}

impl Kind {
    /// The fields of this kind besides `type`, as the derive listed them in its messages.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::UserText => &["text", "attachments"],
            Kind::AssistantText | Kind::SystemNote => &["text"],
            Kind::Reasoning => &["text", "providerData"],
            Kind::ToolCall | Kind::HostedToolCall => &["callId", "toolName", "input"],
            Kind::ToolResult => &["callId", "toolName", "output", "isError", "attachments"],
            Kind::HostedToolResult => &["callId", "toolName", "output", "isError"],
            Kind::RuntimeNote => &["code", "text"],
        }
    }
}

/// Every field name of every kind, `type` first.
const NAMES: &[&str] = &[
    "type",
    "text",
    "attachments",
    "providerData",
    "callId",
    "toolName",
    "input",
    "output",
    "isError",
    "code",
];

/// A key of a content object: one of [`NAMES`] (read without allocating) or another.
enum Key {
    Known(&'static str),
    Unknown(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match NAMES.iter().find(|name| **name == key) {
            Some(name) => Key::Known(name),
            None => Key::Unknown(key.to_owned()),
        })
    }
}

/// The fields read so far (each at most once).
#[derive(Default)]
struct Fields {
    text: Option<String>,
    attachments: Option<Vec<Attachment>>,
    provider_data: Option<Option<Value>>,
    call_id: Option<String>,
    tool_name: Option<String>,
    input: Option<Value>,
    output: Option<Value>,
    is_error: Option<bool>,
    code: Option<String>,
}

impl<'de> Deserialize<'de> for EventContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = EventContent;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an event content object with a `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventContent, A::Error> {
        let first = match map.next_key::<Key>()? {
            None => return Err(A::Error::missing_field("type")),
            Some(Key::Known("type")) => {
                let kind: Kind = map.next_value()?;
                return read_fields(kind, map);
            }
            Some(Key::Known(name)) => name.to_owned(),
            Some(Key::Unknown(name)) => name,
        };
        // The tag comes later: keep the object as JSON, then read it again with its tag first.
        let mut object = Map::new();
        object.insert(first, map.next_value()?);
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
            }
            object.insert(key, value);
        }
        let kind = object.shift_remove("type").ok_or_else(|| A::Error::missing_field("type"))?;
        let mut tagged = Map::with_capacity(object.len() + 1);
        tagged.insert("type".to_owned(), kind);
        tagged.extend(object);
        crate::typed_json::from_value(&Value::Object(tagged)).map_err(A::Error::custom)
    }
}

/// Reads the fields after `type`, in order, as the derive did: a field of another kind (or of
/// none) is refused by name before its value is read, a repeated one as a duplicate.
fn read_fields<'de, A: MapAccess<'de>>(kind: Kind, mut map: A) -> Result<EventContent, A::Error> {
    let expected = kind.fields();
    let mut fields = Fields::default();
    while let Some(key) = map.next_key::<Key>()? {
        let name = match key {
            Key::Known(name) if expected.contains(&name) => name,
            Key::Known(name) => return Err(A::Error::unknown_field(name, expected)),
            Key::Unknown(name) => return Err(A::Error::unknown_field(&name, expected)),
        };
        let duplicate = match name {
            "text" => fields.text.replace(map.next_value()?).is_some(),
            "attachments" => fields.attachments.replace(map.next_value()?).is_some(),
            "providerData" => fields.provider_data.replace(map.next_value()?).is_some(),
            "callId" => fields.call_id.replace(map.next_value()?).is_some(),
            "toolName" => fields.tool_name.replace(map.next_value()?).is_some(),
            "input" => fields.input.replace(map.next_value()?).is_some(),
            "output" => fields.output.replace(map.next_value()?).is_some(),
            "isError" => fields.is_error.replace(map.next_value()?).is_some(),
            _ => fields.code.replace(map.next_value()?).is_some(),
        };
        if duplicate {
            return Err(A::Error::duplicate_field(name));
        }
    }
    fields.into_content(kind).map_err(A::Error::missing_field)
}

impl Fields {
    /// The content of `kind` (whose fields only these are), or the required field it lacks.
    fn into_content(self, kind: Kind) -> Result<EventContent, &'static str> {
        let Fields {
            text,
            attachments,
            provider_data,
            call_id,
            tool_name,
            input,
            output,
            is_error,
            code,
        } = self;
        let text = || text.ok_or("text");
        Ok(match kind {
            Kind::UserText => EventContent::UserText {
                text: text()?,
                attachments: attachments.unwrap_or_default(),
            },
            Kind::AssistantText => EventContent::AssistantText { text: text()? },
            Kind::SystemNote => EventContent::SystemNote { text: text()? },
            Kind::Reasoning => {
                EventContent::Reasoning { text: text()?, provider_data: provider_data.flatten() }
            }
            Kind::RuntimeNote => {
                EventContent::RuntimeNote { code: code.ok_or("code")?, text: text()? }
            }
            Kind::ToolCall | Kind::HostedToolCall => {
                let call_id = call_id.ok_or("callId")?;
                let tool_name = tool_name.ok_or("toolName")?;
                let input = input.ok_or("input")?;
                if kind == Kind::ToolCall {
                    EventContent::ToolCall { call_id, tool_name, input }
                } else {
                    EventContent::HostedToolCall { call_id, tool_name, input }
                }
            }
            Kind::ToolResult | Kind::HostedToolResult => {
                let call_id = call_id.ok_or("callId")?;
                let tool_name = tool_name.ok_or("toolName")?;
                let output = output.ok_or("output")?;
                let is_error = is_error.unwrap_or(false);
                if kind == Kind::ToolResult {
                    let attachments = attachments.unwrap_or_default();
                    EventContent::ToolResult { call_id, tool_name, output, is_error, attachments }
                } else {
                    EventContent::HostedToolResult { call_id, tool_name, output, is_error }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    //! The hand-written read against the derive it replaces, kept here as the reference.
    use super::*;
    use serde_json::json;

    /// The derived internally tagged enum `EventContent` used to be.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
    enum Derived {
        UserText {
            text: String,
            #[serde(default)]
            attachments: Vec<Attachment>,
        },
        AssistantText {
            text: String,
        },
        Reasoning {
            text: String,
            #[serde(default, rename = "providerData")]
            provider_data: Option<Value>,
        },
        #[serde(rename_all = "camelCase")]
        ToolCall {
            call_id: String,
            tool_name: String,
            input: Value,
        },
        #[serde(rename_all = "camelCase")]
        ToolResult {
            call_id: String,
            tool_name: String,
            output: Value,
            #[serde(default)]
            is_error: bool,
            #[serde(default)]
            attachments: Vec<Attachment>,
        },
        #[serde(rename_all = "camelCase")]
        HostedToolCall {
            call_id: String,
            tool_name: String,
            input: Value,
        },
        #[serde(rename_all = "camelCase")]
        HostedToolResult {
            call_id: String,
            tool_name: String,
            output: Value,
            #[serde(default)]
            is_error: bool,
        },
        SystemNote {
            text: String,
        },
        RuntimeNote {
            code: String,
            text: String,
        },
    }

    fn class(message: &str) -> &'static str {
        if message.starts_with("unknown field") {
            "unknown_field"
        } else if message.starts_with("missing field") {
            "missing_field"
        } else {
            "other"
        }
    }

    /// Every kind with every field of the union given every shape of value, one at a time, and
    /// every field removed, with `type` first and last: both reads accept the same objects, build the same content, and
    /// refuse the rest with the same class of message (the class picks the event parser's code).
    #[test]
    fn agrees_with_the_derive_on_every_single_change() {
        let valid = [
            json!({"type": "user_text", "text": "hi", "attachments": []}),
            json!({"type": "assistant_text", "text": "a"}),
            json!({"type": "reasoning", "text": "r", "providerData": {"sig": "x"}}),
            json!({"type": "tool_call", "callId": "c", "toolName": "t", "input": {"a": 1}}),
            json!({"type": "tool_result", "callId": "c", "toolName": "t", "output": "o",
                   "isError": true, "attachments": []}),
            json!({"type": "hosted_tool_call", "callId": "c", "toolName": "t", "input": null}),
            json!({"type": "hosted_tool_result", "callId": "c", "toolName": "t", "output": 1,
                   "isError": false}),
            json!({"type": "system_note", "text": "s"}),
            json!({"type": "runtime_note", "code": "c", "text": "t"}),
        ];
        // Every field name of every kind, and one of none.
        let fields: Vec<&str> = NAMES.iter().copied().chain(["mood"]).collect();
        let shapes = [
            json!("s"),
            json!(null),
            json!(1),
            json!(true),
            json!({}),
            json!([]),
            json!("tool_call"),
            json!([{"kind": "image", "mediaType": "image/png", "url": "https://x/y.png"}]),
        ];
        let mut compared = 0;
        for base in &valid {
            let mut cases = vec![base.clone()];
            for &field in &fields {
                let mut removed = base.clone();
                removed.as_object_mut().expect("object").remove(field);
                cases.push(removed);
                for shape in &shapes {
                    let mut changed = base.clone();
                    changed[field] = shape.clone();
                    cases.push(changed);
                }
            }
            // The same objects with `type` last (the buffered route).
            let type_last: Vec<Value> = cases
                .iter()
                .filter_map(|case| {
                    let mut object = case.as_object()?.clone();
                    let kind = object.shift_remove("type")?;
                    object.insert("type".to_owned(), kind);
                    Some(Value::Object(object))
                })
                .collect();
            cases.extend(type_last);
            for case in cases {
                let hand: Result<EventContent, String> =
                    serde_json::from_value(case.clone()).map_err(|e| e.to_string());
                let reference: Result<Derived, String> =
                    serde_json::from_value(case.clone()).map_err(|e| e.to_string());
                match (&hand, &reference) {
                    (Ok(hand), Ok(reference)) => {
                        assert_eq!(format!("{hand:?}"), format!("{reference:?}"), "{case}")
                    }
                    (Err(hand), Err(reference)) => {
                        assert_eq!(class(hand), class(reference), "{case}: {hand} / {reference}")
                    }
                    _ => panic!("{case}: hand-written {hand:?}, derive {reference:?}"),
                }
                // The typed text read agrees with the value read.
                let text: Result<EventContent, _> = serde_json::from_str(&case.to_string());
                assert_eq!(text.is_ok(), hand.is_ok(), "{case}");
                compared += 1;
            }
        }
        // Per kind: the valid object, each field removed or reshaped, and all of those again with
        // `type` last (all but the one whose `type` was removed).
        let per_kind = 1 + fields.len() * (1 + shapes.len());
        assert_eq!(compared, valid.len() * (2 * per_kind - 1));
    }
}
