//! Subcommands that are not the relay itself: thin CLI glue over the library crates.

pub mod evidence;
pub mod sanitize;
