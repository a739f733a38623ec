//! Projection: checkpoint + uncovered raw tail + current turn, as provider-neutral messages,
//! and their mapping to provider wire formats.

pub mod ai_sdk;
pub mod ai_sdk_import;
pub mod anthropic;
#[cfg(test)]
mod import_reuse_tests;
mod import_state;
pub mod live_head;
pub mod materialize;
pub mod message;
pub mod openai_chat;
pub mod openai_responses;
pub mod project;

pub use message::{Message, Part, Role};
pub use project::{ProjectInput, Projection, ReplayedCheckpoint, project, project_with};
