//! Placeholder until the reader lands (work in progress on a branch).

use super::{ImportedSession, SessionFileError};
use crate::projection::ImportContext;

pub(super) fn looks_like(_text: &str) -> bool {
    false
}

pub(super) fn import(_text: &str, _ids: &ImportContext) -> Result<ImportedSession, SessionFileError> {
    Err(SessionFileError::UnknownFormat { detail: "not implemented yet".into() })
}
