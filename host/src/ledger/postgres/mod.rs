//! The PostgreSQL ledger: the same tables, stored bytes and guarantees as the SQLite store
//! (`docs/storage.md`, "PostgreSQL"), shared by many writers on many machines.
//!
//! - **Client**: `tokio-postgres` behind a `deadpool-postgres` pool; every call takes a pooled
//!   connection for one transaction. TLS through rustls, the server's certificate always
//!   verified (`tls.rs`).
//! - **One writer per session at a time**: every write transaction of a session first takes
//!   `pg_advisory_xact_lock` on the session's key ([`PgLedger::lock_session`]), then checks
//!   and inserts. This is SQLite's `BEGIN IMMEDIATE` narrowed to one session: the `seq` check
//!   (greater than the ledger's last) and the insert are atomic, so commit order equals `seq`
//!   order and a reader that tails `seq > last` never misses a row committed later below it;
//!   the checkpoint compare-and-swap reads the tip and writes its successor under the same
//!   lock. The primary key `(session_id, seq)` stays as the last line of defence. A
//!   `UNIQUE` with retry alone would keep `seq` unique, but under READ COMMITTED a writer
//!   could commit seq 9 while seq 5 was still in flight, and two checkpoint writers would both
//!   see the old tip. The lock is released at commit or rollback, also when a connection dies.
//! - **Errors**: [`PgError`], wrapped as [`StoreError::Postgres`].

mod archive;
mod checkpoints;
mod config;
mod covered;
mod error;
mod events;
mod schema;
mod tls;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};

pub use config::{DEFAULT_POOL_SIZE, PgLedgerConfig};
pub use error::{APPEND_ONLY_SQLSTATE, PgError};
pub use schema::{PG_SCHEMA_VERSION, writer_grants_sql};

use crate::storage::StoreError;

/// A PostgreSQL database holding any number of sessions.
#[derive(Clone)]
pub struct PgLedger {
    pool: Pool,
    config: PgLedgerConfig,
}

impl std::fmt::Debug for PgLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLedger").field("config", &self.config).finish_non_exhaustive()
    }
}

impl PgLedger {
    /// Connects (one connection is opened at once, so a wrong address or login fails here)
    /// and migrates the database to [`PG_SCHEMA_VERSION`]; a newer schema is refused with
    /// `schema_too_new` before anything is changed.
    pub async fn connect(config: &PgLedgerConfig) -> Result<Self, StoreError> {
        let manager = Manager::from_config(
            tls::effective(config.pg()),
            tls::connector(config.root_certificates())?,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(config.pool_size())
            .wait_timeout(Some(config.pool_wait()))
            .create_timeout(config.pg().get_connect_timeout().copied())
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| PgError::Config(format!("building the connection pool: {e}")))?;
        let ledger = Self { pool, config: config.clone() };
        let mut client = ledger.client("opening the ledger").await?;
        schema::migrate(&mut client).await?;
        Ok(ledger)
    }

    /// The settings it connected with (printable: the password is redacted).
    pub fn config(&self) -> &PgLedgerConfig {
        &self.config
    }

    /// The schema version recorded in the database.
    pub async fn schema_version(&self) -> Result<u32, StoreError> {
        let client = self.client("reading the schema version").await?;
        Ok(schema::schema_version(&**client).await?)
    }

    /// Grants `role` what a writer needs and nothing more ([`writer_grants_sql`]: SELECT and
    /// INSERT on the ledgers and the archive; UPDATE and DELETE only on the projection cache).
    /// Run it as the owner of the tables.
    pub async fn grant_writer(&self, role: &str) -> Result<(), StoreError> {
        let client = self.client("granting a writer role").await?;
        client
            .batch_execute(&writer_grants_sql(role))
            .await
            .map_err(PgError::during("granting a writer role"))?;
        Ok(())
    }

    /// A pooled connection.
    pub(crate) async fn client(&self, operation: &'static str) -> Result<Object, PgError> {
        self.pool.get().await.map_err(|error| match error {
            deadpool_postgres::PoolError::Backend(source) => {
                PgError::from_client(operation, source)
            }
            other => PgError::Unavailable { operation, detail: other.to_string() },
        })
    }

    /// Takes the session's write lock for the rest of `tx` (module docs).
    pub(crate) async fn lock_session(
        tx: &tokio_postgres::Transaction<'_>,
        session_id: &str,
    ) -> Result<(), PgError> {
        tx.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[&session_id])
            .await
            .map_err(PgError::during("taking the session's write lock"))?;
        Ok(())
    }
}
