//! Helpers the wasm bindings need and a user does not: the event reader's parts, the compact
//! JSON writer with its string hook, and the `*_with` variants that take a hash engine or a
//! reused buffer. Not part of the supported API; hidden from the docs.

pub use crate::json_read::text::{JsonSyntaxError, TextReader, to_value, value_from_text};
pub use crate::json_text::{JsonWriter, PathStep, StringHook, json_text, write_json_text};
pub use crate::prefix_match::match_checkpoint_prefix_with;
pub use crate::projection::ai_sdk::{into_model_messages, write_model_messages};
pub use crate::replay::evaluate_replay_with;
pub use crate::utf16::utf16_length;
