//! The evidence root: joining a session's run (the active-run pointer protocol),
//! reading runs back, and retention entry points.
//!
//! Join protocol (any producer, any language), all under an exclusive `flock` on
//! `sessions/<sessionId>.lock`:
//! 1. Read `sessions/<sessionId>.active`.
//! 2. Missing: pick a fresh run id, claim the pointer create-exclusive *first*, then create
//!    `runs/<runId>/` (manifest, `artifacts/`, `runStarted` marker). A crash after the claim leaves
//!    a pointer to a missing or manifest-less run, which step 3 repairs; no run directory ever
//!    exists without a pointer having named it, so no orphan run is created.
//! 3. Present: if it is garbage, names a missing run directory, or names a finalized run, remove
//!    it and go to 2. If the run directory lacks its manifest (creator crashed mid-create),
//!    finish creating it. Otherwise adopt the run.
//! 4. Ownership: a long-lived producer ([`Store::join_session`]) becomes the owner when the pointer
//!    has none, and takes over (recording an `ownerRecovered` marker) when the owner's pid is
//!    dead — the run is *adopted and continued*, never abandoned, so nothing other producers
//!    wrote is lost and short-lived producers can keep joining it. A short-lived producer
//!    ([`Store::join_session_transient`], used by `cdp-relay evidence append`) never takes
//!    ownership.
//!
//! The store never deletes anything except through [`Store::prune`].

use crate::config::{EvidenceConfig, MIN_JOURNAL_BUDGET_BYTES, MIN_MAX_RECORD_BYTES};
use crate::error::Error;
use crate::ids::{new_run_id, validate_id, Source};
use crate::journal::Journal;
use crate::manifest::{Manifest, ManifestOut, ProducerOut};
use crate::paths::{
    check_real_dir, ensure_dir, no_follow, open_error, real_dir_exists, Layout, ARTIFACTS_DIR,
    MANIFEST_FILE,
};
use crate::pointer::SessionLock;
use crate::pointer::{self, PointerState};
use crate::reader::{read_journal_from, JournalRead};
use crate::record::MarkerKind;
use crate::run::{Run, RunInner};
use crate::vocab::RunStatus;
use cdp_sanitize::Word;
use std::fs::OpenOptions;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// An evidence root. Opening creates nothing; the first join creates the directories.
#[derive(Debug)]
pub struct Store {
    config: Arc<EvidenceConfig>,
    sessions: SessionLock,
    /// Asked before retention deletes a finalized run.
    hold: Option<Arc<dyn crate::retention::RetentionHold>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Owner,
    Transient,
}

impl Store {
    /// Validates the configuration. Creates nothing on disk.
    pub fn open(config: EvidenceConfig) -> Result<Store, Error> {
        if config.max_record_bytes < MIN_MAX_RECORD_BYTES {
            return Err(Error::Config {
                reason: format!(
                    "max_record_bytes must be at least {MIN_MAX_RECORD_BYTES}, got {}",
                    config.max_record_bytes
                ),
            });
        }
        if config.journal_budget_bytes < MIN_JOURNAL_BUDGET_BYTES {
            return Err(Error::Config {
                reason: format!(
                    "the journal budget must be at least {MIN_JOURNAL_BUDGET_BYTES} bytes, got {}",
                    config.journal_budget_bytes
                ),
            });
        }
        let layout = Layout::new(&config.root)?;
        Ok(Store {
            config: Arc::new(config),
            sessions: SessionLock::new(layout),
            hold: None,
        })
    }

    /// Retention asks `hold` about every finalized run before deleting it (see
    /// [`crate::RetentionHold`]).
    pub fn with_retention_hold(mut self, hold: Arc<dyn crate::retention::RetentionHold>) -> Store {
        self.hold = Some(hold);
        self
    }

    pub(crate) fn retention_hold(&self) -> Option<&dyn crate::retention::RetentionHold> {
        self.hold.as_deref()
    }

    /// The configuration in use.
    pub fn config(&self) -> &EvidenceConfig {
        &self.config
    }

    /// The absolute evidence root.
    pub fn root(&self) -> &Path {
        self.layout().root()
    }

    fn layout(&self) -> &Layout {
        &self.sessions.layout
    }

    /// Joins the session's active run as a long-lived producer (the relay), creating the run if
    /// there is none. This process becomes the run's owner if it has none or its owner died.
    /// Disabled store: returns a no-op run.
    pub fn join_session(&self, session: &str, source: &str) -> Result<Run, Error> {
        self.join(session, source, Role::Owner)
    }

    /// Joins like [`Store::join_session`] for a short-lived producer (one CLI invocation): it
    /// never becomes the owner, so its exit does not look like an owner dying.
    pub fn join_session_transient(&self, session: &str, source: &str) -> Result<Run, Error> {
        self.join(session, source, Role::Transient)
    }

    fn join(&self, session: &str, source: &str, role: Role) -> Result<Run, Error> {
        if !self.config.enabled {
            return Ok(Run::disabled());
        }
        validate_id("session id", session)?;
        let source = Source::new(source)?;
        self.layout().ensure()?;
        let _lock = self.sessions.lock(session)?;
        let ptr_path = self.layout().pointer(session)?;
        let me = std::process::id();
        let my_pid = (role == Role::Owner).then_some(me);
        // Each pass either returns or removes one bad pointer; a third pass only happens if
        // something ignores the session lock.
        for _ in 0..4 {
            let p = match pointer::read(&ptr_path)? {
                PointerState::Missing => {
                    let run_id = new_run_id(SystemTime::now());
                    if !pointer::claim(&ptr_path, &run_id, my_pid, source.as_str())? {
                        continue;
                    }
                    return self.create_run(&run_id, session, &source);
                }
                PointerState::Garbage => {
                    pointer::remove(&ptr_path)?;
                    continue;
                }
                PointerState::Valid(p) => p,
            };
            let dir = self.layout().run_dir(&p.run_id)?;
            if !real_dir_exists(&dir)? {
                pointer::remove(&ptr_path)?;
                continue;
            }
            let run = match Manifest::read(&dir.join(MANIFEST_FILE))? {
                // The creator died between claiming and writing the manifest: finish its work.
                None => self.create_run(&p.run_id, session, &source)?,
                Some(m) if is_finished(&m) => {
                    pointer::remove(&ptr_path)?;
                    continue;
                }
                Some(m) => self.open_run(&p.run_id, session, &source, &m)?,
            };
            if role == Role::Owner && p.owner_pid != Some(me) {
                match p.owner_pid {
                    Some(pid) if pointer::pid_alive(pid) => {}
                    previous => {
                        pointer::replace(&ptr_path, &p.run_id, Some(me), source.as_str())?;
                        if let Some(previous_pid) = previous {
                            run.append_marker(MarkerKind::OwnerRecovered {
                                previous_pid,
                                pid: me,
                            })?;
                        }
                    }
                }
            }
            return Ok(run);
        }
        Err(Error::Pointer {
            path: ptr_path,
            reason: "keeps changing while the session lock is held; is a producer ignoring \
                     sessions/<id>.lock?"
                .to_owned(),
        })
    }

    /// The session's active run, without creating or adopting anything: `None` when no pointer
    /// names a running run. Used to finalize a session from another process.
    pub fn active_run(&self, session: &str, source: &str) -> Result<Option<Run>, Error> {
        if !self.config.enabled {
            return Ok(None);
        }
        validate_id("session id", session)?;
        let source = Source::new(source)?;
        if !real_dir_exists(self.layout().root())?
            || !real_dir_exists(&self.layout().sessions_dir())?
        {
            return Ok(None);
        }
        let _lock = self.sessions.lock(session)?;
        let PointerState::Valid(p) = pointer::read(&self.layout().pointer(session)?)? else {
            return Ok(None);
        };
        let dir = self.layout().run_dir(&p.run_id)?;
        if !real_dir_exists(&dir)? {
            return Ok(None);
        }
        match Manifest::read(&dir.join(MANIFEST_FILE))? {
            Some(m) if !is_finished(&m) => self.open_run(&p.run_id, session, &source, &m).map(Some),
            _ => Ok(None),
        }
    }

    /// Creates (or finishes creating) `runs/<run_id>`: directory, artifacts directory, manifest,
    /// then the `runStarted` marker. The pointer already names it.
    fn create_run(&self, run_id: &str, session: &str, source: &Source) -> Result<Run, Error> {
        let dir = self.layout().run_dir(run_id)?;
        ensure_dir(&dir)?;
        ensure_dir(&dir.join(ARTIFACTS_DIR))?;
        let manifest = ManifestOut::new(
            run_id,
            session,
            crate::time::format_rfc3339_millis(SystemTime::now()),
            ProducerOut {
                source: source.as_str().to_owned(),
                pid: std::process::id(),
            },
            self.config.artifact_budget_bytes,
            self.config.journal_budget_bytes,
        );
        manifest.write(&dir.join(MANIFEST_FILE))?;
        let read_back = Manifest::read(&dir.join(MANIFEST_FILE))?.unwrap_or_default();
        let run = self.open_run(run_id, session, source, &read_back)?;
        run.append_marker(MarkerKind::RunStarted {
            pid: std::process::id(),
        })?;
        Ok(run)
    }

    fn open_run(
        &self,
        run_id: &str,
        session: &str,
        source: &Source,
        manifest: &Manifest,
    ) -> Result<Run, Error> {
        let dir = self.layout().run_dir(run_id)?;
        Ok(Run::open(RunInner {
            id: run_id.to_owned(),
            session: session.to_owned(),
            journal: Journal::new(&dir, manifest.journal_file()),
            dir,
            source: source.clone(),
            config: Arc::clone(&self.config),
            sessions: self.sessions.clone(),
            seen_running: std::sync::Mutex::new(None),
            // Every producer applies the budget the run's creator fixed.
            journal_budget: manifest
                .journal_budget_bytes
                .unwrap_or(self.config.journal_budget_bytes),
            journal_truncated: std::sync::atomic::AtomicBool::new(false),
            refused: std::sync::Mutex::default(),
        }))
    }

    /// The run directory of `run_id`, checked to be a real directory inside the root.
    pub fn run_dir(&self, run_id: &str) -> Result<PathBuf, Error> {
        if !self.config.enabled {
            return Err(Error::Disabled);
        }
        let dir = self.layout().run_dir(run_id)?;
        check_real_dir(&self.layout().runs_dir())
            .and_then(|()| check_real_dir(&dir))
            .map_err(|e| match e {
                Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                    Error::RunNotFound {
                        run_id: run_id.to_owned(),
                        path: self.layout().runs_dir(),
                    }
                }
                other => other,
            })?;
        Ok(dir)
    }

    /// Reads a run's manifest.
    pub fn read_manifest(&self, run_id: &str) -> Result<Manifest, Error> {
        let dir = self.run_dir(run_id)?;
        Manifest::read(&dir.join(MANIFEST_FILE))?.ok_or_else(|| Error::RunNotFound {
            run_id: run_id.to_owned(),
            path: dir,
        })
    }

    /// Reads a run's journal (the file its manifest names, `actions.jsonl` by default).
    /// A legacy run without a manifest is read from `actions.jsonl`.
    pub fn read_journal(&self, run_id: &str) -> Result<JournalRead, Error> {
        let dir = self.run_dir(run_id)?;
        let manifest = Manifest::read(&dir.join(MANIFEST_FILE))?.unwrap_or_default();
        let path = dir.join(manifest.journal_file());
        let file = match no_follow(OpenOptions::new().read(true)).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JournalRead::default()),
            Err(e) => return Err(open_error("cannot open journal", &path, e)),
        };
        read_journal_from(BufReader::new(file)).map_err(|e| Error::io("cannot read", &path, e))
    }

    /// Resolves an `artifacts` entry of a record to a file inside the run, refusing anything
    /// that is not `artifacts/<name>` with a safe name, or that is a symlink. The path is checked
    /// when this returns; to read an artifact without a window between check and open, use
    /// [`crate::RunDir::artifact`].
    pub fn artifact_path(&self, run_id: &str, relative: &str) -> Result<PathBuf, Error> {
        let dir = self.run_dir(run_id)?;
        let name = relative
            .strip_prefix(ARTIFACTS_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(|| Error::confinement(relative, "is not under artifacts/"))?;
        validate_id("artifact name", name)?;
        check_real_dir(&dir.join(ARTIFACTS_DIR))?;
        let path = dir.join(ARTIFACTS_DIR).join(name);
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| Error::io("cannot inspect artifact", &path, e))?;
        if !meta.is_file() {
            return Err(Error::confinement(path, "is not a regular file"));
        }
        Ok(path)
    }

    pub(crate) fn layout_for_retention(&self) -> &Layout {
        self.layout()
    }
}

cdp_sanitize::words! {
    /// The words legacy producers (no `evidenceVersion`) used for a finished run.
    enum LegacyFinished {
        /// `completed`.
        Completed = "completed",
        /// `complete`.
        Complete = "complete",
        /// `done`.
        Done = "done",
        /// `closed`.
        Closed = "closed",
    }
}

/// Finalized by this format, or by a legacy producer that used another word for it.
pub(crate) fn is_finished(m: &Manifest) -> bool {
    match m.status_word() {
        Some(Word::Known(RunStatus::Finalized)) => true,
        Some(Word::Other(w)) => m.is_legacy() && LegacyFinished::parse(w).is_some(),
        _ => false,
    }
}
