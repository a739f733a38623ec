//! Reading events from JSON: the text fast path of [`RuntimeEvent`] and the hand reader of
//! [`EventContent`].
//!
//! [`RuntimeEvent`]'s envelope is read by serde's derive (`event.rs`), which decides every
//! result and error. Events are also the rows the npm package reads by the thousand
//! (docs/performance.md), so text and JSON Lines are first read straight from the text
//! ([`RuntimeEvent::read_text`]: keys compared with the expected names, never allocated or
//! hashed into a map) for the fields every writer writes. Anything else (a field this reader
//! does not know, a repeated key, a content whose `type` is not its first key, any error) is
//! read again through a `serde_json::Value` and the derive. A new envelope field therefore
//! needs no change here: events that carry it take the derive's route.
//!
//! [`EventContent`] is read by hand, from a `Value`, from any serde input (its members as values,
//! no map built) or from the text: serde's derive of an
//! internally tagged enum buffers every content object in serde's private tree before reading
//! it, and in the npm package's wasm module that generated code outweighed the logic it read
//! for. Its rules are the derive's (the tests compare both on every single-field change): keys
//! are read in order, the first one a kind does not know refused by name (`unknown field …`), a
//! wrong type refused in serde's words, the first missing required field reported after the
//! rest were read; `null` is `None` for an optional field and an error for a defaulted one. A
//! content object's `type` is read first wherever it stands. Attachments are read by their
//! serde derive.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Error as _, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{EVENT_KINDS, EventContent, RuntimeEvent};
use crate::attachment::Attachment;
use crate::json_read::text::TextReader;
use crate::json_read::{
    JsonReadError, boolean, into_object, into_string, missing_field, nullable, u64, unknown_field,
    unknown_variant,
};

/// The fields of an event read so far.
#[derive(Default)]
struct EventFields {
    session_id: Option<String>,
    run_id: Option<String>,
    turn_id: Option<String>,
    runtime_event_id: Option<String>,
    seq: Option<u64>,
    created_at_ms: Option<Option<u64>>,
    response_id: Option<Option<String>>,
    partial: Option<bool>,
    pinned: Option<bool>,
    content: Option<EventContent>,
    metadata: Option<Option<Map<String, Value>>>,
}

impl EventFields {
    /// Reads field `key` (any but `content`) from its value: whether it was read before, or
    /// `None` for a key or value this reader leaves to the derive.
    fn set(&mut self, key: &str, value: Value) -> Option<bool> {
        Some(match key {
            "sessionId" => self.session_id.replace(into_string(value).ok()?).is_some(),
            "runId" => self.run_id.replace(into_string(value).ok()?).is_some(),
            "turnId" => self.turn_id.replace(into_string(value).ok()?).is_some(),
            "runtimeEventId" => self.runtime_event_id.replace(into_string(value).ok()?).is_some(),
            "seq" => self.seq.replace(u64(&value).ok()?).is_some(),
            "createdAtMs" => {
                self.created_at_ms.replace(nullable(value, |v| u64(&v)).ok()?).is_some()
            }
            "responseId" => self.response_id.replace(nullable(value, into_string).ok()?).is_some(),
            "partial" => self.partial.replace(boolean(&value).ok()?).is_some(),
            "pinned" => self.pinned.replace(boolean(&value).ok()?).is_some(),
            "metadata" => {
                let metadata = nullable(value, |v| into_object(v, "a map")).ok()?;
                self.metadata.replace(metadata).is_some()
            }
            _ => return None,
        })
    }

    /// The event, if every required field was read; a field this reader does not know was
    /// refused by [`Self::set`], so the event is built with [`RuntimeEvent::new`]'s defaults
    /// for any field declared after it.
    fn finish(self) -> Option<RuntimeEvent> {
        let content = self.content?;
        Some(RuntimeEvent {
            created_at_ms: self.created_at_ms.flatten(),
            response_id: self.response_id.flatten(),
            partial: self.partial.unwrap_or(false),
            pinned: self.pinned.unwrap_or(false),
            metadata: self.metadata.flatten(),
            ..RuntimeEvent::new(
                self.session_id?,
                self.run_id?,
                self.turn_id?,
                self.runtime_event_id?,
                self.seq?,
                content,
            )
        })
    }
}

impl RuntimeEvent {
    /// Reads the event object at `reader`'s position straight from the text, for the events
    /// every writer writes: `None` for anything else (a syntax or field error, a repeated key,
    /// a content whose `type` is not its first key), which the caller then reads through a
    /// `Value` ([`RuntimeEvent::from_value`]) for its exact result or error.
    pub fn read_text(reader: &mut TextReader<'_>) -> Option<Self> {
        reader.begin_object().ok()?;
        let mut fields = EventFields::default();
        let mut first = true;
        while let Some(key) = reader.next_key(first).ok()? {
            first = false;
            if key == "content" {
                let content = EventContent::read_text(reader)?;
                if fields.content.replace(content).is_some() {
                    return None;
                }
            } else if fields.set(&key, reader.value().ok()?)? {
                return None;
            }
        }
        fields.finish()
    }

    /// Reads the array of events at `reader`'s position straight from the text, as
    /// [`Self::read_text`] reads each; `None` if any is not read that way.
    pub fn read_text_array(reader: &mut TextReader<'_>) -> Option<Vec<Self>> {
        reader.begin_array().ok()?;
        let mut events = Vec::new();
        while reader.next_item(events.is_empty()).ok()? {
            events.push(Self::read_text(reader)?);
        }
        Some(events)
    }

    /// The events of a JSON array text, straight from the text ([`Self::read_text_array`]);
    /// `None` for a text that path does not read, which the caller then reads event by event
    /// through values ([`Self::from_value`]) for the exact error.
    pub fn array_from_text(text: &str) -> Option<Vec<Self>> {
        let mut reader = TextReader::new(text);
        let events = Self::read_text_array(&mut reader)?;
        reader.finish().ok()?;
        Some(events)
    }
}

/// serde's `Deserialize` for [`EventContent`]: the members of the content object, in order,
/// a repeated key keeping its first place and its last value (as in the `Value` it stands
/// for), then read by `read_members`. No map is built and no key
/// is allocated or hashed (keys are borrowed where the input lends them): the npm package reads
/// contents by the thousand from its value tape, and a `Value` map cost a third of that read
/// (docs/performance.md, npm row `unseen`). Anything but an object is refused in serde's words.
impl<'de> Deserialize<'de> for EventContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

/// The visitor of [`EventContent`]'s `Deserialize`.
struct ContentVisitor;

/// A member's key, borrowed from the input when it can be.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor).map(Key)
    }
}

/// The visitor of [`Key`].
struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.to_owned()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key))
    }
}

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = EventContent;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an event content object with a `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventContent, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Value)> = Vec::with_capacity(6);
        while let Some(Key(key)) = map.next_key()? {
            let value = map.next_value()?;
            match members.iter_mut().find(|(seen, _)| *seen == key) {
                Some(member) => member.1 = value,
                None => members.push((key, value)),
            }
        }
        EventContent::read_members(members).map_err(A::Error::custom)
    }
}

/// The `type` of a content object.
#[derive(Clone, Copy, PartialEq)]
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
    /// The kind named `tag` (one of [`EVENT_KINDS`]).
    fn named(tag: &str) -> Result<Self, JsonReadError> {
        const KINDS: [Kind; 9] = [
            Kind::UserText,
            Kind::AssistantText,
            Kind::Reasoning,
            Kind::ToolCall,
            Kind::ToolResult,
            Kind::HostedToolCall,
            Kind::HostedToolResult,
            Kind::SystemNote,
            Kind::RuntimeNote,
        ];
        match EVENT_KINDS.iter().position(|name| *name == tag) {
            Some(index) => Ok(KINDS[index]),
            None => Err(unknown_variant(tag, EVENT_KINDS)),
        }
    }

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

/// The fields of a content object read so far.
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

impl Fields {
    /// Reads field `key` of a content of `kind`; true if it was read before.
    fn set(&mut self, kind: Kind, key: &str, value: Value) -> Result<bool, JsonReadError> {
        let expected = kind.fields();
        let Some(&name) = expected.iter().find(|name| **name == key) else {
            return Err(unknown_field(key, expected));
        };
        Ok(match name {
            "text" => self.text.replace(into_string(value)?).is_some(),
            "attachments" => self.attachments.replace(attachments(value)?).is_some(),
            "providerData" => self.provider_data.replace(nullable(value, Ok)?).is_some(),
            "callId" => self.call_id.replace(into_string(value)?).is_some(),
            "toolName" => self.tool_name.replace(into_string(value)?).is_some(),
            "input" => self.input.replace(value).is_some(),
            "output" => self.output.replace(value).is_some(),
            "isError" => self.is_error.replace(boolean(&value)?).is_some(),
            _ => self.code.replace(into_string(value)?).is_some(),
        })
    }
}

impl EventContent {
    /// Reads a content object from an owned JSON value: `type` first, then the other fields in
    /// order, each refused by name if the kind has no such field. (The tests' reference route.)
    #[cfg(test)]
    pub(crate) fn read_json(value: Value) -> Result<Self, JsonReadError> {
        let object = into_object(value, "an event content object with a `type`")?;
        Self::read_members(
            object.into_iter().map(|(key, value)| (Cow::Owned(key), value)).collect(),
        )
    }

    /// Reads a content object from its members (each key once, in order, as in a JSON object):
    /// `type` first wherever it stands, then the other fields in order, each refused by name if
    /// the kind has no such field.
    fn read_members(mut members: Vec<(Cow<'_, str>, Value)>) -> Result<Self, JsonReadError> {
        let kind = match members.iter().position(|(key, _)| key == "type") {
            Some(at) => match members.remove(at).1 {
                Value::String(tag) => Kind::named(&tag)?,
                other => return Err(JsonReadError::invalid_type(&other, "variant identifier")),
            },
            None => return Err(missing_field("type")),
        };
        let mut fields = Fields::default();
        for (key, value) in members {
            fields.set(kind, &key, value)?;
        }
        fields.into_content(kind)
    }

    /// Reads a content object whose first key is `type` straight from the text (see
    /// [`RuntimeEvent::read_text`]).
    fn read_text(reader: &mut TextReader<'_>) -> Option<Self> {
        reader.begin_object().ok()?;
        reader.next_key(true).ok()?.filter(|key| key == "type")?;
        let kind = Kind::named(&reader.string().ok()?).ok()?;
        let mut fields = Fields::default();
        while let Some(key) = reader.next_key(false).ok()? {
            if fields.set(kind, &key, reader.value().ok()?).ok()? {
                return None;
            }
        }
        fields.into_content(kind).ok()
    }
}

/// An `attachments` array.
fn attachments(value: Value) -> Result<Vec<Attachment>, JsonReadError> {
    match value {
        Value::Array(_) => serde_json::from_value(value).map_err(|e| JsonReadError(e.to_string())),
        other => Err(JsonReadError::invalid_type(&other, "a sequence")),
    }
}

impl Fields {
    /// The content of `kind` (whose fields only these are), or the required field it lacks.
    fn into_content(self, kind: Kind) -> Result<EventContent, JsonReadError> {
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
        let required = |field: Option<String>, name| field.ok_or_else(|| missing_field(name));
        let (attachments, is_error) = (attachments.unwrap_or_default(), is_error.unwrap_or(false));
        let provider_data = provider_data.flatten();
        Ok(match kind {
            Kind::UserText => EventContent::UserText { text: required(text, "text")?, attachments },
            Kind::AssistantText => EventContent::AssistantText { text: required(text, "text")? },
            Kind::SystemNote => EventContent::SystemNote { text: required(text, "text")? },
            Kind::Reasoning => {
                EventContent::Reasoning { text: required(text, "text")?, provider_data }
            }
            Kind::RuntimeNote => EventContent::RuntimeNote {
                code: required(code, "code")?,
                text: required(text, "text")?,
            },
            Kind::ToolCall | Kind::HostedToolCall => {
                let call_id = required(call_id, "callId")?;
                let tool_name = required(tool_name, "toolName")?;
                let input = input.ok_or_else(|| missing_field("input"))?;
                if kind == Kind::ToolCall {
                    EventContent::ToolCall { call_id, tool_name, input }
                } else {
                    EventContent::HostedToolCall { call_id, tool_name, input }
                }
            }
            Kind::ToolResult | Kind::HostedToolResult => {
                let call_id = required(call_id, "callId")?;
                let tool_name = required(tool_name, "toolName")?;
                let output = output.ok_or_else(|| missing_field("output"))?;
                if kind == Kind::ToolResult {
                    EventContent::ToolResult { call_id, tool_name, output, is_error, attachments }
                } else {
                    EventContent::HostedToolResult { call_id, tool_name, output, is_error }
                }
            }
        })
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
