//! The `cdp-relay` binary as a user runs it: flags, exit codes, files. One test binary.

mod evidence;
mod export;
mod mcp;
mod sanitize;
