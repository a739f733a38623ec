//! Where the PostgreSQL ledger connects: a `postgres://` URL, completed by the standard `PG*`
//! variables for whatever the URL leaves out (as libpq does). The password is never printed:
//! [`PgLedgerConfig`]'s `Debug` and `Display` show every other setting and `***` for it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::PgError;

/// How many connections the pool opens at most, unless set.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// The connection settings of a PostgreSQL ledger.
#[derive(Clone)]
pub struct PgLedgerConfig {
    pg: tokio_postgres::Config,
    pool_size: usize,
    wait: Duration,
    /// The PEM file of the roots the server's certificate must chain to (`PGSSLROOTCERT`);
    /// `None`: Mozilla's roots.
    root_certificates: Option<PathBuf>,
}

impl PgLedgerConfig {
    /// Whether `target` (a `--db` value) names a PostgreSQL server rather than a file.
    pub fn is_url(target: &str) -> bool {
        target.starts_with("postgres://") || target.starts_with("postgresql://")
    }

    /// Parses `url` (or a libpq `key=value` string) and fills what it leaves out from the
    /// process environment's `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`,
    /// `PGAPPNAME` and `PGCONNECT_TIMEOUT`; the user defaults to `$USER` as in libpq.
    pub fn from_url(url: &str) -> Result<Self, PgError> {
        Self::from_url_and(url, |name| std::env::var(name).ok())
    }

    /// Like [`PgLedgerConfig::from_url`], with the variables read from `env` (tests).
    pub fn from_url_and(url: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self, PgError> {
        // The parser's message may quote the input; never repeat it (it may hold a password).
        let mut pg: tokio_postgres::Config = super::tls::with_libpq_sslmode(url)
            .parse()
            .map_err(|_| PgError::Config("the PostgreSQL URL does not parse".into()))?;
        if !url.contains("sslmode")
            && let Some(mode) = env("PGSSLMODE")
        {
            pg.ssl_mode(super::tls::ssl_mode_of(&mode)?);
        }
        if pg.get_hosts().is_empty() {
            let hosts = env("PGHOST").unwrap_or_else(|| "localhost".into());
            for host in hosts.split(',').filter(|host| !host.is_empty()) {
                pg.host(host);
            }
        }
        if pg.get_ports().is_empty()
            && let Some(port) = env("PGPORT")
        {
            let port = port
                .parse()
                .map_err(|_| PgError::Config(format!("PGPORT `{port}` is not a port")))?;
            pg.port(port);
        }
        if pg.get_user().is_none()
            && let Some(user) = env("PGUSER").or_else(|| env("USER"))
        {
            pg.user(user);
        }
        if pg.get_password().is_none()
            && let Some(password) = env("PGPASSWORD")
        {
            pg.password(password);
        }
        if pg.get_dbname().is_none()
            && let Some(dbname) = env("PGDATABASE")
        {
            pg.dbname(dbname);
        }
        if pg.get_application_name().is_none() {
            pg.application_name(env("PGAPPNAME").as_deref().unwrap_or("contextfold"));
        }
        if pg.get_connect_timeout().is_none() {
            let seconds = env("PGCONNECT_TIMEOUT").and_then(|s| s.parse().ok()).unwrap_or(10);
            pg.connect_timeout(Duration::from_secs(seconds));
        }
        if pg.get_user().is_none() {
            return Err(PgError::Config("no user: set one in the URL or PGUSER".into()));
        }
        Ok(Self {
            pg,
            pool_size: DEFAULT_POOL_SIZE,
            wait: Duration::from_secs(30),
            root_certificates: env("PGSSLROOTCERT").map(PathBuf::from),
        })
    }

    /// The same server and credentials, another database.
    pub fn with_dbname(mut self, dbname: &str) -> Self {
        self.pg.dbname(dbname);
        self
    }

    /// The same server, another role, logging in with `password` (`None`: an empty one, for
    /// servers that trust the connection).
    pub fn with_user(mut self, user: &str, password: Option<&str>) -> Self {
        let mut pg = self.pg.clone();
        pg.user(user);
        match password {
            Some(password) => pg.password(password),
            None => pg.password(Vec::<u8>::new()),
        };
        self.pg = pg;
        self
    }

    /// The name the server shows for the ledger's connections (`application_name`; default
    /// `contextfold`, or `PGAPPNAME`).
    pub fn with_application_name(mut self, name: &str) -> Self {
        self.pg.application_name(name);
        self
    }

    /// At most `size` pooled connections.
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// Every statement of the ledger's connections is cancelled after `timeout`
    /// (`statement_timeout`, SQLSTATE 57014: `storage_statement_timeout`).
    pub fn with_statement_timeout(mut self, timeout: Duration) -> Self {
        self.pg.options(format!("-c statement_timeout={}", timeout.as_millis()));
        self
    }

    /// How long a caller waits for a pooled connection before `storage_unavailable`.
    pub fn with_pool_wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// The server's certificate must chain to the certificates of this PEM file (instead of
    /// Mozilla's roots; `PGSSLROOTCERT` sets the same).
    pub fn with_root_certificates(mut self, pem_file: impl Into<PathBuf>) -> Self {
        self.root_certificates = Some(pem_file.into());
        self
    }

    /// The PEM file of the roots, if not Mozilla's.
    pub fn root_certificates(&self) -> Option<&Path> {
        self.root_certificates.as_deref()
    }

    /// The client settings.
    pub(crate) fn pg(&self) -> &tokio_postgres::Config {
        &self.pg
    }

    /// The pool's size.
    pub fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// How long a caller waits for a pooled connection.
    pub fn pool_wait(&self) -> Duration {
        self.wait
    }

    /// The user the ledger logs in as.
    pub fn user(&self) -> Option<&str> {
        self.pg.get_user()
    }

    /// The database name (`None`: the server's default, the user's name).
    pub fn dbname(&self) -> Option<&str> {
        self.pg.get_dbname()
    }
}

impl fmt::Display for PgLedgerConfig {
    /// `postgres://user:***@host:port/db`: the password is never shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "postgres://{}", self.pg.get_user().unwrap_or(""))?;
        if self.pg.get_password().is_some() {
            f.write_str(":***")?;
        }
        f.write_str("@")?;
        let hosts: Vec<String> = self
            .pg
            .get_hosts()
            .iter()
            .map(|host| match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        f.write_str(&hosts.join(","))?;
        if let Some(port) = self.pg.get_ports().first() {
            write!(f, ":{port}")?;
        }
        write!(f, "/{}", self.pg.get_dbname().unwrap_or(""))
    }
}

impl fmt::Debug for PgLedgerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgLedgerConfig")
            .field("server", &format_args!("{self}"))
            .field("pool_size", &self.pool_size)
            .field("pool_wait", &self.wait)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_never_printed() -> Result<(), PgError> {
        let env = |name: &str| (name == "PGPASSWORD").then(|| "env-secret".to_owned());
        let from_url =
            PgLedgerConfig::from_url_and("postgres://ann:url-secret@db:5433/ledger", env)?;
        let from_env = PgLedgerConfig::from_url_and("postgres://ann@db/ledger", env)?;
        for config in [&from_url, &from_env] {
            let shown = format!("{config} {config:?} {config:#?}");
            assert!(!shown.contains("secret"), "{shown}");
            assert!(shown.contains("postgres://ann:***@db"), "{shown}");
        }
        assert_eq!(from_env.pg().get_password(), Some(&b"env-secret"[..]));
        assert_eq!(from_url.pg().get_password(), Some(&b"url-secret"[..]), "the URL wins");
        Ok(())
    }

    #[test]
    fn a_url_that_does_not_parse_is_not_repeated() {
        let error = PgLedgerConfig::from_url_and("postgres://ann:hunter2@db:notaport/x", |_| None)
            .expect_err("bad port");
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert_eq!(error.code(), "storage_config_invalid");
    }
}
