//! Projection: checkpoint + uncovered raw tail + current turn, as provider-neutral messages,
//! and their mapping to provider wire formats.

pub mod ai_sdk;
pub mod ai_sdk_import;
pub mod anthropic;
mod calibrated;
#[cfg(test)]
mod import_reuse_tests;
mod import_state;
pub mod live_head;
pub mod materialize;
pub mod message;
pub mod openai_chat;
pub mod openai_responses;
mod options;
mod output_format;
pub mod project;

pub use calibrated::{CalibratedProjection, calibrated_estimator, project_calibrated};
pub use message::{Message, Part, Role};
pub use options::{ImportOptions, ProjectOptions};
pub use output_format::{FormattedMessages, OutputFormat, OutputFormatError};
pub use project::{ProjectInput, Projection, ReplayedCheckpoint, project, project_with};
