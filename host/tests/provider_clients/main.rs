//! The provider clients (OpenAI Chat and Responses, Anthropic, Codex, summarizers) over real
//! HTTP against loopback servers: error classes, redaction, end to end (their timeouts are in `reliability`).

#[path = "../providers/mod.rs"]
mod providers;

mod providers_classes;
mod providers_codex;
mod providers_e2e;
mod providers_redaction;
mod providers_summarizers;
