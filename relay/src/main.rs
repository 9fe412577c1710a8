//! The `cdp-relay` binary: parse flags, build a validated configuration, call the library, map
//! the outcome to an exit code. Everything the relay does lives in the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
