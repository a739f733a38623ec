//! SQLite storage: the canonical RuntimeEvent ledger, the AgentRun ledger (holding
//! `history_compact_checkpoint_recorded` events), the bounded checkpoint projection, and the
//! content-addressed tool-result archive. Schema and guarantees: `docs/storage.md`.
//!
//! [`Store`] is synchronous: it owns one [`rusqlite::Connection`] behind a mutex. Async code
//! calls it from `tokio::task::spawn_blocking` (the session runtime does), never directly from a
//! runtime worker thread.

mod archive;
mod attachments;
mod checkpoints;
mod circuit;
mod covered;
mod derived;
mod error;
mod events;
pub(crate) mod retraction;
mod rows;
mod scan;
mod schema;
mod stream;
mod sweep;
pub(crate) mod usage;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use attachments::INLINE_ATTACHMENT_MAX_BYTES;
pub(crate) use checkpoints::checkpoint_of_row;
pub use checkpoints::{CheckpointLookup, LookupNote, LookupSource};
pub use circuit::CIRCUIT_KEY;
pub use covered::CoveredLog;
pub(crate) use covered::{CoveredPrefix, CoveredReader, RowView};
pub(crate) use derived::TOKENS_ESTIMATOR_KEY;
pub use error::{ArchiveReadError, CheckpointAppendError, StoreError};
pub use events::{AgentRunRecord, agent_run_kind};
pub use retraction::CheckpointRecords;
pub(crate) use scan::{ROW_COLUMNS, RowVisitor};
pub use schema::SCHEMA_VERSION;
pub(crate) use stream::project_covered;
pub use stream::{StreamRequest, StreamedProjection};
pub use sweep::{CheckpointSweep, RowCheck};
pub(crate) use sweep::{CheckpointSweeper, RowChecker};

/// The page size of a file this build creates, in bytes.
pub const PAGE_SIZE: u32 = 16_384;

/// How long a writer waits for another process's write lock before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One SQLite file holding any number of sessions.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl Store {
    /// Opens `path`, creating the file if needed, and migrates it to [`SCHEMA_VERSION`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path.as_ref(), OpenFlags::default())
    }

    /// Opens an existing file (never creates one) and migrates it.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(StoreError::DatabaseNotFound { path: path.to_owned() });
        }
        let flags = OpenFlags::default() - OpenFlags::SQLITE_OPEN_CREATE;
        Self::open_with(path, flags)
    }

    fn open_with(path: &Path, flags: OpenFlags) -> Result<Self, StoreError> {
        let mut conn = Connection::open_with_flags(path, flags)
            .map_err(StoreError::sqlite("opening the database"))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(StoreError::sqlite("setting the busy timeout"))?;
        // Refuse a newer schema before changing anything about the file.
        let found = schema::user_version(&conn)?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew { found, supported: SCHEMA_VERSION });
        }
        // A new file gets 16 KiB pages (SQLite's default is 4 KiB): a ledger row of a few KB
        // then rarely spills to overflow pages, and streaming the ledger reads a quarter as
        // many pages. Only an empty file can change it (it must precede WAL); others keep theirs.
        if found == 0 {
            conn.pragma_update(None, "page_size", PAGE_SIZE)
                .map_err(StoreError::sqlite("setting the page size"))?;
        }
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(StoreError::sqlite("enabling WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Sqlite {
                operation: "enabling WAL",
                source: rusqlite::Error::InvalidParameterName(format!("journal_mode is {mode}")),
            });
        }
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(StoreError::sqlite("setting synchronous=FULL"))?;
        schema::migrate(&mut conn)?;
        Ok(Self { path: path.to_owned(), conn: Mutex::new(conn) })
    }

    /// The file this store writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Caps the database at `pages` pages (SQLite's `max_page_count` on this connection; a cap
    /// below the current size holds it at its current size): a write that would grow the file
    /// past it fails with `SQLITE_FULL`, exactly as on a full disk, and its transaction writes
    /// nothing. A storage quota for hosts, and how the fault suite fills the disk without a
    /// size-limited filesystem. Returns the cap in force.
    pub fn set_max_pages(&self, pages: u64) -> Result<u64, StoreError> {
        self.lock()
            .pragma_update_and_check(None, "max_page_count", pages as i64, |row| {
                row.get::<_, i64>(0)
            })
            .map(|cap| cap as u64)
            .map_err(StoreError::sqlite("setting max_page_count"))
    }

    /// The current size of the database in pages.
    pub fn page_count(&self) -> Result<u64, StoreError> {
        self.lock()
            .query_row("PRAGMA page_count", [], |row| row.get::<_, i64>(0))
            .map(|pages| pages as u64)
            .map_err(StoreError::sqlite("reading page_count"))
    }

    /// The schema version of the file (after migration, [`SCHEMA_VERSION`]).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        schema::user_version(&self.lock())
    }

    /// The connection. A panic while holding it leaves no open transaction (rusqlite rolls
    /// back on drop), so a poisoned lock is still safe to use.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
