//! The `contextfold` command line.

fn main() -> std::process::ExitCode {
    contextfold_host::cli::main()
}
