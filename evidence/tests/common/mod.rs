//! Shared fixtures for the integration tests.
#![allow(dead_code)]

use cdp_evidence::{Action, EvidenceConfig, JournalRead, Record, RecordKind, Store};
use cdp_sanitize::SafeText;
use std::path::{Path, PathBuf};

pub fn store_at(root: &Path) -> Store {
    Store::open(EvidenceConfig::at(root)).unwrap()
}

/// An action record whose `bytes` field carries a number the test can check.
pub fn action(method: &'static str, n: u64) -> Record {
    let mut a = Action::new(SafeText::literal(method));
    a.bytes = Some(n);
    Record::new(SafeText::literal("test"), RecordKind::Action(a))
}

/// Marker words of a journal, in order.
pub fn markers(j: &JournalRead) -> Vec<String> {
    j.records
        .iter()
        .filter_map(|r| r.marker())
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// Every file and directory below `root` (not following symlinks).
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}
