//! The compaction transaction and the pieces it is built from: summary prompt and validation,
//! rolling summarizer input, the malformed-input circuit and provider-native requests.

pub mod circuit;
pub mod native;
pub mod summary_request;
pub mod summary_template;
pub mod summary_validation;
