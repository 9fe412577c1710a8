//! `manifest.json`: the run's single-owner summary, written whole (atomically) at create and at
//! finalize, never in between.
//!
//! Writing uses [`ManifestOut`], which always carries every evidence field. Reading uses
//! [`Manifest`], which accepts any JSON object: a field that is missing or of the wrong type is
//! simply absent, so legacy manifests (written before `evidenceVersion` existed, or by other
//! tools) still list and render. Parsing never echoes file content in errors.

use crate::error::Error;
use crate::ids::validate_id;
use crate::paths::{read_small, write_atomic, JOURNAL_FILE};
use crate::vocab::RunStatus;
use cdp_sanitize::Word;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The format version this crate writes.
pub const EVIDENCE_VERSION: u64 = 1;

/// A manifest is never larger than this; anything bigger is refused unread.
pub(crate) const MANIFEST_LIMIT: u64 = 1 << 20;

/// Who created or finalized a run.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProducerOut {
    pub(crate) source: String,
    pub(crate) pid: u32,
}

/// Totals recorded at finalize.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestTotals {
    /// Complete records in the journal, the finalize marker included.
    pub records: u64,
    /// Bytes of stored artifacts.
    pub artifact_bytes: u64,
    /// Number of stored artifacts.
    pub artifacts: u64,
    /// Evidence the finalizing producer dropped (e.g. a full queue), as it reported.
    pub dropped_evidence: u64,
    /// What the finalizing producer's sanitizer redacted, when it reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redactions: Option<Redactions>,
}

/// Redaction counts (the shape of `cdp_sanitize::RedactionSummary`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Redactions {
    /// All replacements.
    pub total: u64,
    /// Per rule name (`jwt`, `cookie`, ...).
    pub rules: BTreeMap<String, u64>,
    /// Per explicit secret name (names only).
    pub secrets: BTreeMap<String, u64>,
    /// Texts cut at a length cap.
    pub truncated: u64,
}

impl From<&cdp_sanitize::RedactionSummary> for Redactions {
    fn from(s: &cdp_sanitize::RedactionSummary) -> Self {
        Redactions {
            total: s.total,
            rules: s.rules.clone(),
            secrets: s.secrets.clone(),
            truncated: s.truncated,
        }
    }
}

fn counts(v: Option<&Value>) -> BTreeMap<String, u64> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Budget outcome recorded at finalize.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// True once an artifact was refused for the budget (the journal then holds exactly one
    /// `evidenceTruncated` marker).
    pub artifacts_truncated: bool,
    /// The run's artifact budget.
    pub artifact_budget_bytes: u64,
    /// Artifacts refused past the budget.
    pub refused_artifacts: u64,
    /// True once a record was refused for the journal budget (the journal then holds exactly
    /// one `journalTruncated` marker).
    #[serde(default)]
    pub journal_truncated: bool,
    /// The run's journal budget (0 when the run has none: a run written before it existed).
    #[serde(default)]
    pub journal_budget_bytes: u64,
    /// Records refused past the journal budget, by kind (`action`, `network`, `console`,
    /// `other` for producer-defined kinds).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub refused_records: BTreeMap<String, u64>,
}

impl Truncation {
    /// True when anything was cut for a budget: artifacts or journal records.
    pub fn any(&self) -> bool {
        self.artifacts_truncated || self.journal_truncated
    }
}

/// What this crate writes. Every field is present; `None` fields are omitted.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManifestOut {
    pub(crate) evidence_version: u64,
    pub(crate) run_id: String,
    pub(crate) session_id: String,
    pub(crate) action_log: &'static str,
    pub(crate) status: RunStatus,
    pub(crate) started_at: String,
    pub(crate) created_by: ProducerOut,
    pub(crate) artifact_budget_bytes: u64,
    pub(crate) journal_budget_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) finalized_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) finalized_by: Option<ProducerOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) totals: Option<ManifestTotals>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) truncation: Option<Truncation>,
}

impl ManifestOut {
    pub(crate) fn new(
        run_id: &str,
        session_id: &str,
        started_at: String,
        created_by: ProducerOut,
        artifact_budget_bytes: u64,
        journal_budget_bytes: u64,
    ) -> ManifestOut {
        ManifestOut {
            evidence_version: EVIDENCE_VERSION,
            run_id: run_id.to_owned(),
            session_id: session_id.to_owned(),
            action_log: JOURNAL_FILE,
            status: RunStatus::Running,
            started_at,
            created_by,
            artifact_budget_bytes,
            journal_budget_bytes,
            finalized_at: None,
            finalized_by: None,
            totals: None,
            truncation: None,
        }
    }

    /// Writes the manifest atomically.
    pub(crate) fn write(&self, path: &Path) -> Result<(), Error> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(Error::Serialize)?;
        bytes.push(b'\n');
        write_atomic(path, &bytes)
    }
}

/// A manifest as read back: any JSON object, every field optional (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    /// `evidenceVersion`; absent in legacy manifests.
    pub evidence_version: Option<u64>,
    /// `runId`.
    pub run_id: Option<String>,
    /// `sessionId`.
    pub session_id: Option<String>,
    /// `actionLog`: the journal's file name.
    pub action_log: Option<String>,
    /// `status` as written (`running`, `finalized`, or whatever a legacy writer used).
    pub status: Option<String>,
    /// `startedAt` (RFC 3339).
    pub started_at: Option<String>,
    /// `finalizedAt` (RFC 3339).
    pub finalized_at: Option<String>,
    /// `artifactBudgetBytes`.
    pub artifact_budget_bytes: Option<u64>,
    /// `journalBudgetBytes`: the journal's cap; absent in runs created before it existed.
    pub journal_budget_bytes: Option<u64>,
    /// `totals`, present once finalized.
    pub totals: Option<ManifestTotals>,
    /// `truncation`, present once finalized.
    pub truncation: Option<Truncation>,
    /// The whole object, for fields this version does not know.
    pub raw: Map<String, Value>,
}

impl Manifest {
    /// Parses manifest bytes. Fails only when they are not a JSON object.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "not valid JSON ({:?} error at line {}, column {})",
                e.classify(),
                e.line(),
                e.column()
            )
        })?;
        let Value::Object(raw) = value else {
            return Err("not a JSON object".to_owned());
        };
        let s = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_owned);
        let n = |k: &str| raw.get(k).and_then(Value::as_u64);
        let totals = raw.get("totals").and_then(Value::as_object).map(|t| {
            let n = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
            ManifestTotals {
                records: n("records"),
                artifact_bytes: n("artifactBytes"),
                artifacts: n("artifacts"),
                dropped_evidence: n("droppedEvidence"),
                redactions: t
                    .get("redactions")
                    .and_then(Value::as_object)
                    .map(|r| Redactions {
                        total: r.get("total").and_then(Value::as_u64).unwrap_or(0),
                        rules: counts(r.get("rules")),
                        secrets: counts(r.get("secrets")),
                        truncated: r.get("truncated").and_then(Value::as_u64).unwrap_or(0),
                    }),
            }
        });
        let truncation = raw
            .get("truncation")
            .and_then(Value::as_object)
            .map(|t| Truncation {
                artifacts_truncated: t
                    .get("artifactsTruncated")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                artifact_budget_bytes: t
                    .get("artifactBudgetBytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                refused_artifacts: t
                    .get("refusedArtifacts")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                journal_truncated: t
                    .get("journalTruncated")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                journal_budget_bytes: t
                    .get("journalBudgetBytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                refused_records: counts(t.get("refusedRecords")),
            });
        Ok(Manifest {
            evidence_version: n("evidenceVersion"),
            run_id: s("runId"),
            session_id: s("sessionId"),
            action_log: s("actionLog"),
            status: s("status"),
            started_at: s("startedAt"),
            finalized_at: s("finalizedAt"),
            artifact_budget_bytes: n("artifactBudgetBytes"),
            journal_budget_bytes: n("journalBudgetBytes"),
            totals,
            truncation,
            raw,
        })
    }

    /// Reads `path`; `Ok(None)` when it does not exist.
    pub(crate) fn read(path: &Path) -> Result<Option<Manifest>, Error> {
        let Some(bytes) = read_small(path, MANIFEST_LIMIT)? else {
            return Ok(None);
        };
        Manifest::parse(&bytes)
            .map(Some)
            .map_err(|reason| Error::Manifest {
                path: path.to_path_buf(),
                reason,
            })
    }

    /// True for a manifest without `evidenceVersion` (written before this format, or by another
    /// tool). Retention never touches legacy runs.
    pub fn is_legacy(&self) -> bool {
        self.evidence_version.is_none()
    }

    /// `status` as a word: a [`RunStatus`], or another writer's (a legacy or newer one) as
    /// written.
    pub fn status_word(&self) -> Option<Word<RunStatus, &str>> {
        self.status.as_deref().map(Word::from_text)
    }

    /// The status, when it is one this format defines and the manifest is not legacy.
    pub fn run_status(&self) -> Option<RunStatus> {
        if self.is_legacy() {
            return None;
        }
        self.status_word()?.known()
    }

    /// The journal's file name inside the run directory: `actionLog` when it is a safe plain
    /// name, else the default `actions.jsonl`. Never a path.
    pub fn journal_file(&self) -> &str {
        match self.action_log.as_deref() {
            Some(name) if validate_id("action log", name).is_ok() => name,
            _ => JOURNAL_FILE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_manifest_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        let mut out = ManifestOut::new(
            "r1",
            "s1",
            "2024-01-01T00:00:00.000Z".into(),
            ProducerOut {
                source: "relay".into(),
                pid: 7,
            },
            100,
            1000,
        );
        out.write(&path).unwrap();
        let m = Manifest::read(&path).unwrap().unwrap();
        assert_eq!(m.evidence_version, Some(1));
        assert_eq!(m.run_status(), Some(RunStatus::Running));
        assert_eq!(m.journal_file(), "actions.jsonl");
        assert_eq!(m.journal_budget_bytes, Some(1000));
        assert!(m.totals.is_none());

        out.status = RunStatus::Finalized;
        out.finalized_at = Some("2024-01-01T00:00:01.000Z".into());
        out.totals = Some(ManifestTotals {
            records: 3,
            redactions: Some(Redactions {
                total: 2,
                rules: [("jwt".to_owned(), 2)].into(),
                ..Redactions::default()
            }),
            ..ManifestTotals::default()
        });
        out.truncation = Some(Truncation {
            artifacts_truncated: true,
            artifact_budget_bytes: 100,
            refused_artifacts: 4,
            journal_truncated: true,
            journal_budget_bytes: 1000,
            refused_records: [("console".to_owned(), 7)].into(),
        });
        out.write(&path).unwrap();
        let m = Manifest::read(&path).unwrap().unwrap();
        assert_eq!(m.run_status(), Some(RunStatus::Finalized));
        assert_eq!(m.totals.as_ref().unwrap().records, 3);
        assert_eq!(
            m.totals.as_ref().unwrap().redactions,
            out.totals.unwrap().redactions
        );
        assert_eq!(m.truncation, out.truncation);
    }

    #[test]
    fn legacy_and_odd_manifests_are_accepted() {
        let m = Manifest::parse(br#"{"runId":"old","status":"finalized","startedAt":5}"#).unwrap();
        assert!(m.is_legacy());
        assert_eq!(m.run_status(), None);
        assert_eq!(m.run_id.as_deref(), Some("old"));
        assert_eq!(m.started_at, None, "wrong type reads as absent");
        let m =
            Manifest::parse(br#"{"evidenceVersion":1,"actionLog":"../../etc/passwd"}"#).unwrap();
        assert_eq!(m.journal_file(), "actions.jsonl", "never a path");
        let m = Manifest::parse(br#"{"evidenceVersion":1,"actionLog":"log.jsonl"}"#).unwrap();
        assert_eq!(m.journal_file(), "log.jsonl");
    }

    #[test]
    fn every_run_status_reads_back_as_written_and_another_word_is_kept() {
        for &status in RunStatus::ALL {
            let json = serde_json::json!({"evidenceVersion": 1, "status": status});
            assert_eq!(json["status"], status.as_str());
            let m = Manifest::parse(json.to_string().as_bytes()).unwrap();
            assert_eq!(m.status_word(), Some(Word::Known(status)));
            assert_eq!(m.run_status(), Some(status));
        }
        // A newer writer's word: read, kept as written, and neither running nor finalized.
        let m = Manifest::parse(br#"{"evidenceVersion":1,"status":"archived"}"#).unwrap();
        assert_eq!(m.status_word(), Some(Word::Other("archived")));
        assert_eq!(m.run_status(), None);
        assert!(!crate::store::is_finished(&m));
        // A legacy producer's word for a finished run counts only in a legacy manifest.
        let legacy = Manifest::parse(br#"{"status":"completed"}"#).unwrap();
        assert!(crate::store::is_finished(&legacy));
        let current = Manifest::parse(br#"{"evidenceVersion":1,"status":"completed"}"#).unwrap();
        assert!(!crate::store::is_finished(&current));
        let m = Manifest::parse(br#"{"evidenceVersion":1}"#).unwrap();
        assert_eq!(m.status_word(), None);
    }

    #[test]
    fn non_objects_are_errors_without_content() {
        for bad in [&b"[1]"[..], b"\"secret-token\"", b"{", b"", b"\xff"] {
            let err = Manifest::parse(bad).unwrap_err();
            assert!(!err.contains("secret"), "{err}");
        }
    }
}
