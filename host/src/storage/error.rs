//! Typed errors of the storage boundary. Every variant has a stable snake_case `code()`.

use std::path::PathBuf;

use contextfold_core::checkpoint::SuccessorError;
use contextfold_core::projection::ArchiveError;

/// A storage operation failed. Nothing was written when an error is returned from a write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file does not exist (commands that only read never create one).
    #[error("database `{}` does not exist", path.display())]
    DatabaseNotFound {
        /// The path that was opened.
        path: PathBuf,
    },
    /// SQLite refused an operation.
    #[error("sqlite error while {operation}: {source}")]
    Sqlite {
        /// What the store was doing.
        operation: &'static str,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file was written by a newer contextfold (its schema version is higher than this
    /// build understands); it is left untouched.
    #[error("database schema version {found} is newer than the supported version {supported}")]
    SchemaTooNew {
        /// `PRAGMA user_version` of the file.
        found: u32,
        /// Highest version this build migrates to.
        supported: u32,
    },
    /// A canonical ledger row cannot be read. The store stops instead of guessing.
    #[error("the canonical ledger of session `{session_id}` is unreadable: {detail}")]
    LedgerUnreadable {
        /// The session.
        session_id: String,
        /// What was wrong.
        detail: String,
    },
    /// An event to append belongs to another session.
    #[error("event {index} belongs to session `{found}`, not `{expected}`")]
    EventSessionMismatch {
        /// Index in the appended batch.
        index: usize,
        /// The session appended to.
        expected: String,
        /// The event's session.
        found: String,
    },
    /// An event to append does not continue the ledger's `seq` order.
    #[error("event {index} has seq {seq}, not greater than the previous seq {previous}")]
    EventSeqNotIncreasing {
        /// Index in the appended batch.
        index: usize,
        /// Its seq.
        seq: u64,
        /// The seq before it (in the ledger or the batch).
        previous: u64,
    },
    /// An event to append repeats a `runtimeEventId` of the session.
    #[error("event {index} repeats the runtimeEventId `{event_id}`")]
    EventDuplicateId {
        /// Index in the appended batch.
        index: usize,
        /// The repeated id.
        event_id: String,
    },
    /// An event to append names archived attachment bytes the session archive does not hold
    /// (store them with `archive_put` first, or send them inline).
    #[error("event {index} names attachment bytes {sha256} the archive does not hold")]
    AttachmentNotArchived {
        /// Index in the appended batch.
        index: usize,
        /// SHA-256 of the missing bytes.
        sha256: String,
    },
    /// The session has no events.
    #[error("session `{session_id}` has no events in this database")]
    UnknownSession {
        /// The session.
        session_id: String,
    },
    /// The target session of a copy already has events.
    #[error("session `{session_id}` already has events")]
    SessionExists {
        /// The session.
        session_id: String,
    },
    /// Checkpoint and retraction events are written only with their projection row
    /// ([`crate::storage::Store::append_checkpoint`], [`crate::storage::Store::retract_checkpoint`]).
    #[error(
        "AgentRun events of kind `{kind}` must be written with append_checkpoint or retract_checkpoint"
    )]
    ReservedAgentRunKind {
        /// The kind.
        kind: String,
    },
    /// A retraction names a checkpoint the session never recorded.
    #[error("session `{session_id}` has no recorded checkpoint `{checkpoint_id}`")]
    CheckpointNotFound {
        /// The session.
        session_id: String,
        /// The checkpoint named.
        checkpoint_id: String,
    },
    /// A retraction names a checkpoint already taken back (by its own retraction or with one it
    /// was built on).
    #[error("checkpoint `{checkpoint_id}` is already retracted")]
    CheckpointAlreadyRetracted {
        /// The checkpoint named.
        checkpoint_id: String,
    },
    /// The blocking task that ran a SQLite call was cancelled (the async runtime is shutting
    /// down); whether the call ran is unknown, as for a lost connection.
    #[error("the storage call was cancelled before it reported")]
    Cancelled,
    /// The PostgreSQL ledger failed (its own reason codes: `crate::ledger::postgres::PgError`).
    #[error(transparent)]
    Postgres(#[from] crate::ledger::postgres::PgError),
}

impl StoreError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::DatabaseNotFound { .. } => "database_not_found",
            StoreError::Sqlite { .. } => "storage_sqlite",
            StoreError::SchemaTooNew { .. } => "schema_too_new",
            StoreError::LedgerUnreadable { .. } => "ledger_unreadable",
            StoreError::EventSessionMismatch { .. } => "event_session_mismatch",
            StoreError::EventSeqNotIncreasing { .. } => "event_seq_not_increasing",
            StoreError::EventDuplicateId { .. } => "event_duplicate_id",
            StoreError::UnknownSession { .. } => "unknown_session",
            StoreError::AttachmentNotArchived { .. } => "attachment_not_archived",
            StoreError::SessionExists { .. } => "session_exists",
            StoreError::ReservedAgentRunKind { .. } => "reserved_agent_run_kind",
            StoreError::CheckpointNotFound { .. } => "checkpoint_not_found",
            StoreError::CheckpointAlreadyRetracted { .. } => "checkpoint_already_retracted",
            StoreError::Cancelled => "storage_cancelled",
            StoreError::Postgres(error) => error.code(),
        }
    }

    /// Whether the same call may succeed when repeated (a lost connection, a serialization
    /// failure, a pool that had no connection); SQLite's busy waits are already retried inside.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Postgres(error) if error.is_retryable())
    }

    pub(crate) fn sqlite(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| StoreError::Sqlite { operation, source }
    }
}

/// A checkpoint append failed; neither the AgentRun event nor the projection row was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointAppendError {
    /// The candidate is not a valid successor of the current tip (another writer won the
    /// compare-and-swap, or the candidate names another predecessor).
    #[error("checkpoint `{checkpoint_id}` lost the compare-and-swap: {source}")]
    Conflict {
        /// The candidate's id.
        checkpoint_id: String,
        /// Why it is not a valid successor.
        #[source]
        source: SuccessorError,
    },
    /// The storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl CheckpointAppendError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            CheckpointAppendError::Conflict { .. } => "successor_conflict",
            CheckpointAppendError::Store(error) => error.code(),
        }
    }

    /// Whether the compare-and-swap lost (the core's `AppendFailure::conflict`).
    pub fn is_conflict(&self) -> bool {
        matches!(self, CheckpointAppendError::Conflict { .. })
    }
}

/// An `archive_read` call was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveReadError {
    /// The request is not valid JSON of the `archive_read` input schema.
    #[error("invalid archive_read input: {0}")]
    InvalidRequest(String),
    /// The address, session, hash or size did not validate, or the slice request is invalid.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// No body with that hash was archived in the session.
    #[error("nothing is archived at `{address}`")]
    NotArchived {
        /// The address asked for.
        address: String,
    },
    /// The storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ArchiveReadError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            ArchiveReadError::InvalidRequest(_) => "archive_read_invalid_request",
            ArchiveReadError::Archive(error) => error.code(),
            ArchiveReadError::NotArchived { .. } => "archive_not_found",
            ArchiveReadError::Store(error) => error.code(),
        }
    }
}
