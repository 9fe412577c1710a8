//! A run a producer has joined: appending records, storing artifacts, finalizing.
//!
//! Every write happens under the run lock (see [`crate::journal`]) and first checks the manifest,
//! so nothing is added to a finalized or deleted run. Shared by threads (`&self`, `Send + Sync`)
//! and, through the lock, by processes. A disabled run accepts everything and writes nothing.
//!
//! Two budgets bound a run, both fixed in its manifest: artifacts (`artifactBudgetBytes`, here)
//! and the journal (`journalBudgetBytes`, in [`journal_budget`]).

use crate::budget::BudgetState;
use crate::config::EvidenceConfig;
use crate::error::Error;
use crate::ids::Source;
use crate::journal::{Journal, Locked};
use crate::manifest::{Manifest, ManifestTotals, Redactions, Truncation};
use crate::paths::{
    ensure_dir, no_follow, open_error, write_atomic, ARTIFACTS_DIR, MANIFEST_FILE, RESERVE_FILE,
};
use crate::pointer::SessionLock;
use crate::record::{ArtifactRef, Envelope, Marker, MarkerKind, Record, RecordKind};
use crate::vocab::RunStatus;
use cdp_sanitize::{RedactionSummary, SafeText};
use serde_json::Value;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

mod journal_budget;

use journal_budget::Refused;
pub use journal_budget::METADATA_ALLOWANCE;

/// What a producer reports when it finalizes a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Evidence the producer dropped (e.g. its bounded queue was full), in all.
    pub dropped_evidence: u64,
    /// Of `dropped_evidence`, what the producer already said in `evidenceDropped` markers while
    /// it ran; the finalize marker says only the rest.
    pub dropped_recorded: u64,
    /// What the producer's sanitizer redacted (`Sanitizer::summary()`), if it has one.
    pub redactions: Option<RedactionSummary>,
}

/// Result of [`Run::store_artifact`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArtifactOutcome {
    /// Stored; attach the reference to a record with [`Record::artifact`].
    Stored(ArtifactRef),
    /// Refused: the run's artifact budget is spent. The journal holds one `evidenceTruncated`
    /// marker; keep recording metadata.
    OverBudget,
    /// Evidence is disabled; nothing was stored.
    Disabled,
}

pub(crate) struct RunInner {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) dir: PathBuf,
    pub(crate) source: Source,
    pub(crate) config: Arc<EvidenceConfig>,
    pub(crate) sessions: SessionLock,
    pub(crate) journal: Journal,
    /// (device, inode) of the manifest last read as running. See [`RunInner::ensure_running`].
    pub(crate) seen_running: Mutex<Option<(u64, u64)>>,
    /// The journal budget from the manifest (the configured one for runs without it).
    pub(crate) journal_budget: u64,
    /// This process has seen the journal truncated (a flag that never goes back).
    pub(crate) journal_truncated: AtomicBool,
    /// Records refused past the journal budget, not yet merged into `budget.json`.
    pub(crate) refused: Mutex<Refused>,
}

/// A joined run. Cheap to clone; clones share the in-process lock.
///
/// When evidence is disabled, [`crate::Store::join_session`] returns a *disabled* run: appends
/// and finalize succeed without doing anything, artifacts return [`ArtifactOutcome::Disabled`],
/// [`Run::id`] is empty and [`Run::dir`] is the empty path — check [`Run::is_enabled`] before
/// using the directory (e.g. to render a report).
#[derive(Clone)]
pub struct Run {
    inner: Option<Arc<RunInner>>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            None => f.write_str("Run(disabled)"),
            Some(i) => f
                .debug_struct("Run")
                .field("id", &i.id)
                .field("session", &i.session)
                .field("dir", &i.dir)
                .finish(),
        }
    }
}

impl Run {
    pub(crate) fn disabled() -> Run {
        Run { inner: None }
    }

    /// Opens an existing run directory (the manifest must exist).
    pub(crate) fn open(inner: RunInner) -> Run {
        Run {
            inner: Some(Arc::new(inner)),
        }
    }

    /// False for the no-op run of a disabled store.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The run id (empty when disabled).
    pub fn id(&self) -> &str {
        self.inner.as_ref().map_or("", |i| &i.id)
    }

    /// The run directory (empty when disabled).
    pub fn dir(&self) -> &Path {
        self.inner.as_ref().map_or(Path::new(""), |i| &i.dir)
    }

    /// The session this run belongs to (empty when disabled).
    pub fn session(&self) -> &str {
        self.inner.as_ref().map_or("", |i| &i.session)
    }

    /// Appends one record: takes the run lock, refuses if the run is finalized, repairs a torn
    /// tail, writes the bounded record as one line. Blocks only on the lock (other writers).
    pub fn append(&self, record: Record) -> Result<(), Error> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        let locked = inner.journal.lock()?;
        inner.ensure_running()?;
        inner.repair(&locked)?;
        inner.write_batch(&locked, std::slice::from_ref(&record))?;
        Ok(())
    }

    /// Appends records in order under one lock: one finalized check, one tail repair and one
    /// write for the whole batch (all or nothing). What a busy producer uses to keep up.
    /// Returns how many were appended: past the journal budget, records other than metadata
    /// are refused and counted (see the module docs) — that is not an error.
    pub fn append_all(&self, records: &[Record]) -> Result<usize, Error> {
        let Some(inner) = &self.inner else {
            return Ok(0);
        };
        if records.is_empty() {
            return Ok(0);
        }
        let locked = inner.journal.lock()?;
        inner.ensure_running()?;
        inner.repair(&locked)?;
        inner.write_batch(&locked, records)
    }

    /// Keeps `bytes` of disk space for this run's finalize: a hidden file in the run directory,
    /// removed first thing when the run is finalized (by any producer), so a run recorded until
    /// the disk filled up can still write its last markers and manifest. Best effort for a
    /// long-lived producer; a run without it finalizes the same way when there is space.
    pub fn reserve_space(&self, bytes: usize) -> Result<(), Error> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        let path = inner.dir.join(RESERVE_FILE);
        let mut file = no_follow(OpenOptions::new().write(true).create(true).truncate(true))
            .open(&path)
            .map_err(|e| open_error("cannot create space reserve", &path, e))?;
        // Real blocks: a sparse file would reserve nothing.
        let written = crate::hooks::check_write(&path)
            .and_then(|()| file.write_all(&vec![0u8; bytes]))
            .and_then(|()| file.sync_all());
        if let Err(e) = written {
            drop(file);
            let _ = fs::remove_file(&path);
            return Err(Error::io("cannot write space reserve", path, e));
        }
        Ok(())
    }

    /// Stores an artifact within the run's budget. `stem` and `ext` name the file
    /// (`artifacts/<n>-<stem>.<ext>`); they must be short `[a-z0-9_-]` words.
    pub fn store_artifact(
        &self,
        stem: &'static str,
        ext: &'static str,
        bytes: &[u8],
    ) -> Result<ArtifactOutcome, Error> {
        let Some(inner) = &self.inner else {
            return Ok(ArtifactOutcome::Disabled);
        };
        check_word("artifact stem", stem)?;
        check_word("artifact extension", ext)?;
        let locked = inner.journal.lock()?;
        let manifest = inner.running_manifest()?;
        inner.repair(&locked)?;
        inner.store_artifact(&locked, &manifest, stem, ext, bytes)
    }

    /// Finalizes the run: under the run lock, records `evidenceDropped` (if any) and
    /// `runFinalized` markers, fsyncs the journal and rewrites the manifest as finalized with
    /// totals; then clears the session pointer if it still points here. Idempotent: finalizing
    /// a finalized run (from any producer) only clears a leftover pointer.
    pub fn finalize(&self, totals: Totals) -> Result<(), Error> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        {
            let locked = inner.journal.lock()?;
            let manifest = inner.manifest()?;
            if manifest.run_status() != Some(RunStatus::Finalized) {
                inner.finalize_locked(&locked, manifest, &totals)?;
            }
        }
        inner.sessions.clear_pointer_if(&inner.session, &inner.id)
    }

    /// Writes a marker record (used by the store when recovering a run).
    pub(crate) fn append_marker(&self, kind: MarkerKind) -> Result<(), Error> {
        self.append(Record::new(
            SafeText::literal("cdp-evidence"),
            RecordKind::Marker(Marker::internal(kind)),
        ))
    }
}

fn check_word(what: &'static str, word: &str) -> Result<(), Error> {
    let ok = !word.is_empty()
        && word.len() <= 32
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidId {
            what,
            reason: "must be 1-32 of a-z 0-9 _ -",
        })
    }
}

impl RunInner {
    fn manifest_path(&self) -> PathBuf {
        self.dir.join(MANIFEST_FILE)
    }

    fn manifest(&self) -> Result<Manifest, Error> {
        Manifest::read(&self.manifest_path())?.ok_or_else(|| Error::RunNotFound {
            run_id: self.id.clone(),
            path: self.dir.clone(),
        })
    }

    /// `RunFinalized` when the run was finalized. The manifest is only ever replaced by rename (at
    /// create and at finalize), so while it is the same file that was last read as running, it
    /// still says running: appends cost a `stat`, not a read and a parse.
    fn ensure_running(&self) -> Result<(), Error> {
        use std::os::unix::fs::MetadataExt;
        let path = self.manifest_path();
        let file = fs::symlink_metadata(&path).ok().map(|m| (m.dev(), m.ino()));
        let mut seen = self
            .seen_running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if file.is_some() && *seen == file {
            return Ok(());
        }
        *seen = None;
        self.running_manifest()?;
        *seen = file;
        Ok(())
    }

    /// The manifest, or `RunFinalized` when another (or this) producer finalized the run.
    fn running_manifest(&self) -> Result<Manifest, Error> {
        let manifest = self.manifest()?;
        if manifest.run_status() == Some(RunStatus::Finalized) {
            return Err(Error::RunFinalized {
                run_id: self.id.clone(),
            });
        }
        Ok(manifest)
    }

    /// The budget is fixed by the run's creator (manifest), so every producer applies the same.
    fn budget(&self, manifest: &Manifest) -> u64 {
        manifest
            .artifact_budget_bytes
            .unwrap_or(self.config.artifact_budget_bytes)
    }

    fn marker(&self, kind: MarkerKind) -> Record {
        Record::new(
            SafeText::literal("cdp-evidence"),
            RecordKind::Marker(Marker::internal(kind)),
        )
    }

    /// Repairs a torn tail and, if anything was discarded, says so in the journal.
    fn repair(&self, locked: &Locked<'_>) -> Result<(), Error> {
        let discarded = locked.repair_tail()?;
        if discarded > 0 {
            let marker = self.marker(MarkerKind::JournalRepaired {
                discarded_bytes: discarded,
            });
            self.write(locked, &marker)?;
        }
        Ok(())
    }

    fn write(&self, locked: &Locked<'_>, record: &Record) -> Result<(), Error> {
        locked.write_line(&self.line(record)?)
    }

    /// Frees the space reserve, if this run has one.
    fn release_reserve(&self) {
        let _ = fs::remove_file(self.dir.join(RESERVE_FILE));
    }

    /// The record as its journal line (under its preset action id or a fresh one), bounded in
    /// size.
    fn line(&self, record: &Record) -> Result<Vec<u8>, Error> {
        let mut line = Vec::with_capacity(512);
        self.push_line(&mut line, record)?;
        Ok(line)
    }

    /// Appends [`RunInner::line`] to `out` (a batch's buffer: no allocation per record). On
    /// error `out` is as it was.
    fn push_line(&self, out: &mut Vec<u8>, record: &Record) -> Result<(), Error> {
        let start = out.len();
        Envelope::new(record, &self.source, &self.session, SystemTime::now()).write(out)?;
        if out.len() - start < self.config.max_record_bytes {
            out.push(b'\n');
            return Ok(());
        }
        // Too big: cut it down on the line's JSON tree.
        let value = serde_json::from_slice(&out[start..]);
        out.truncate(start);
        let bounded = crate::bound::to_bounded_line(
            value.map_err(Error::Serialize)?,
            self.config.max_record_bytes,
        )?;
        out.extend_from_slice(&bounded);
        Ok(())
    }

    fn store_artifact(
        &self,
        locked: &Locked<'_>,
        manifest: &Manifest,
        stem: &str,
        ext: &str,
        bytes: &[u8],
    ) -> Result<ArtifactOutcome, Error> {
        let budget = self.budget(manifest);
        let mut state = BudgetState::load(&self.dir, || locked.facts())?;
        let len = bytes.len() as u64;
        if !state.fits(len, budget) {
            state.refused_artifacts += 1;
            let first = !state.truncated;
            state.truncated = true;
            if first {
                // Write the marker before saving the flag: a crash in between leaves a marker
                // and an unset flag, which a rebuild from the journal corrects.
                self.write(
                    locked,
                    &self.marker(MarkerKind::EvidenceTruncated {
                        budget_bytes: budget,
                        used_bytes: state.used_bytes,
                        refused_bytes: len,
                    }),
                )?;
            }
            state.save(&self.dir)?;
            return Ok(ArtifactOutcome::OverBudget);
        }
        let artifacts = self.dir.join(ARTIFACTS_DIR);
        ensure_dir(&artifacts)?;
        let before = state.clone();
        state.used_bytes += len;
        // Reserve before writing: a crash mid-write over-counts, never under-counts.
        for _ in 0..1000 {
            state.artifacts += 1;
            let name = format!("{:06}-{stem}.{ext}", state.artifacts);
            let path = artifacts.join(&name);
            let mut file =
                match no_follow(OpenOptions::new().write(true).create_new(true)).open(&path) {
                    Ok(f) => f,
                    // Left by a producer that crashed after reserving: take the next number.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(open_error("cannot create artifact", &path, e)),
                };
            state.save(&self.dir)?;
            let written = crate::hooks::check_write(&path).and_then(|()| file.write_all(bytes));
            if let Err(e) = written {
                drop(file);
                let _ = fs::remove_file(&path);
                let _ = before.save(&self.dir);
                return Err(Error::io("cannot write artifact", &path, e));
            }
            return Ok(ArtifactOutcome::Stored(ArtifactRef::new(format!(
                "{ARTIFACTS_DIR}/{name}"
            ))));
        }
        Err(Error::io(
            "no free artifact name in",
            artifacts,
            io::Error::from(io::ErrorKind::AlreadyExists),
        ))
    }

    fn finalize_locked(
        &self,
        locked: &Locked<'_>,
        manifest: Manifest,
        totals: &Totals,
    ) -> Result<(), Error> {
        // Space first: what follows is small, and may be all a full disk lets through.
        self.release_reserve();
        self.repair(locked)?;
        let facts = locked.facts()?;
        let mut budget = BudgetState::load(&self.dir, || Ok(facts))?;
        self.flush_refused(&mut budget)?;
        let mut records = facts.records;
        // The markers go in one write, and only if an earlier, interrupted finalize did not
        // write them: a retried finalize never says the same loss twice.
        if !facts.finalized {
            let mut lines = Vec::new();
            let unrecorded = totals
                .dropped_evidence
                .saturating_sub(totals.dropped_recorded);
            if unrecorded > 0 {
                let dropped = self.marker(MarkerKind::EvidenceDropped {
                    count: unrecorded,
                    reason: None,
                });
                self.push_line(&mut lines, &dropped)?;
                records += 1;
            }
            records += 1;
            let finalized = self.marker(MarkerKind::RunFinalized {
                pid: std::process::id(),
                records,
                artifact_bytes: budget.used_bytes,
                dropped_evidence: totals.dropped_evidence,
            });
            self.push_line(&mut lines, &finalized)?;
            locked.write_lines(&lines)?;
        }
        locked.sync()?;

        // Rewrite the manifest from its current object so fields written by others survive.
        let budget_bytes = self.budget(&manifest);
        let mut raw = manifest.raw;
        let set = |raw: &mut serde_json::Map<String, Value>, k: &str, v: Value| {
            raw.insert(k.to_owned(), v);
        };
        set(&mut raw, "status", RunStatus::Finalized.as_str().into());
        set(
            &mut raw,
            "finalizedAt",
            crate::time::format_rfc3339_millis(SystemTime::now()).into(),
        );
        set(
            &mut raw,
            "finalizedBy",
            serde_json::json!({ "source": self.source.as_str(), "pid": std::process::id() }),
        );
        let manifest_totals = ManifestTotals {
            records,
            artifact_bytes: budget.used_bytes,
            artifacts: budget.artifacts,
            dropped_evidence: totals.dropped_evidence,
            redactions: totals.redactions.as_ref().map(Redactions::from),
        };
        let truncation = Truncation {
            artifacts_truncated: budget.truncated,
            artifact_budget_bytes: budget_bytes,
            refused_artifacts: budget.refused_artifacts,
            journal_truncated: budget.journal_truncated,
            journal_budget_bytes: self.journal_budget,
            refused_records: budget.refused_records.clone(),
        };
        set(
            &mut raw,
            "totals",
            serde_json::to_value(manifest_totals).map_err(Error::Serialize)?,
        );
        set(
            &mut raw,
            "truncation",
            serde_json::to_value(truncation).map_err(Error::Serialize)?,
        );
        let mut bytes = serde_json::to_vec_pretty(&raw).map_err(Error::Serialize)?;
        bytes.push(b'\n');
        write_atomic(&self.manifest_path(), &bytes)
    }
}
