//! `--db` and `--session`: where a command reads and writes, and how the ledger behind them is
//! opened. `--db` is a SQLite file or a PostgreSQL URL (`postgres://` or `postgresql://`);
//! PostgreSQL credentials come from the URL or the standard `PG*` variables
//! ([`PgLedgerConfig::from_url`]) and are never printed.

use std::path::PathBuf;
use std::sync::Arc;

use super::CliError;
use crate::ledger::postgres::{PgLedger, PgLedgerConfig};
use crate::ledger::{SharedLedger, SqliteLedger};
use crate::storage::{Store, StoreError};

/// Where a command reads and writes.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// The SQLite file, or a PostgreSQL URL (`postgres://user@host:port/db`; the password from
    /// the URL or PGPASSWORD, never printed).
    #[arg(long, value_parser = parse_db)]
    pub db: Db,
    /// The session id.
    #[arg(long)]
    pub session: String,
}

/// A `--db` value.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Db {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database (its `Display` and `Debug` hide the password).
    Postgres(Box<PgLedgerConfig>),
}

/// Parses `--db`: a PostgreSQL URL when it has that scheme, else a file path.
pub(crate) fn parse_db(value: &str) -> Result<Db, String> {
    if PgLedgerConfig::is_url(value) {
        let config = PgLedgerConfig::from_url(value).map_err(|error| error.to_string())?;
        return Ok(Db::Postgres(Box::new(config)));
    }
    Ok(Db::File(PathBuf::from(value)))
}

impl Db {
    /// The ledger of an existing database: a file that does not exist is the store's
    /// `database_not_found`; a server gets its schema checked as any open does.
    pub(crate) async fn open_existing(&self) -> Result<SharedLedger, CliError> {
        Ok(match self {
            Db::File(path) => {
                let path = path.clone();
                let store = tokio::task::spawn_blocking(move || Store::open_existing(path))
                    .await
                    .map_err(|_| StoreError::Cancelled)??;
                Arc::new(SqliteLedger::new(Arc::new(store)))
            }
            Db::Postgres(config) => Arc::new(PgLedger::connect(config).await?),
        })
    }
}

impl Target {
    /// The ledger, created if it does not exist yet (a new file; the schema on a server).
    pub(crate) async fn open_or_create(&self) -> Result<SharedLedger, CliError> {
        match &self.db {
            Db::File(path) => Ok(Arc::new(SqliteLedger::open(path).await?)),
            Db::Postgres(config) => Ok(Arc::new(PgLedger::connect(config).await?)),
        }
    }

    /// The ledger of an existing session: a file that does not exist, or a session without
    /// events, is [`StoreError::UnknownSession`] or the store's own error.
    pub(crate) async fn open_session(&self) -> Result<SharedLedger, CliError> {
        let ledger = self.db.open_existing().await?;
        if ledger.last_seq(&self.session).await?.is_none() {
            return Err(StoreError::UnknownSession { session_id: self.session.clone() }.into());
        }
        Ok(ledger)
    }
}
