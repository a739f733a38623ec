//! API keys: read from the environment, held opaquely, never printed.
//!
//! An [`ApiKey`] has a custom `Debug` that prints `ApiKey([redacted])` and no `Display`, so a key
//! cannot reach a log line or an error message by formatting. The clients send it in a header
//! marked sensitive and scrub its text from every captured exchange and failure message.

use std::fmt;

/// Environment variable holding the OpenAI key (Chat Completions and Responses).
pub const OPENAI_API_KEY_VAR: &str = "OPENAI_API_KEY";

/// Environment variable holding the Anthropic key.
pub const ANTHROPIC_API_KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// A provider credential. Its text is reachable only inside this crate.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key, trimming surrounding whitespace (a trailing newline from a file or a shell
    /// is never part of a key).
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        let trimmed = key.trim();
        if trimmed.len() == key.len() { Self(key) } else { Self(trimmed.to_owned()) }
    }

    /// Reads a key from the environment variable `var`.
    pub fn from_env(var: &str) -> Result<Self, ApiKeyError> {
        match std::env::var(var) {
            Ok(value) if value.trim().is_empty() => Err(ApiKeyError::Empty { var: var.to_owned() }),
            Ok(value) => Ok(Self::new(value)),
            Err(std::env::VarError::NotPresent) => {
                Err(ApiKeyError::Missing { var: var.to_owned() })
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(ApiKeyError::NotUnicode { var: var.to_owned() })
            }
        }
    }

    /// The key text, for the request header and for scrubbing.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self::new(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

/// The OpenAI key from [`OPENAI_API_KEY_VAR`].
pub fn openai_api_key_from_env() -> Result<ApiKey, ApiKeyError> {
    ApiKey::from_env(OPENAI_API_KEY_VAR)
}

/// The Anthropic key from [`ANTHROPIC_API_KEY_VAR`].
pub fn anthropic_api_key_from_env() -> Result<ApiKey, ApiKeyError> {
    ApiKey::from_env(ANTHROPIC_API_KEY_VAR)
}

/// Why no key could be read. Messages name the variable, never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiKeyError {
    /// The variable is not set.
    #[error("environment variable {var} is not set")]
    Missing {
        /// The variable name.
        var: String,
    },
    /// The variable is set but blank.
    #[error("environment variable {var} is empty")]
    Empty {
        /// The variable name.
        var: String,
    },
    /// The variable does not hold valid Unicode.
    #[error("environment variable {var} is not valid Unicode")]
    NotUnicode {
        /// The variable name.
        var: String,
    },
}

impl ApiKeyError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiKeyError::Missing { .. } => "api_key_missing",
            ApiKeyError::Empty { .. } => "api_key_empty",
            ApiKeyError::NotUnicode { .. } => "api_key_not_unicode",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let key = ApiKey::new(" sk-secret-123\n");
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(key.expose(), "sk-secret-123");
    }

    #[test]
    fn missing_variable_is_a_typed_error_naming_the_variable() {
        let error = ApiKey::from_env("CONTEXTFOLD_TEST_SURELY_UNSET_VARIABLE").expect_err("unset");
        assert_eq!(error.code(), "api_key_missing");
        assert!(error.to_string().contains("CONTEXTFOLD_TEST_SURELY_UNSET_VARIABLE"));
    }
}
