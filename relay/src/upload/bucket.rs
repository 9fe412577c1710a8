//! Reading runs back from the bucket: listing them from their manifests (`cdp-relay runs
//! --remote`) and fetching one whole (`cdp-relay report --remote`).
//!
//! The bucket is not trusted: every pod of a fleet can write to it. A run id must pass the id
//! rule, a file name must be `<name>` or `artifacts/<name>` with names passing the id rule, a
//! fetched run is written only below the output directory (never through a symlink found
//! there), its files must have the sizes its manifest lists, and what the report renderer
//! derives (`report.html`, `summary.md`) is never taken from the bucket: the caller renders
//! the fetched journal itself. A manifest that cannot be read is skipped and counted, not
//! allowed to hide the rest of the fleet.

use super::target::Target;
use crate::Error;
use cdp_evidence::{validate_id, Manifest, MANIFEST_FILE};
use futures_util::StreamExt;
use object_store::ObjectStoreExt;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What the report renderer derives from the journal: never taken from the bucket, where any
/// pod could have planted a page with a script in it.
const DERIVED: [&str; 2] = [cdp_report::HTML_FILE, cdp_report::SUMMARY_FILE];

/// Manifests fetched at once.
const MANIFESTS_IN_FLIGHT: usize = 16;
/// An uploaded manifest (with its file list) is never larger than this.
const MANIFEST_LIMIT: usize = 4 << 20;

/// One run in the bucket, from its uploaded manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteRun {
    /// The run id.
    pub id: String,
    /// Its session.
    pub session_id: Option<String>,
    /// `finalized` (only whole runs are listed), or another writer's word as written.
    pub status: Option<cdp_evidence::Word<cdp_evidence::RunStatus>>,
    /// When it started (RFC 3339).
    pub started_at: Option<String>,
    /// When it was finalized.
    pub finalized_at: Option<String>,
    /// Failures it recorded (as its report counts them).
    pub failures: Option<u64>,
    /// The host (pod) that uploaded it.
    pub host: Option<String>,
    /// Journal records.
    pub records: Option<u64>,
    /// Bytes in the bucket.
    pub size_bytes: Option<u64>,
    /// Whether artifacts were refused for the budget.
    pub truncated: bool,
    /// When its manifest reached the bucket.
    pub uploaded_at: Option<String>,
    /// `s3://bucket/prefix/<run>/`.
    pub url: String,
}

/// What a listing found.
#[derive(Clone, Debug, Default)]
pub struct RemoteListing {
    /// Whole runs, newest first.
    pub runs: Vec<RemoteRun>,
    /// Run prefixes without a manifest: an upload in progress, or one a killed process left
    /// (the next start of its relay completes it).
    pub incomplete: usize,
    /// Runs not looked at because of the limit.
    pub not_shown: usize,
    /// Runs whose manifest could not be read (refused, failing, too large): skipped, with
    /// the first reason.
    pub unreadable: usize,
    /// Why the first unreadable manifest could not be read (one line).
    pub unreadable_reason: Option<String>,
}

/// Lists up to `limit` runs, newest first (run ids start with their creation time), optionally
/// only `session`'s. Reads one manifest per run looked at.
pub async fn list_runs(
    target: &Target,
    limit: usize,
    session: Option<&str>,
) -> Result<RemoteListing, Error> {
    let root = target.root();
    let listing = target
        .store()
        .list_with_delimiter(root.as_ref())
        .await
        .map_err(|e| target.error(&e))?;
    let mut ids: Vec<String> = listing
        .common_prefixes
        .iter()
        .filter_map(|p| p.filename().map(str::to_owned))
        .filter(|id| validate_id("run id", id).is_ok())
        .collect();
    ids.sort_by(|a, b| b.cmp(a));
    let mut out = RemoteListing::default();
    // Every folder looked at counts against the limit (manifest-less and unreadable ones too),
    // so a bucket full of abandoned uploads costs `limit` requests, not one per folder. Only
    // another session's runs do not count: they are what `--session` filters out.
    let mut fetched = futures_util::stream::iter(
        ids.iter()
            .map(|id| async move { (id, fetch_manifest(target, id).await) }),
    )
    .buffered(MANIFESTS_IN_FLIGHT.min(limit.max(1)));
    let mut looked_at = 0usize;
    let mut counted = 0usize;
    while counted < limit {
        let Some((id, manifest)) = fetched.next().await else {
            break;
        };
        looked_at += 1;
        match manifest {
            Ok(None) => {
                out.incomplete += 1;
                counted += 1;
            }
            Ok(Some(m)) => {
                let run = describe(target, id, &m);
                if session.is_none_or(|s| run.session_id.as_deref() == Some(s)) {
                    out.runs.push(run);
                    counted += 1;
                }
            }
            Err(e) => {
                out.unreadable += 1;
                counted += 1;
                if out.unreadable_reason.is_none() {
                    out.unreadable_reason = Some(format!("{id}: {}", super::run::reason_of(&e)));
                }
            }
        }
    }
    out.not_shown = ids.len() - looked_at;
    out.runs
        .sort_by(|a, b| (b.started_at.as_deref(), &b.id).cmp(&(a.started_at.as_deref(), &a.id)));
    Ok(out)
}

/// Downloads run `run_id` into `<out_dir>/<run_id>/` (its files first, the manifest last, each
/// checked against the size the manifest lists) and returns that directory. A run without a
/// manifest in the bucket is not whole: refused.
pub async fn fetch_run(target: &Target, run_id: &str, out_dir: &Path) -> Result<PathBuf, Error> {
    validate_id("run id", run_id).map_err(|e| Error::Usage(e.to_string()))?;
    let about_run = |reason: &str| Error::Remote {
        target: target.run_url(run_id),
        reason: reason.to_owned(),
    };
    let Some(manifest) = fetch_manifest_bytes(target, run_id).await? else {
        return Err(about_run(
            "no such run in the bucket (or its upload is not complete: the manifest arrives \
             last); `cdp-relay runs --remote URL` lists the runs",
        ));
    };
    let parsed: serde_json::Value =
        serde_json::from_slice(&manifest).map_err(|_| about_run("its manifest is not JSON"))?;
    let files = listed_files(&parsed).ok_or_else(|| {
        about_run("its manifest lists no files (it was not uploaded by cdp-relay)")
    })?;
    let dir = out_dir.join(run_id);
    // A symlink planted at the run's place or its artifacts folder would carry the writes
    // elsewhere: refused (the files inside are replaced by rename, which never follows one).
    for place in [dir.clone(), dir.join(cdp_evidence::ARTIFACTS_DIR)] {
        if place.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
            return Err(Error::Usage(format!(
                "{} exists and is not a directory (a symlink?); remove it or pass another --out",
                place.display()
            )));
        }
    }
    let io = |what: &str, path: &Path, e: std::io::Error| Error::Io {
        context: if what == "create" {
            "cannot create"
        } else {
            "cannot write"
        },
        path: path.to_path_buf(),
        source: e,
    };
    std::fs::create_dir_all(dir.join(cdp_evidence::ARTIFACTS_DIR))
        .map_err(|e| io("create", &dir, e))?;
    for (rel, expected) in &files {
        if DERIVED.contains(&rel.as_str()) {
            continue;
        }
        let path = dir.join(rel);
        let got = target
            .store()
            .get(&target.object(run_id, rel))
            .await
            .map_err(|e| target.error(&e))?;
        let mut stream = got.into_stream();
        let tmp = tempfile::NamedTempFile::new_in(path.parent().unwrap_or(&dir))
            .map_err(|e| io("create", &path, e))?;
        let mut file = tmp.as_file();
        let mut written = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| target.error(&e))?;
            written += chunk.len() as u64;
            if written > *expected {
                break;
            }
            file.write_all(&chunk).map_err(|e| io("write", &path, e))?;
        }
        if written != *expected {
            return Err(about_run(&format!(
                "{rel} in the bucket is {written} bytes, its manifest says {expected}"
            )));
        }
        tmp.persist(&path)
            .map_err(|e| io("write", &path, e.error))?;
    }
    let manifest_path = dir.join(MANIFEST_FILE);
    let tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| io("create", &manifest_path, e))?;
    tmp.as_file()
        .write_all(&manifest)
        .map_err(|e| io("write", &manifest_path, e))?;
    // A rename replaces whatever is at the name (a planted symlink included) without following it.
    tmp.persist(&manifest_path)
        .map_err(|e| io("write", &manifest_path, e.error))?;
    Ok(dir)
}

/// The manifest of `run_id`, read through the evidence format's own type; `None` when there
/// is none (not whole yet).
async fn fetch_manifest(target: &Target, run_id: &str) -> Result<Option<Manifest>, Error> {
    let Some(bytes) = fetch_manifest_bytes(target, run_id).await? else {
        return Ok(None);
    };
    // A manifest that is not a JSON object is listed with what is known: its id.
    Ok(Some(Manifest::parse(&bytes).unwrap_or_default()))
}

async fn fetch_manifest_bytes(target: &Target, run_id: &str) -> Result<Option<Vec<u8>>, Error> {
    let path = target.object(run_id, MANIFEST_FILE);
    let got = match target.store().get(&path).await {
        Ok(g) => g,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(target.error(&e)),
    };
    if got.meta.size > MANIFEST_LIMIT as u64 {
        return Err(Error::Remote {
            target: target.run_url(run_id),
            reason: "its manifest is larger than any cdp-relay writes".into(),
        });
    }
    let bytes = got.bytes().await.map_err(|e| target.error(&e))?;
    Ok(Some(bytes.to_vec()))
}

/// One listed run: the evidence format's fields from its own type, the upload's from the
/// `upload` member the uploader adds (`run.rs`).
fn describe(target: &Target, id: &str, m: &Manifest) -> RemoteRun {
    let s = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let upload = m.raw.get("upload").unwrap_or(&serde_json::Value::Null);
    RemoteRun {
        id: id.to_owned(),
        session_id: m.session_id.clone(),
        status: m.status.clone().map(cdp_evidence::Word::from_text),
        started_at: m.started_at.clone(),
        finalized_at: m.finalized_at.clone(),
        failures: upload["failures"].as_u64(),
        host: s(&upload["host"]),
        records: m.totals.as_ref().map(|t| t.records),
        size_bytes: upload["files"]
            .as_array()
            .map(|files| files.iter().filter_map(|f| f["bytes"].as_u64()).sum()),
        truncated: m.truncation.as_ref().is_some_and(|t| t.artifacts_truncated),
        uploaded_at: s(&upload["uploadedAt"]),
        url: target.run_url(id),
    }
}

/// The files an uploaded manifest lists, each a safe relative path with its size; `None` when
/// the list is missing or names anything else.
pub fn listed_files(m: &serde_json::Value) -> Option<Vec<(String, u64)>> {
    let files = m["upload"]["files"].as_array()?;
    files
        .iter()
        .map(|f| {
            let path = f["path"].as_str()?;
            let bytes = f["bytes"].as_u64()?;
            safe_relative(path).then(|| (path.to_owned(), bytes))
        })
        .collect()
}

/// `name` or `artifacts/name`, names passing the id rule, and never the manifest (it is
/// written last, from the bucket's own copy).
fn safe_relative(path: &str) -> bool {
    match path.split_once('/') {
        None => validate_id("file", path).is_ok() && path != MANIFEST_FILE,
        Some((dir, name)) => {
            dir == cdp_evidence::ARTIFACTS_DIR
                && !name.contains('/')
                && validate_id("file", name).is_ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_are_fetched() {
        for ok in [
            "actions.jsonl",
            "report.html",
            "artifacts/000001-frame.jpeg",
        ] {
            assert!(safe_relative(ok), "{ok}");
        }
        for bad in [
            "../x",
            "/etc/passwd",
            "artifacts/../../x",
            "artifacts/a/b",
            "other/x",
            ".hidden",
            "manifest.json",
            "",
            "artifacts/",
        ] {
            assert!(!safe_relative(bad), "{bad}");
        }
        let m = serde_json::json!({"upload": {"files": [
            {"path": "actions.jsonl", "bytes": 3},
            {"path": "../escape", "bytes": 1}
        ]}});
        assert!(listed_files(&m).is_none(), "one bad entry refuses the run");
    }

    #[test]
    fn a_listed_run_is_read_from_its_manifest_through_the_format_s_type() {
        let target = Target::for_reading(&crate::UploadSettings::new("s3://bkt/fleet")).unwrap();
        let bytes = serde_json::to_vec(&serde_json::json!({
            "runId": "r1", "sessionId": "s1", "status": "finalized",
            "startedAt": "2026-01-01T00:00:00.000Z", "finalizedAt": "2026-01-01T00:01:00.000Z",
            "totals": {"records": 12, "artifactBytes": 3, "artifacts": 1, "droppedEvidence": 0},
            "truncation": {"artifactsTruncated": true, "artifactBudgetBytes": 9,
                           "refusedArtifacts": 1},
            "upload": {"host": "pod-1", "uploadedAt": "2026-01-01T00:02:00.000Z", "failures": 2,
                       "files": [{"path": "actions.jsonl", "bytes": 5},
                                 {"path": "artifacts/000001-frame.jpeg", "bytes": 7}]}
        }))
        .unwrap();
        let run = describe(&target, "r1", &Manifest::parse(&bytes).unwrap());
        assert_eq!(run.session_id.as_deref(), Some("s1"));
        assert_eq!(
            run.status,
            Some(cdp_evidence::Word::Known(
                cdp_evidence::RunStatus::Finalized
            ))
        );
        assert_eq!(run.started_at.as_deref(), Some("2026-01-01T00:00:00.000Z"));
        assert_eq!(
            run.finalized_at.as_deref(),
            Some("2026-01-01T00:01:00.000Z")
        );
        assert_eq!(run.records, Some(12));
        assert!(run.truncated);
        assert_eq!(
            (run.host.as_deref(), run.failures, run.size_bytes),
            (Some("pod-1"), Some(2), Some(12))
        );
        assert_eq!(run.uploaded_at.as_deref(), Some("2026-01-01T00:02:00.000Z"));
        // Not a manifest at all: listed by its id, nothing else claimed.
        let bare = describe(&target, "r2", &Manifest::default());
        assert_eq!(
            (bare.session_id, bare.status, bare.records, bare.truncated),
            (None, None, None, false)
        );
    }
}
