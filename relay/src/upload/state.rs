//! A run's upload state: `runs/<runId>/upload.json`, written by the uploader beside the run it
//! describes (atomically, through [`cdp_evidence::RunDir::write_output`]) and never uploaded.
//! A restarted relay reads it to know what is still pending; retention reads it through
//! [`UploadHold`] so that a run not yet uploaded is never pruned.
//!
//! The sidecar lives and dies with its run: retention deletes both together, so nothing under
//! the evidence root outlives the run it speaks of.

use cdp_evidence::{RetentionHold, RunDir, RunInfo};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The sidecar's name inside a run directory.
pub const STATE_FILE: &str = "upload.json";
/// The lock an uploader holds on a run while it uploads it (`flock`, never deleted while the
/// run exists).
pub const LOCK_FILE: &str = "upload.lock";

/// A sidecar is a few hundred bytes; anything larger is not ours.
const STATE_LIMIT: u64 = 64 * 1024;

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UploadState {
    /// Handed to an uploader, not in the bucket yet.
    Pending,
    /// The last attempt failed; it is tried again by the next scan or start, or `cdp-relay upload`.
    Failed,
    /// In the bucket, whole (its manifest was written last).
    Uploaded,
    /// Not uploaded on purpose: `--upload-only-failed` and the run recorded no failure.
    Skipped,
}

impl UploadState {
    /// True when nothing is left to do for the run: retention may prune it.
    pub fn is_done(self) -> bool {
        matches!(self, UploadState::Uploaded | UploadState::Skipped)
    }

    /// The word `runs` and the status API show.
    pub fn as_str(self) -> &'static str {
        match self {
            UploadState::Pending => "pending",
            UploadState::Failed => "failed",
            UploadState::Uploaded => "uploaded",
            UploadState::Skipped => "skipped",
        }
    }
}

/// The content of `upload.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunUpload {
    /// Where the run stands.
    pub state: UploadState,
    /// The run's place in the bucket, `s3://bucket/prefix/<runId>/` (never credentials).
    pub target: String,
    /// Attempts so far (all processes).
    #[serde(default)]
    pub attempts: u32,
    /// Why the last attempt failed: one sanitized line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When it was last tried (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_at: Option<String>,
    /// When its manifest reached the bucket (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploaded_at: Option<String>,
    /// Files uploaded, the manifest included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    /// Bytes uploaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Failures the run recorded (as its report counts them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<u64>,
}

impl RunUpload {
    /// A fresh state for a run about to be uploaded to `target`.
    pub fn pending(target: String) -> RunUpload {
        RunUpload {
            state: UploadState::Pending,
            target,
            attempts: 0,
            last_error: None,
            last_attempt_at: None,
            uploaded_at: None,
            files: None,
            bytes: None,
            failures: None,
        }
    }
}

/// Reads a run's sidecar. `Ok(None)` when there is none; an unreadable or foreign file is an
/// error (and holds the run: see [`UploadHold`]).
pub fn read(run_dir: &Path) -> std::io::Result<Option<RunUpload>> {
    let path = run_dir.join(STATE_FILE);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("upload.json is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(STATE_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > STATE_LIMIT {
        return Err(std::io::Error::other("upload.json is too large"));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|_| std::io::Error::other("upload.json is not an upload state"))
}

/// Writes a run's sidecar atomically (temp, fsync, rename, fsync the directory), never
/// following a symlink below the run directory.
pub fn write(run_dir: &Path, state: &RunUpload) -> Result<(), cdp_evidence::Error> {
    let mut bytes = serde_json::to_vec_pretty(state).map_err(cdp_evidence::Error::Serialize)?;
    bytes.push(b'\n');
    RunDir::open(run_dir)?.write_output(STATE_FILE, &bytes)?;
    Ok(())
}

/// Retention's question "may this run go?", answered from its sidecar: a run is held while its
/// upload is pending or failing; with uploads configured, a finalized run without a sidecar
/// (finalized a moment ago, or before uploads were turned on) is held too, until an uploader
/// has dealt with it.
#[derive(Clone, Copy, Debug)]
pub struct UploadHold {
    /// Uploads are configured for this evidence root.
    pub uploads_on: bool,
}

impl RetentionHold for UploadHold {
    fn holds(&self, _run: &RunInfo, dir: &Path) -> bool {
        match read(dir) {
            Ok(Some(s)) => !s.state.is_done(),
            Ok(None) => self.uploads_on,
            // A sidecar we cannot read protects the run: losing evidence is worse than disk.
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str) -> RunInfo {
        let tmp = tempfile::tempdir().unwrap();
        let store =
            cdp_evidence::Store::open(cdp_evidence::EvidenceConfig::at(tmp.path())).unwrap();
        let run = store.join_session(id, "relay").unwrap();
        run.finalize(cdp_evidence::Totals::default()).unwrap();
        store.list_runs().unwrap().remove(0)
    }

    #[test]
    fn round_trips_atomically_and_holds_until_done() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let run = info("s");
        let on = UploadHold { uploads_on: true };
        let off = UploadHold { uploads_on: false };
        assert!(read(dir).unwrap().is_none());
        assert!(on.holds(&run, dir), "no sidecar, uploads on: held");
        assert!(!off.holds(&run, dir), "no sidecar, uploads off: free");
        let mut s = RunUpload::pending("s3://b/p/r/".into());
        write(dir, &s).unwrap();
        assert_eq!(read(dir).unwrap().as_ref(), Some(&s));
        assert!(on.holds(&run, dir) && off.holds(&run, dir), "pending holds");
        s.state = UploadState::Failed;
        s.last_error = Some("no such bucket".into());
        write(dir, &s).unwrap();
        assert!(off.holds(&run, dir), "failed holds even with uploads off");
        for done in [UploadState::Uploaded, UploadState::Skipped] {
            s.state = done;
            write(dir, &s).unwrap();
            assert!(!on.holds(&run, dir), "{done:?} releases");
        }
        // No temp file left beside it.
        let names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, [STATE_FILE]);
    }

    #[test]
    fn a_foreign_or_symlinked_sidecar_holds_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let run = info("s");
        let off = UploadHold { uploads_on: false };
        std::fs::write(dir.join(STATE_FILE), b"{\"state\":\"bogus\"}").unwrap();
        assert!(read(dir).is_err());
        assert!(off.holds(&run, dir));
        std::fs::remove_file(dir.join(STATE_FILE)).unwrap();
        let elsewhere = tmp.path().join("elsewhere.json");
        let done = RunUpload {
            state: UploadState::Uploaded,
            ..RunUpload::pending("s3://b/p/r/".into())
        };
        std::fs::write(&elsewhere, serde_json::to_vec(&done).unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join(STATE_FILE)).unwrap();
        assert!(read(dir).is_err(), "a symlink is not followed");
        assert!(off.holds(&run, dir));
    }
}
