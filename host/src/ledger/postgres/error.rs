//! The typed errors of the PostgreSQL boundary: every failure of the server, the pool or the
//! configuration becomes one [`PgError`] with a stable snake_case [`PgError::code`], mapped
//! from the SQLSTATE where the server gave one. A [`PgError`] reaches the ledger's callers as
//! [`crate::storage::StoreError::Postgres`]; the ledger's logical refusals (a `seq` that does
//! not increase, a duplicate id, a lost compare-and-swap) stay the backend-independent
//! variants of [`crate::storage::StoreError`] and [`crate::storage::CheckpointAppendError`].

use tokio_postgres::error::SqlState;

/// The SQLSTATE the append-only triggers raise (class `CF`, contextfold's own).
pub const APPEND_ONLY_SQLSTATE: &str = "CFA01";

/// A PostgreSQL operation failed. Nothing was committed when a write returns one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The connection URL or the `PG*` variables do not describe a usable server.
    #[error("invalid PostgreSQL configuration: {0}")]
    Config(String),
    /// No connection could be had from the pool (the server is unreachable, refused the login,
    /// or every connection stayed busy past the wait). Retryable.
    #[error("no PostgreSQL connection while {operation}: {detail}")]
    Unavailable {
        /// What the ledger was doing.
        operation: &'static str,
        /// The pool's or the connector's reason (never the password).
        detail: String,
    },
    /// The TLS handshake failed: the server's certificate does not chain to the roots or
    /// does not name the host, or the server does not speak TLS under `sslmode=require`.
    /// Not retryable: the same server fails the same way.
    #[error("TLS to the PostgreSQL server failed while {operation}: {detail}")]
    Tls {
        /// What the ledger was doing.
        operation: &'static str,
        /// The TLS library's reason.
        detail: String,
    },
    /// The connection broke during the operation; its transaction was not committed (or, for
    /// a lost `COMMIT` acknowledgement, its outcome is unknown). Retryable.
    #[error("the PostgreSQL connection was lost while {operation}: {source}")]
    ConnectionLost {
        /// What the ledger was doing.
        operation: &'static str,
        /// The client's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The server aborted the transaction to keep transactions serializable or to break a
    /// deadlock (SQLSTATE 40001, 40P01). Retryable.
    #[error("PostgreSQL aborted the transaction while {operation} (retry it): {source}")]
    SerializationFailure {
        /// What the ledger was doing.
        operation: &'static str,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The server's disk is full (SQLSTATE 53100); nothing of the transaction was written.
    #[error("the PostgreSQL server's disk is full while {operation}: {source}")]
    DiskFull {
        /// What the ledger was doing.
        operation: &'static str,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The statement ran past `statement_timeout` or was cancelled (SQLSTATE 57014).
    #[error("a PostgreSQL statement timed out while {operation}: {source}")]
    StatementTimeout {
        /// What the ledger was doing.
        operation: &'static str,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// An append-only trigger refused an UPDATE, DELETE or TRUNCATE of a ledger row
    /// (SQLSTATE `CFA01`).
    #[error("the ledger is append-only: {source}")]
    AppendOnly {
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The role lacks a privilege the operation needs (SQLSTATE 42501).
    #[error("the PostgreSQL role may not do this while {operation}: {source}")]
    PermissionDenied {
        /// What the ledger was doing.
        operation: &'static str,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// Any other refusal of the server or the client.
    #[error("PostgreSQL error while {operation}: {source}")]
    Query {
        /// What the ledger was doing.
        operation: &'static str,
        /// The client's error.
        #[source]
        source: tokio_postgres::Error,
    },
}

impl PgError {
    /// Stable machine-readable reason code (the class of failure, shared with other backends
    /// where one exists: `storage_disk_full` is the same failure on any server).
    pub fn code(&self) -> &'static str {
        match self {
            PgError::Config(_) => "storage_config_invalid",
            PgError::Unavailable { .. } => "storage_unavailable",
            PgError::Tls { .. } => "storage_tls_failed",
            PgError::ConnectionLost { .. } => "storage_connection_lost",
            PgError::SerializationFailure { .. } => "storage_serialization_failure",
            PgError::DiskFull { .. } => "storage_disk_full",
            PgError::StatementTimeout { .. } => "storage_statement_timeout",
            PgError::AppendOnly { .. } => "storage_append_only",
            PgError::PermissionDenied { .. } => "storage_permission_denied",
            PgError::Query { .. } => "storage_postgres",
        }
    }

    /// Whether the same call may succeed when repeated (a fresh connection, a new transaction).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            PgError::Unavailable { .. }
                | PgError::ConnectionLost { .. }
                | PgError::SerializationFailure { .. }
        )
    }

    /// The SQLSTATE the server reported, if it reported one.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            PgError::ConnectionLost { source, .. }
            | PgError::SerializationFailure { source, .. }
            | PgError::DiskFull { source, .. }
            | PgError::StatementTimeout { source, .. }
            | PgError::AppendOnly { source }
            | PgError::PermissionDenied { source, .. }
            | PgError::Query { source, .. } => source.code().map(SqlState::code),
            PgError::Config(_) | PgError::Unavailable { .. } | PgError::Tls { .. } => None,
        }
    }

    /// Classifies a client error by its SQLSTATE (or its lost connection).
    pub fn from_client(operation: &'static str, source: tokio_postgres::Error) -> Self {
        let Some(state) = source.code() else {
            if let Some(detail) = tls_failure(&source) {
                return PgError::Tls { operation, detail };
            }
            let io = std::error::Error::source(&source).is_some_and(|s| s.is::<std::io::Error>());
            return if source.is_closed() || io {
                PgError::ConnectionLost { operation, source }
            } else {
                PgError::Query { operation, source }
            };
        };
        match state.code() {
            "40001" | "40P01" => PgError::SerializationFailure { operation, source },
            "53100" => PgError::DiskFull { operation, source },
            "57014" => PgError::StatementTimeout { operation, source },
            "42501" => PgError::PermissionDenied { operation, source },
            APPEND_ONLY_SQLSTATE => PgError::AppendOnly { source },
            // Class 08 (connection exception) and 57P01-57P03 (the server shut down or is
            // starting): the transaction did not commit.
            code if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03") => {
                PgError::ConnectionLost { operation, source }
            }
            _ => PgError::Query { operation, source },
        }
    }

    /// `map_err` adapter: `.map_err(PgError::during("reading events"))`.
    pub(crate) fn during(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> Self {
        move |source| PgError::from_client(operation, source)
    }

    /// The constraint a unique violation (SQLSTATE 23505) names, if `source` is one.
    pub(crate) fn unique_violation(source: &tokio_postgres::Error) -> Option<&str> {
        let db = source.as_db_error()?;
        (db.code() == &SqlState::UNIQUE_VIOLATION).then(|| db.constraint().unwrap_or(""))
    }
}

/// The TLS library's reason, when `error` failed in the TLS handshake (rustls reports through
/// an `io::Error` wrapping its own).
pub(crate) fn tls_failure(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && let Some(tls) = io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(tls.to_string());
        }
        next = error.source();
    }
    None
}
