//! The `contextfold` binary end to end: commands, `--json` shapes, attachments, and the
//! provider-backed commands against loopback servers. One test binary per area (issue 38):
//! each module is a former `host/tests/<name>.rs`.

#[path = "../cli_support/mod.rs"]
mod cli_support;
#[path = "../providers/mod.rs"]
mod providers;

mod cli;
mod cli_agent_files;
mod cli_attachments;
mod cli_inspector;
mod cli_postgres;
mod cli_providers;
mod cli_retract;
