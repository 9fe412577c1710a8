//! The `cdp-relay` binary: everything lives in the library; see `cdp_relay::cli`.

fn main() -> std::process::ExitCode {
    cdp_relay::cli::main()
}
