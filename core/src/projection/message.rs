//! The provider-neutral message model every projection produces.
//!
//! Bindings map it to OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and the AI
//! SDK's `ModelMessage`. A V2 checkpoint appears as one system-authored [`Part::Text`]; a V3
//! checkpoint appears as an explicit [`Part::ProviderState`] that is never rendered as text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::attachment::Attachment;
use crate::checkpoint::ProviderState;

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// System-authored context (checkpoint summaries, notes).
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// Tool results.
    Tool,
}

/// One provider-neutral message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Ordered content parts.
    pub parts: Vec<Part>,
}

/// One content part of a [`Message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning, replayed only where the provider accepts it.
    Reasoning {
        /// The reasoning text.
        text: String,
        /// Provider replay data (signatures, encrypted reasoning).
        #[serde(default, rename = "providerData", skip_serializing_if = "Option::is_none")]
        provider_data: Option<Value>,
    },
    /// A tool call.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool_name: String,
        /// Arguments.
        input: Value,
        /// Executed by the provider rather than the agent.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        hosted: bool,
    },
    /// A tool result; every projection pairs it with exactly one earlier call.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// Call id of the matching call.
        call_id: String,
        /// Tool name.
        tool_name: String,
        /// Output: a string or any JSON value.
        output: Value,
        /// The tool failed (or never returned).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Executed by the provider rather than the agent.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        hosted: bool,
        /// Images and files the tool returned, after `output`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// An image or file of a user message (after its text).
    Attachment {
        /// The attachment.
        attachment: Attachment,
    },
    /// Provider-native compact state from a V3 checkpoint. Opaque: never rendered as text.
    ProviderState {
        /// The state.
        state: ProviderState,
    },
}

impl Message {
    /// A message with one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self { role, parts: vec![Part::Text { text: text.into() }] }
    }
}
