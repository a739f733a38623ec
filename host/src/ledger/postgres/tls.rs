//! TLS to the server, as the tokio-postgres ecosystem does it: rustls (the ring provider, as
//! the provider clients' reqwest uses) through `tokio-postgres-rustls`, given to the pool's
//! manager.
//!
//! `sslmode` comes from the URL or `PGSSLMODE`. `require`, `verify-ca` and `verify-full` use TLS
//! and refuse a server without it, and the server's certificate is always verified against the
//! roots with its host name or address (libpq's `require` would accept any certificate: an
//! unverified channel carries the password to whoever answers). `disable`, `allow` and `prefer`
//! (the default) connect without TLS: libpq's `prefer` encrypts without verifying, which
//! guards against nothing that matters here, and verifying under it would refuse every server
//! with a self-signed certificate (Debian's default cluster). Use `sslmode=require` (the
//! managed services' instructions say so) for a server across a network. The roots are the
//! file `PGSSLROOTCERT` names (or
//! [`super::PgLedgerConfig::with_root_certificates`]), else Mozilla's (`webpki-roots`), which
//! the managed services' public certificates chain to; a private CA needs its file.

use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::PgError;

/// The connector for the pool: verifying against the certificates of `root_file` (PEM), or
/// Mozilla's roots when `None`.
pub(crate) fn connector(root_file: Option<&Path>) -> Result<MakeRustlsConnect, PgError> {
    let mut roots = RootCertStore::empty();
    match root_file {
        Some(path) => {
            let unreadable = |detail: String| {
                PgError::Config(format!("the root certificates `{}`: {detail}", path.display()))
            };
            let certificates = CertificateDer::pem_file_iter(path)
                .map_err(|e| unreadable(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| unreadable(e.to_string()))?;
            let (added, _ignored) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(unreadable("no usable certificate".into()));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| PgError::Config(format!("TLS settings: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// `pg` as it connects: TLS only when the mode requires it (module docs).
pub(crate) fn effective(pg: &tokio_postgres::Config) -> tokio_postgres::Config {
    use tokio_postgres::config::SslMode;
    let mut pg = pg.clone();
    if pg.get_ssl_mode() != SslMode::Require {
        pg.ssl_mode(SslMode::Disable);
    }
    pg
}

/// `url` with libpq's verifying `sslmode`s (`verify-ca`, `verify-full`) read as `require`
/// (this client always verifies), so the parser takes them.
pub(crate) fn with_libpq_sslmode(url: &str) -> String {
    url.replace("sslmode=verify-full", "sslmode=require")
        .replace("sslmode=verify-ca", "sslmode=require")
}

/// The `sslmode` of `PGSSLMODE`, for a URL that names none.
pub(crate) fn ssl_mode_of(value: &str) -> Result<tokio_postgres::config::SslMode, PgError> {
    use tokio_postgres::config::SslMode;
    match value {
        "disable" => Ok(SslMode::Disable),
        "allow" | "prefer" => Ok(SslMode::Prefer),
        "require" | "verify-ca" | "verify-full" => Ok(SslMode::Require),
        other => Err(PgError::Config(format!("PGSSLMODE `{other}` is not an sslmode"))),
    }
}
