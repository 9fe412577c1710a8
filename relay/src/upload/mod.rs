//! Evidence to object storage: finalized runs uploaded whole to `<prefix>/<runId>/…`, manifest
//! last, in the background.
//!
//! The [`Uploader`] owns everything about it: a thread of its own with its own small runtime
//! (uploads never share a worker with forwarding), the queue, each run's state sidecar
//! (`state.rs`), and the counters the status API and metrics read ([`UploadsHandle`]). It is
//! handed runs in exactly three ways: "this run was finalized" ([`Uploader::finalized`]), "look
//! for pending runs" ([`Uploader::scan`]: at start, and before exit; the uploader itself scans
//! after each `scan_interval` it spends idle), and, for short-lived commands, [`upload_run`]
//! directly.
//!
//! Requests are retried in one place only, the store client ([`MAX_RETRIES`] and the policy
//! beside it). The uploader does not retry: an attempt that failed leaves the run `failed` in
//! its sidecar (with the attempt counted), and the next scan finds it and uploads it again whole
//! — at least `scan_interval` later while the relay runs, at the next start, or by `cdp-relay
//! upload`.
//!
//! It never touches a run that is not finalized, never deletes anything (retention does, and
//! asks [`UploadHold`] first), and never logs a credential or a record.

mod bucket;
mod run;
mod state;
mod target;

pub use bucket::{fetch_run, list_runs, RemoteListing, RemoteRun};
pub use run::{upload_run, Attempt, RunOptions};
pub use state::{read as read_state, RunUpload, UploadHold, UploadState, STATE_FILE};
pub use target::{Target, BACKOFF_FIRST, BACKOFF_MAX, MAX_RETRIES, RETRY_WINDOW};

/// The bucket's manifest reader, for the fuzz targets (`fuzz/fuzz_targets/bucket_manifest.rs`).
/// The `fuzzing` feature only.
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    pub use super::bucket::listed_files;
}

use crate::config::UploadSettings;
use crate::Error;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How often the sidecar of an uploaded run is written again while the disk refuses it.
const RECORD_RETRY: Duration = Duration::from_secs(2);

/// The host name recorded with uploads: a pod's name in Kubernetes.
pub fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_graphic()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// What `/relay/v1/status` shows under `uploads`, and metrics count.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadStatus {
    /// `s3://bucket/prefix`.
    pub target: String,
    /// Runs waiting (queued, uploading, or failed and waiting for the next scan).
    pub pending: usize,
    /// Of those, runs whose last attempt failed.
    pub failing: usize,
    /// The run being uploaded now.
    pub uploading: Option<String>,
    /// Runs uploaded by this process.
    pub uploaded_runs: u64,
    /// Bytes uploaded by this process.
    pub uploaded_bytes: u64,
    /// Runs skipped by `--upload-only-failed`.
    pub skipped_runs: u64,
    /// Failed attempts so far.
    pub failed_attempts: u64,
    /// The runs not uploaded yet, with their last error (at most 20).
    pub runs: Vec<PendingRun>,
}

/// A run the uploader still has to upload.
/// Where a run the uploader still has to upload stands (`state` in the status API).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PendingState {
    /// Waiting for its turn.
    Pending,
    /// Being uploaded now.
    Uploading,
    /// The last attempt failed; it is tried again.
    Failed,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRun {
    /// The run id.
    pub run_id: String,
    /// Where it stands.
    pub state: PendingState,
    /// Attempts so far.
    pub attempts: u32,
    /// Why the last one failed.
    pub last_error: Option<String>,
}

#[derive(Default)]
struct Shared {
    target: String,
    runs: Mutex<BTreeMap<String, PendingRun>>,
    uploaded_runs: AtomicU64,
    uploaded_bytes: AtomicU64,
    skipped_runs: AtomicU64,
    failed_attempts: AtomicU64,
}

impl Shared {
    fn runs(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, PendingRun>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, run_id: &str, state: PendingState, attempts: u32, last_error: Option<String>) {
        self.runs().insert(
            run_id.to_owned(),
            PendingRun {
                run_id: run_id.to_owned(),
                state,
                attempts,
                last_error,
            },
        );
    }
}

/// A cheap handle on the uploader's counters, for the status API and metrics.
#[derive(Clone)]
pub struct UploadsHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for UploadsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadsHandle")
            .field("target", &self.shared.target)
            .finish_non_exhaustive()
    }
}

impl UploadsHandle {
    /// Where uploads stand now.
    pub fn status(&self) -> UploadStatus {
        let s = &self.shared;
        let runs = s.runs();
        UploadStatus {
            target: s.target.clone(),
            pending: runs.len(),
            failing: runs
                .values()
                .filter(|r| r.state == PendingState::Failed)
                .count(),
            uploading: runs
                .values()
                .find(|r| r.state == PendingState::Uploading)
                .map(|r| r.run_id.clone()),
            uploaded_runs: s.uploaded_runs.load(Relaxed),
            uploaded_bytes: s.uploaded_bytes.load(Relaxed),
            skipped_runs: s.skipped_runs.load(Relaxed),
            failed_attempts: s.failed_attempts.load(Relaxed),
            runs: runs.values().take(20).cloned().collect(),
        }
    }
}

/// What [`Uploader::finish`] reports.
#[derive(Clone, Debug, Default)]
pub struct FinishReport {
    /// Runs uploaded (or skipped by policy) while finishing.
    pub done: usize,
    /// Runs left for the next start (their sidecar says pending or failed).
    pub left: Vec<String>,
}

enum Msg {
    Run(PathBuf),
    Scan,
    Check(oneshot::Sender<Result<(), Error>>),
    Finish(Instant, oneshot::Sender<FinishReport>),
}

/// The background uploader of one evidence root (see the module docs).
pub struct Uploader {
    tx: mpsc::UnboundedSender<Msg>,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Uploader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uploader")
            .field("target", &self.shared.target)
            .finish_non_exhaustive()
    }
}

impl Uploader {
    /// Builds the store client and starts the uploader's thread. Contacts nothing yet: call
    /// [`Uploader::check`] to refuse a bucket that cannot be written.
    pub fn start(settings: &UploadSettings, root: &Path) -> Result<Uploader, Error> {
        let target = Target::new(settings)?;
        let shared = Arc::new(Shared {
            target: target.display().to_owned(),
            ..Shared::default()
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let worker = Worker {
            target,
            root: root.to_path_buf(),
            opts: RunOptions {
                only_failed: settings.only_failed,
                host: host_name(),
                source: "relay",
            },
            shared: shared.clone(),
            scan_interval: settings.scan_interval.max(Duration::from_secs(1)),
            queue: VecDeque::new(),
            current: None,
            done_while_finishing: 0,
            unrecorded: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("cdp-relay-upload".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                match rt {
                    Ok(rt) => rt.block_on(worker.run(rx)),
                    Err(e) => {
                        tracing::warn!("upload: cannot start its runtime ({e}); runs stay local")
                    }
                }
            })
            .map_err(|e| Error::Upload {
                target: shared.target.clone(),
                reason: format!("cannot start the upload thread: {e}"),
            })?;
        Ok(Uploader {
            tx,
            shared,
            thread: Some(thread),
        })
    }

    /// Proves the bucket takes writes (the relay refuses to start if not). Bounded by the
    /// settings' check timeout.
    pub async fn check(&self) -> Result<(), Error> {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Check(reply));
        rx.await.unwrap_or_else(|_| {
            Err(Error::Upload {
                target: self.shared.target.clone(),
                reason: "the upload thread stopped".into(),
            })
        })
    }

    /// The counters, for the status API and metrics.
    pub fn handle(&self) -> UploadsHandle {
        UploadsHandle {
            shared: self.shared.clone(),
        }
    }

    /// Hands over a run that was just finalized: it is marked pending (so retention keeps it)
    /// and uploaded in the background.
    pub fn finalized(&self, run_dir: &Path) {
        self.send(Msg::Run(run_dir.to_path_buf()));
    }

    /// Queues every finalized run of the evidence root that is not uploaded yet (after a
    /// restart, or runs other producers finalized).
    pub fn scan(&self) {
        self.send(Msg::Scan);
    }

    /// Finishes what is queued, until `deadline`; what is left stays pending for the next
    /// start (or `cdp-relay upload`).
    pub async fn finish(mut self, deadline: Instant) -> FinishReport {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Finish(deadline, reply));
        let report = rx.await.unwrap_or_default();
        if let Some(t) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
        report
    }

    fn send(&self, msg: Msg) {
        // A stopped thread already said why; the runs stay local and pending.
        let _ = self.tx.send(msg);
    }
}

struct Worker {
    target: Target,
    root: PathBuf,
    opts: RunOptions,
    shared: Arc<Shared>,
    /// How long the uploader stays idle before it scans the evidence root.
    scan_interval: Duration,
    /// Runs to try now, in order.
    queue: VecDeque<PathBuf>,
    /// The run being uploaded now.
    current: Option<PathBuf>,
    done_while_finishing: usize,
    /// Runs uploaded whose sidecar could not say so (a full disk): written again every
    /// [`RECORD_RETRY`] until it can, so retention may then prune them.
    unrecorded: Vec<(PathBuf, RunUpload)>,
}

impl Worker {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        let mut finishing: Option<(Instant, oneshot::Sender<FinishReport>)> = None;
        // The evidence root is scanned once the uploader has been idle for `scan_interval` (the
        // caller's scan at start comes as a message): a run that failed waits at least that
        // long before it is tried again.
        let mut next_scan = Instant::now() + self.scan_interval;
        loop {
            self.record_pending();
            if finishing.is_some() && self.queue.is_empty() {
                break;
            }
            let deadline = finishing.as_ref().map(|(d, _)| *d);
            let Some(dir) = self.queue.pop_front() else {
                if finishing.is_none() && Instant::now() >= next_scan {
                    self.scan();
                    next_scan = Instant::now() + self.scan_interval;
                    continue;
                }
                // While finishing, no more scans: what fails now is left for the next start.
                let scan_at = finishing.is_none().then_some(next_scan);
                let record_at =
                    (!self.unrecorded.is_empty()).then(|| Instant::now() + RECORD_RETRY);
                let wake = match (scan_at, record_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                tokio::select! {
                    msg = rx.recv() => match msg {
                        Some(m) => self.handle(m, &mut finishing).await,
                        None => return,
                    },
                    () = sleep_until(wake) => {}
                    () = sleep_until(deadline) => break,
                }
                continue;
            };
            let attempt = {
                let target = self.target.clone();
                let opts = self.opts.clone();
                let dir = dir.clone();
                async move { upload_run(&target, &dir, &opts).await }
            };
            let id = run::run_id_of(&dir).unwrap_or_default();
            let attempts = self.shared.runs().get(&id).map_or(0, |r| r.attempts);
            self.shared
                .set(&id, PendingState::Uploading, attempts + 1, None);
            self.current = Some(dir.clone());
            tokio::pin!(attempt);
            let outcome = loop {
                tokio::select! {
                    r = &mut attempt => break Some(r),
                    msg = rx.recv() => match msg {
                        Some(m) => self.handle(m, &mut finishing).await,
                        None => return,
                    },
                    () = sleep_until(finishing.as_ref().map(|(d, _)| *d)) => break None,
                }
            };
            self.current = None;
            next_scan = Instant::now() + self.scan_interval;
            match outcome {
                Some(r) => self.settle(dir, &id, r, finishing.is_some()),
                // Out of time: the attempt is dropped mid-way; its sidecar says pending or
                // failed, so the next start uploads it again from the start.
                None => {
                    self.queue.push_front(dir);
                    break;
                }
            }
        }
        if let Some((_, reply)) = finishing {
            let mut left: Vec<String> = self.shared.runs().keys().cloned().collect();
            left.sort();
            let _ = reply.send(FinishReport {
                done: self.done_while_finishing,
                left,
            });
        }
    }

    async fn handle(
        &mut self,
        msg: Msg,
        finishing: &mut Option<(Instant, oneshot::Sender<FinishReport>)>,
    ) {
        match msg {
            Msg::Run(dir) => {
                self.enqueue(dir, true);
            }
            Msg::Scan => self.scan(),
            Msg::Check(reply) => {
                let _ = reply.send(self.target.check_writable(&self.opts.host).await);
            }
            Msg::Finish(deadline, reply) => *finishing = Some((deadline, reply)),
        }
    }

    /// Queues a run unless it is already queued or uploading; `false` when it was.
    /// `mark` writes its pending state first, so retention holds it whatever else happens.
    fn enqueue(&mut self, dir: PathBuf, mark: bool) -> bool {
        let Ok(id) = run::run_id_of(&dir) else {
            return false;
        };
        let known = self
            .queue
            .iter()
            .chain(self.current.as_ref())
            .any(|d| d == &dir);
        if known {
            return false;
        }
        if mark && matches!(state::read(&dir), Ok(None)) {
            let pending = RunUpload::pending(self.target.run_url(&id));
            if let Err(e) = state::write(&dir, &pending) {
                tracing::warn!("upload: cannot mark run {id} pending ({e}); it is uploaded anyway");
            }
        }
        let attempts = self.shared.runs().get(&id).map_or(0, |r| r.attempts);
        if attempts == 0 {
            self.shared.set(&id, PendingState::Pending, 0, None);
        }
        self.queue.push_back(dir);
        true
    }

    /// Every finalized run not uploaded yet, oldest first.
    fn scan(&mut self) {
        let store = match cdp_evidence::Store::open(cdp_evidence::EvidenceConfig::at(&self.root)) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("upload: cannot look for pending runs: {e}");
                return;
            }
        };
        let runs = match store.list_runs() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("upload: cannot look for pending runs: {e}");
                return;
            }
        };
        let mut found = 0;
        for run in runs {
            if run.legacy || run.status != cdp_evidence::RunStatus::Finalized {
                continue;
            }
            let Ok(dir) = store.run_dir(&run.id) else {
                continue;
            };
            if matches!(state::read(&dir), Ok(Some(s)) if s.state.is_done()) {
                continue;
            }
            // Runs already waiting (failed, or busy elsewhere) are queued again without a word.
            let waiting = self.shared.runs().contains_key(&run.id);
            if self.enqueue(dir, false) && !waiting {
                found += 1;
            }
        }
        if found > 0 {
            tracing::info!(
                "upload: {found} finalized run(s) not uploaded yet; uploading them to {}",
                self.target.display()
            );
        }
    }

    /// Writes the sidecars the disk refused before; keeps those it still refuses.
    fn record_pending(&mut self) {
        self.unrecorded
            .retain(|(dir, st)| dir.is_dir() && state::write(dir, st).is_err());
    }

    fn settle(&mut self, dir: PathBuf, id: &str, outcome: Result<Attempt, Error>, finishing: bool) {
        let s = &self.shared;
        match outcome {
            Ok(Attempt::Done(st)) => {
                s.runs().remove(id);
                if !matches!(state::read(&dir), Ok(Some(ref r)) if r.state == st.state) {
                    self.unrecorded.push((dir.clone(), st.clone()));
                }
                if finishing {
                    self.done_while_finishing += 1;
                }
                match st.state {
                    UploadState::Skipped => {
                        s.skipped_runs.fetch_add(1, Relaxed);
                        tracing::info!("upload: run {id} recorded no failure; not uploaded (--upload-only-failed)");
                    }
                    _ => {
                        s.uploaded_runs.fetch_add(1, Relaxed);
                        s.uploaded_bytes.fetch_add(st.bytes.unwrap_or(0), Relaxed);
                        tracing::info!(
                            "upload: run {id} uploaded to {} ({} files, {} bytes)",
                            st.target,
                            st.files.unwrap_or(0),
                            st.bytes.unwrap_or(0)
                        );
                    }
                }
            }
            Ok(Attempt::Busy) => {
                // Someone else is uploading it; the next scan looks again in case they die.
                s.set(id, PendingState::Pending, 0, None);
            }
            Ok(Attempt::AlreadyDone(_)) => {
                s.runs().remove(id);
            }
            Ok(Attempt::NotFinalized(why)) => {
                s.runs().remove(id);
                tracing::debug!("upload: run {id} not uploaded: {why}");
            }
            Err(e) => {
                s.failed_attempts.fetch_add(1, Relaxed);
                // Counted in memory: the sidecar may not be writable (a full disk).
                let attempts = s.runs().get(id).map_or(1, |r| r.attempts.max(1));
                let reason = run::reason_of(&e);
                // The store client already retried each request; the run waits for the next
                // scan (none while finishing: then it is left for the next start).
                let next = if finishing {
                    "next try at the next start".to_owned()
                } else {
                    format!("next try in {} s or later", self.scan_interval.as_secs())
                };
                tracing::warn!(
                    "upload: run {id} failed (attempt {attempts}): {reason}; it stays local, {next}"
                );
                s.set(id, PendingState::Failed, attempts, Some(reason));
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_runs_state_is_written_as_the_status_api_words() {
        let words = [
            PendingState::Pending,
            PendingState::Uploading,
            PendingState::Failed,
        ]
        .map(|s| serde_json::to_value(s).unwrap());
        assert_eq!(words, ["pending", "uploading", "failed"]);
    }

    #[test]
    fn host_name_is_printable() {
        let h = host_name();
        assert!(!h.is_empty() && h.chars().all(|c| c.is_ascii_graphic()));
    }
}
