//! Listing runs and retention: keep the N newest finalized runs, delete older finalized ones.
//!
//! Only runs whose manifest says `evidenceVersion` and `status: "finalized"` are candidates.
//! Running runs, runs a session pointer names, legacy runs (no `evidenceVersion`), unreadable
//! manifests and anything that is not a real directory with a valid id are never touched.
//! "Newest" is by `startedAt`, ties broken by run id, so the result does not depend on directory
//! order or clocks at prune time. Deletion renames the run to `runs/.trash-<id>-<random>` first,
//! so readers never see a half-deleted run; leftovers of an interrupted prune are swept next time.
//! A [`RetentionHold`] installed on the store (`Store::with_retention_hold`) is asked about every
//! candidate and can keep it (the relay's uploader holds runs not yet uploaded).

use crate::error::Error;
use crate::ids::{random_u64, validate_id};
use crate::manifest::{Manifest, Truncation};
use crate::paths::{dir_size, real_dir_exists, MANIFEST_FILE, POINTER_SUFFIX, TRASH_PREFIX};
use crate::pointer::{self, PointerState};
use crate::store::{is_finished, Store};
use crate::vocab::RunStatus;
use cdp_sanitize::Word;
use serde::Serialize;
use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::Path;

/// A listed run's status when its manifest has none (or cannot be read).
const NO_STATUS: &str = "unknown";

/// One run, as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInfo {
    /// The run id (directory name).
    pub id: String,
    /// `sessionId` from the manifest.
    pub session_id: Option<String>,
    /// `status` from the manifest: a [`RunStatus`], or another writer's word as written
    /// ([`Word::Other`]); `unknown` when missing or unreadable.
    pub status: Word<RunStatus>,
    /// True when the manifest lacks `evidenceVersion` (or is missing/unreadable).
    pub legacy: bool,
    /// True when a session pointer names this run.
    pub active: bool,
    /// `startedAt` as written.
    pub started_at: Option<String>,
    /// `finalizedAt` as written.
    pub finalized_at: Option<String>,
    /// Records: the manifest's total when finalized, else the journal's complete lines.
    pub records: u64,
    /// Bytes on disk below the run directory.
    pub size_bytes: u64,
    /// Whether an artifact was refused for the budget (known once finalized).
    pub truncated: bool,
    #[serde(skip)]
    started_ms: Option<u64>,
    #[serde(skip)]
    finalized: bool,
}

/// Asked by retention about every finalized run it would otherwise consider deleting: `true`
/// keeps the run (it is neither deleted nor counted among the runs kept). The relay's uploader
/// holds runs that are not yet in object storage.
pub trait RetentionHold: Send + Sync + std::fmt::Debug {
    /// Whether `run` (its directory is `dir`) must stay.
    fn holds(&self, run: &RunInfo, dir: &Path) -> bool;
}

/// What [`Store::prune`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    /// Runs deleted, oldest first.
    pub removed: Vec<String>,
    /// Finalized runs kept.
    pub kept: Vec<String>,
    /// Runs left alone because they are running or named by a session pointer.
    pub skipped_active: usize,
    /// Legacy or unreadable runs left alone.
    pub skipped_legacy: usize,
    /// Finalized runs the store's [`RetentionHold`] kept (e.g. not uploaded yet).
    pub skipped_held: usize,
    /// Bytes freed.
    pub freed_bytes: u64,
}

impl Store {
    /// Lists runs, oldest first (by `startedAt`, then id). Empty when the root does not exist
    /// or evidence is disabled.
    pub fn list_runs(&self) -> Result<Vec<RunInfo>, Error> {
        if !self.config().enabled {
            return Ok(Vec::new());
        }
        let layout = self.layout_for_retention();
        let runs_dir = layout.runs_dir();
        if !real_dir_exists(layout.root())? || !real_dir_exists(&runs_dir)? {
            return Ok(Vec::new());
        }
        let active = active_runs(&layout.sessions_dir())?;
        let entries =
            fs::read_dir(&runs_dir).map_err(|e| Error::io("cannot list runs in", &runs_dir, e))?;
        let mut runs = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("cannot list runs in", &runs_dir, e))?;
            let Some(id) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            // Hidden entries (trash, temp files) and non-directories are not runs; symlinks
            // are never followed.
            if validate_id("run id", &id).is_err() || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            runs.push(describe(&entry.path(), id, &active));
        }
        runs.sort_by(|a, b| (a.started_ms, &a.id).cmp(&(b.started_ms, &b.id)));
        Ok(runs)
    }

    /// Deletes finalized runs beyond the newest `keep_finalized_runs` (see the module docs).
    pub fn prune(&self) -> Result<PruneReport, Error> {
        self.prune_keeping(self.config().keep_finalized_runs)
    }

    /// [`Store::prune`] with an explicit number of runs to keep.
    pub fn prune_keeping(&self, keep: usize) -> Result<PruneReport, Error> {
        let mut report = PruneReport::default();
        let runs = self.list_runs()?;
        if runs.is_empty() {
            return Ok(report);
        }
        let runs_dir = self.layout_for_retention().runs_dir();
        sweep_trash(&runs_dir)?;
        let mut candidates: Vec<&RunInfo> = Vec::new();
        for run in &runs {
            if run.legacy {
                report.skipped_legacy += 1;
            } else if run.active || !run.finalized {
                report.skipped_active += 1;
            } else if self
                .retention_hold()
                .is_some_and(|h| h.holds(run, &runs_dir.join(&run.id)))
            {
                report.skipped_held += 1;
            } else {
                candidates.push(run);
            }
        }
        // Newest first; ties by id so the order is total.
        candidates.sort_by(|a, b| (b.started_ms, &b.id).cmp(&(a.started_ms, &a.id)));
        let (kept, old) = candidates.split_at(keep.min(candidates.len()));
        report.kept = kept.iter().map(|r| r.id.clone()).collect();
        for run in old.iter().rev() {
            let from = runs_dir.join(&run.id);
            let trash = runs_dir.join(format!("{TRASH_PREFIX}{}-{:016x}", run.id, random_u64()));
            match fs::rename(&from, &trash) {
                Ok(()) => {}
                // Another prune got there first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("cannot move run aside", &from, e)),
            }
            fs::remove_dir_all(&trash).map_err(|e| Error::io("cannot delete run", &trash, e))?;
            report.removed.push(run.id.clone());
            report.freed_bytes += run.size_bytes;
        }
        Ok(report)
    }
}

fn describe(dir: &Path, id: String, active: &HashSet<String>) -> RunInfo {
    let manifest = Manifest::read(&dir.join(MANIFEST_FILE)).ok().flatten();
    let m = manifest.unwrap_or_default();
    let finalized = m.run_status() == Some(RunStatus::Finalized);
    let records = match (&m.totals, finalized) {
        (Some(t), true) => t.records,
        _ => count_lines(&dir.join(m.journal_file())),
    };
    RunInfo {
        active: active.contains(&id),
        session_id: m.session_id.clone(),
        status: m
            .status
            .clone()
            .map_or_else(|| Word::Other(NO_STATUS.to_owned()), Word::from_text),
        legacy: m.is_legacy(),
        started_ms: m
            .started_at
            .as_deref()
            .and_then(crate::time::parse_rfc3339_millis),
        started_at: m.started_at.clone(),
        finalized_at: m.finalized_at.clone(),
        records,
        size_bytes: dir_size(dir),
        truncated: m.truncation.as_ref().is_some_and(Truncation::any),
        finalized: finalized && is_finished(&m),
        id,
    }
}

/// Complete lines in a journal (no parsing; for listings).
fn count_lines(path: &Path) -> u64 {
    let Ok(file) = crate::paths::open_read(path) else {
        return 0;
    };
    let mut reader = io::BufReader::new(file);
    let mut n = 0u64;
    loop {
        let buf = match io::BufRead::fill_buf(&mut reader) {
            Ok([]) | Err(_) => return n,
            Ok(buf) => buf,
        };
        n += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        let len = buf.len();
        io::BufRead::consume(&mut reader, len);
    }
}

/// Run ids named by any session pointer.
fn active_runs(sessions_dir: &Path) -> Result<HashSet<String>, Error> {
    let mut active = HashSet::new();
    if !real_dir_exists(sessions_dir)? {
        return Ok(active);
    }
    let entries = fs::read_dir(sessions_dir)
        .map_err(|e| Error::io("cannot list sessions in", sessions_dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().ends_with(POINTER_SUFFIX) {
            continue;
        }
        // An unreadable pointer protects nothing specific; runs stay safe because only
        // finalized runs are ever candidates.
        if let Ok(PointerState::Valid(p)) = pointer::read(&entry.path()) {
            active.insert(p.run_id);
        }
    }
    Ok(active)
}

/// Removes leftovers of interrupted deletions.
fn sweep_trash(runs_dir: &Path) -> Result<(), Error> {
    let entries =
        fs::read_dir(runs_dir).map_err(|e| Error::io("cannot list runs in", runs_dir, e))?;
    for entry in entries.flatten() {
        let is_trash = entry
            .file_name()
            .to_string_lossy()
            .starts_with(TRASH_PREFIX);
        if is_trash && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let path = entry.path();
            match fs::remove_dir_all(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("cannot delete", &path, e)),
            }
        }
    }
    Ok(())
}
