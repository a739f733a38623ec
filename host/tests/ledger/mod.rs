//! The ledger trait's guarantees, on both backends: SQLite on a temp file always; PostgreSQL
//! when `CONTEXTFOLD_PG_URL` names a server (`bash scripts/with-postgres.sh cargo test -p
//! contextfold-host --test runtime ledger::`), each test in a database of its own. A module
//! of the `runtime` test binary (one binary per area: the host's storage is tested there). Without the variable
//! the PostgreSQL half of every test is skipped, and says so on stderr.

mod append_only;
mod checkpoint_cas;
mod churn;
mod churn_worker;
mod concurrency;
mod failover;
mod faults;
mod round_trip;
mod runtime_steps;
mod support;
mod tls;
