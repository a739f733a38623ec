//! The wire formats a projection's messages are rendered in ([`OutputFormat`]): one enum and
//! its rendering, shared by the native CLI (`contextfold project --format`) and the npm
//! package (`project({ format })`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Message;
use super::ai_sdk::into_model_messages;
use super::anthropic::to_anthropic;
use super::openai_chat::to_openai_chat;
use super::openai_responses::to_openai_responses;

/// A wire format for projected messages. JSON: its kebab-case name (`"ai-sdk"`, …).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// AI SDK `ModelMessage[]` (the default).
    #[default]
    AiSdk,
    /// OpenAI Chat Completions messages.
    OpenaiChat,
    /// OpenAI Responses input items.
    OpenaiResponses,
    /// Anthropic Messages: the `messages` array and a top-level `system` text.
    Anthropic,
    /// The core's provider-neutral [`Message`]s.
    Neutral,
}

/// Messages rendered in an [`OutputFormat`].
#[derive(Debug, Clone, PartialEq)]
pub struct FormattedMessages {
    /// The messages (the Anthropic body's `messages`).
    pub messages: Vec<Value>,
    /// [`OutputFormat::Anthropic`] only: the top-level `system` text (`Some(None)`: none).
    pub system: Option<Option<String>>,
}

/// Why messages have no rendering in a format (e.g. provider state another provider cannot
/// replay): the mapper's stable `code` and its detail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct OutputFormatError {
    /// The format asked for.
    pub format: OutputFormat,
    /// The mapper's stable reason code.
    pub code: &'static str,
    /// What could not be mapped.
    pub detail: String,
}

impl OutputFormat {
    /// Every format, the default first.
    pub const ALL: [OutputFormat; 5] = [
        OutputFormat::AiSdk,
        OutputFormat::OpenaiChat,
        OutputFormat::OpenaiResponses,
        OutputFormat::Anthropic,
        OutputFormat::Neutral,
    ];

    /// The format of a name (see [`OutputFormat::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.name() == name)
    }

    /// The format's name, as JSON and the CLI write it.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::AiSdk => "ai-sdk",
            OutputFormat::OpenaiChat => "openai-chat",
            OutputFormat::OpenaiResponses => "openai-responses",
            OutputFormat::Anthropic => "anthropic",
            OutputFormat::Neutral => "neutral",
        }
    }

    /// Renders `messages` in this format (moved: the AI SDK and neutral renderings reuse their
    /// strings).
    pub fn render(self, messages: Vec<Message>) -> Result<FormattedMessages, OutputFormatError> {
        let error =
            |code: &'static str, detail: String| OutputFormatError { format: self, code, detail };
        let messages = match self {
            OutputFormat::AiSdk => into_model_messages(messages),
            OutputFormat::OpenaiChat => {
                to_openai_chat(&messages).map_err(|e| error(e.code(), e.to_string()))?
            }
            OutputFormat::OpenaiResponses => to_openai_responses(&messages),
            OutputFormat::Anthropic => {
                let history =
                    to_anthropic(&messages).map_err(|e| error(e.code(), e.to_string()))?;
                return Ok(FormattedMessages {
                    messages: history.messages,
                    system: Some(history.system),
                });
            }
            OutputFormat::Neutral => match crate::json_read::text::to_value(&messages) {
                Ok(Value::Array(messages)) => messages,
                Ok(_) => Vec::new(),
                Err(e) => return Err(error("output_failed", e.to_string())),
            },
        };
        Ok(FormattedMessages { messages, system: None })
    }
}

impl std::fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::{Part, Role};

    #[test]
    fn names_are_the_json_names() {
        for format in OutputFormat::ALL {
            assert_eq!(OutputFormat::from_name(format.name()), Some(format));
            let json = serde_json::to_value(format).unwrap();
            assert_eq!(json, Value::String(format.name().to_owned()));
            assert_eq!(serde_json::from_value::<OutputFormat>(json).unwrap(), format);
        }
        assert!(serde_json::from_value::<OutputFormat>(Value::from("xml")).is_err());
    }

    #[test]
    fn anthropic_alone_has_a_system() {
        let messages = || {
            vec![
                Message { role: Role::System, parts: vec![Part::Text { text: "be brief".into() }] },
                Message { role: Role::User, parts: vec![Part::Text { text: "hi".into() }] },
            ]
        };
        let anthropic = OutputFormat::Anthropic.render(messages()).unwrap();
        assert_eq!(anthropic.system, Some(Some("be brief".to_owned())));
        assert_eq!(anthropic.messages.len(), 1);
        let ai_sdk = OutputFormat::AiSdk.render(messages()).unwrap();
        assert_eq!((ai_sdk.system, ai_sdk.messages.len()), (None, 2));
    }
}
