//! Typed errors of the command line. Every error prints its stable `code()`; with `--json` it
//! is printed as `{"error": {"code", "message"}}` on stdout.

use std::path::PathBuf;

use crate::providers::{ApiKeyError, ProviderConfigError};
use crate::runtime::RuntimeError;
use crate::storage::StoreError;

use super::formats::FormatError;

/// A command failed. Commands that write do so in one transaction: on error nothing changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// An input file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    ReadInput {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An input file is not JSON.
    #[error("`{}` is not valid JSON: {detail}", path.display())]
    InputSyntax {
        /// The file.
        path: PathBuf,
        /// Parser message.
        detail: String,
    },
    /// An input document does not have the shape of its format.
    #[error("import failed ({code}): {detail}")]
    Import {
        /// Stable code from the format's parser.
        code: &'static str,
        /// What was wrong and where.
        detail: String,
    },
    /// The projection cannot be expressed in the requested format.
    #[error("cannot map the projection to {format} ({code}): {detail}")]
    Mapping {
        /// The format.
        format: &'static str,
        /// Stable code.
        code: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The provider's API key could not be read from the environment (the message names the
    /// variable, never a value).
    #[error("cannot read the API key: {0}")]
    ApiKey(#[from] ApiKeyError),
    /// The provider client could not be configured (base URL, model, key format).
    #[error("cannot configure the provider: {0}")]
    ProviderConfig(#[from] ProviderConfigError),
    /// `verify` found checkpoints that do not match the ledger.
    #[error("{failures} checkpoint check(s) failed: {codes}")]
    VerifyFailed {
        /// Number of failures.
        failures: usize,
        /// Their reason codes, comma-separated.
        codes: String,
    },
    /// The demo's simulated model answered something its client cannot read, or kept
    /// refusing the request after recovery.
    #[error("the demo's model request failed: {detail}")]
    Demo {
        /// What went wrong.
        detail: String,
    },
    /// The provider simulator could not start.
    #[error("cannot start the provider simulator: {0}")]
    Simulator(#[from] crate::simulator::SimulatorError),
    /// `inspect` cannot serve on its `--listen` address (not loopback without `--allow-remote`,
    /// or the bind failed).
    #[error("cannot serve the inspector on {addr}: {detail}")]
    InspectorListen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        detail: String,
    },
    /// Writing output failed.
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

impl CliError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            CliError::ReadInput { .. } => "input_unreadable",
            CliError::InputSyntax { .. } => "input_syntax",
            CliError::Import { code, .. } | CliError::Mapping { code, .. } => code,
            CliError::Store(error) => error.code(),
            CliError::Runtime(error) => error.code(),
            CliError::ApiKey(error) => error.code(),
            CliError::ProviderConfig(error) => error.code(),
            CliError::VerifyFailed { .. } => "verify_failed",
            CliError::Demo { .. } => "demo_request_failed",
            CliError::Simulator(error) => error.code(),
            CliError::InspectorListen { .. } => "inspector_listen_failed",
            CliError::Output(_) => "output_failed",
        }
    }

    /// Process exit code: 2 for a failed verification, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::VerifyFailed { .. } => 2,
            _ => 1,
        }
    }
}

impl From<FormatError> for CliError {
    fn from(error: FormatError) -> Self {
        CliError::Import { code: error.code, detail: error.to_string() }
    }
}
