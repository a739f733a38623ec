//! The `contextfold` command line (in progress).

pub mod formats;

/// Entry point of the `contextfold` binary.
pub fn main() -> std::process::ExitCode {
    eprintln!("contextfold: the CLI is being built");
    std::process::ExitCode::FAILURE
}
