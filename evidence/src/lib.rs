//! cdp-evidence: the on-disk run format (issue 4 fills this crate).
