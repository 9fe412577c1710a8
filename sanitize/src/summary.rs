//! Redaction counters and the summary the report shows ("12 cookies, 3 JWTs, 2 × ${PASSWORD}").

use crate::rules::Rule;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-rule counters, shared by every task using one `Sanitizer` (relaxed atomics: the counts
/// are statistics, not synchronization).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    rules: [AtomicU64; Rule::ALL.len()],
    truncated: AtomicU64,
}

impl Counters {
    pub(crate) fn count(&self, rule: Rule) {
        if let Some(c) = self.rules.get(rule.index()) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn count_truncation(&self) {
        self.truncated.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot<'a>(
        &self,
        secrets: impl Iterator<Item = (&'a str, u64)>,
    ) -> RedactionSummary {
        let rules: BTreeMap<String, u64> = Rule::ALL
            .iter()
            .zip(&self.rules)
            .map(|(r, c)| (r.name().to_owned(), c.load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect();
        let secrets: BTreeMap<String, u64> = secrets
            .filter(|&(_, n)| n > 0)
            .map(|(name, n)| (name.to_owned(), n))
            .collect();
        RedactionSummary {
            total: rules.values().sum::<u64>() + secrets.values().sum::<u64>(),
            rules,
            secrets,
            truncated: self.truncated.load(Ordering::Relaxed),
        }
    }
}

/// How much was redacted during a run: counts by rule name (`jwt`, `cookie`, `cdp-id`, …), by
/// explicit secret name (`PASSWORD` — names only, never literals), and texts cut by a length
/// cap. Rules and names that never fired are omitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedactionSummary {
    /// All replacements: rule redactions, handles and explicit-secret placeholders.
    pub total: u64,
    /// Redactions per rule name.
    pub rules: BTreeMap<String, u64>,
    /// Placeholders emitted per explicit secret name.
    pub secrets: BTreeMap<String, u64>,
    /// Texts cut at their length cap.
    pub truncated: u64,
}
