//! The writer thread itself: the one owner of the [`Run`]. Appends batches in order (artifacts
//! stored first), says losses in the journal once a write succeeds again, follows the session
//! into its next run when this one ends under it, and finalizes, renders and prunes at the end.

use super::{Appended, CurrentRun, Emit, Health, Msg, NewArtifact, WriterSummary};
use crate::calls::ToolCalls;
use crate::pages::Pages;
use cdp_evidence::{
    ArtifactOutcome, DropReason, JoinAs, Marker, Record, RecordKind, Run, RunEnded, Store, Totals,
};
use cdp_sanitize::{SafeText, Sanitizer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

/// Disk space each run keeps for its own finalize (markers and manifest), freed at finalize.
const RESERVE_BYTES: usize = 64 * 1024;

/// At the end, how often and how long apart a failing finalize is tried again.
const FINALIZE_TRIES: u32 = 3;
const FINALIZE_PAUSE: Duration = Duration::from_millis(250);

/// Keeps the run's finalize space (best effort: without it, finalize needs free space).
pub(super) fn reserve(run: &Run) {
    if let Err(e) = run.reserve_space(RESERVE_BYTES) {
        tracing::debug!("evidence: no space reserve for run {}: {e}", run.id());
    }
}

pub(super) struct Writer {
    pub(super) store: Store,
    pub(super) session: String,
    pub(super) run: Run,
    pub(super) current: Arc<Mutex<CurrentRun>>,
    pub(super) failures: Arc<AtomicU64>,
    pub(super) health: Arc<Health>,
    pub(super) sanitizer: Arc<Sanitizer>,
    pub(super) pages: Arc<Pages>,
    /// Agent tool calls, for linking records to the call they happened during.
    pub(super) calls: ToolCalls,
    /// The owner's step after a run is finalized (the relay renders its report).
    pub(super) finalized: Option<super::Finalized>,
    /// Told each batch written and each run's end (the relay's spans).
    pub(super) observer: Option<Arc<dyn super::WriteObserver>>,
    /// Losses not yet said in the journal: (pieces, why).
    pub(super) unsaid: Vec<(u64, DropReason)>,
    /// Pieces said in `evidenceDropped` markers so far.
    pub(super) said: u64,
    /// Records appended to the current run (what its deletion would cost).
    pub(super) appended: u64,
    /// Writes are failing now.
    pub(super) outage: bool,
}

impl Writer {
    pub(super) fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        while let Some(msg) = rx.blocking_recv() {
            match msg {
                Msg::Batch(batch) => self.write(batch),
                Msg::External { records, reply } => {
                    let _ = reply.send(self.write_external(records));
                }
                Msg::Finish { dropped, reply } => {
                    // Producers finished before asking; anything still queued is theirs too.
                    while let Ok(msg) = rx.try_recv() {
                        match msg {
                            Msg::Batch(batch) => self.write(batch),
                            Msg::External { records, reply } => {
                                let _ = reply.send(self.write_external(records));
                            }
                            Msg::Sync { .. } | Msg::Finish { .. } => {}
                        }
                    }
                    let _ = reply.send(self.finish(dropped));
                    return;
                }
                Msg::Sync { rotate, reply } => {
                    let done = if rotate { self.rotate() } else { None };
                    let _ = reply.send(done);
                }
            }
        }
        // Every handle is gone without a finish request (an error path): still finalize.
        self.finish(0);
    }

    /// Appends records in order; consecutive plain records share one journal lock. Repeats
    /// whose fold closed go along.
    fn write(&mut self, mut batch: Vec<Emit>) {
        for emit in &mut batch {
            match emit {
                Emit::Record(r) | Emit::WithArtifact { record: r, .. } => self.calls.link(r),
                Emit::Shared { records, .. } => records.iter_mut().for_each(|r| self.calls.link(r)),
            }
        }
        let mut plain: Vec<Record> = Vec::with_capacity(batch.len());
        for emit in batch {
            match emit {
                Emit::Record(r) => plain.push(r),
                Emit::WithArtifact { record, artifact } => {
                    // Keep the journal in order: earlier records before the artifact's record.
                    self.append(&mut plain);
                    let record = match self.store_artifact(&artifact) {
                        Some(a) => record.artifact(a),
                        None => record,
                    };
                    plain.push(record);
                }
                Emit::Shared { records, artifact } => {
                    self.append(&mut plain);
                    let stored = self.store_artifact(&artifact);
                    plain.extend(records.into_iter().map(|r| match &stored {
                        Some(a) => r.artifact(a.clone()),
                        None => r,
                    }));
                }
            }
        }
        plain.extend(self.pages.take_closed(SystemTime::now()));
        self.append(&mut plain);
    }

    /// Appends `records` (and, first, any loss not yet said); on failure counts them as lost.
    fn append(&mut self, records: &mut Vec<Record>) {
        if records.is_empty() {
            return;
        }
        if let Err(e) = self.try_append(records) {
            self.failed("append to the journal", &e, records.len() as u64);
        }
        records.clear();
    }

    /// One write of `records`, with any loss not yet said before them; once more in the
    /// session's next run if this one ended under the writer (then says why it moved).
    /// `records` is left as it was.
    fn try_append(
        &mut self,
        records: &mut Vec<Record>,
    ) -> Result<Option<RunEnded>, cdp_evidence::Error> {
        let mut moved = None;
        loop {
            let markers = self.unsaid_markers();
            let said: u64 = self.unsaid.iter().map(|(n, _)| n).sum();
            let n_markers = markers.len();
            let appended = if n_markers == 0 {
                // The common case: the records where they are (moving each record into a
                // second batch and back cost an eighth of the writer's instructions).
                let appended = self.run.append_all(records);
                if appended.is_ok() {
                    self.observe(records);
                }
                appended
            } else {
                // Markers first, in the same write: a loss is said only with what follows it.
                let mut batch = markers;
                batch.append(records);
                let appended = self.run.append_all(&batch);
                if appended.is_ok() {
                    self.observe(&batch);
                }
                // Give the records back (the markers are rebuilt from `unsaid` on a retry).
                records.extend(batch.drain(n_markers..));
                appended
            };
            match appended {
                Ok(n) => {
                    self.appended += n as u64;
                    if n_markers > 0 {
                        self.said += said;
                        self.unsaid.clear();
                    }
                    self.recovered(said);
                    return Ok(moved);
                }
                Err(e) => match e.run_ended() {
                    Some(ended) if moved.is_none() && self.rejoin(ended) => moved = Some(ended),
                    _ => return Err(e),
                },
            }
        }
    }

    fn observe(&self, written: &[Record]) {
        if let Some(o) = &self.observer {
            o.written(self.run_ref(), written);
        }
    }

    fn run_ref(&self) -> super::RunRef<'_> {
        super::RunRef {
            id: self.run.id(),
            dir: self.run.dir(),
        }
    }

    /// A batch from a producer outside the pipeline: one write, in order with what was queued
    /// before it. The outcome goes back to the producer, so a failure is not counted as the
    /// relay's loss.
    fn write_external(
        &mut self,
        mut records: Vec<Record>,
    ) -> Result<Appended, cdp_evidence::Error> {
        let rejoined = if records.is_empty() {
            None
        } else {
            self.try_append(&mut records)?
        };
        Ok(Appended {
            run_id: self.run.id().to_owned(),
            rejoined,
        })
    }

    /// `evidenceDropped` markers for the losses not said yet.
    fn unsaid_markers(&self) -> Vec<Record> {
        self.unsaid
            .iter()
            .map(|&(n, why)| {
                Record::new(
                    SafeText::literal("cdp-evidence"),
                    RecordKind::Marker(Marker::evidence_lost(n, why)),
                )
            })
            .collect()
    }

    fn store_artifact(&mut self, a: &NewArtifact) -> Option<cdp_evidence::ArtifactRef> {
        let mut outcome = self.run.store_artifact(a.stem, a.ext, &a.bytes);
        let retry = match &outcome {
            Err(e) => e.run_ended().is_some_and(|ended| self.rejoin(ended)),
            _ => false,
        };
        if retry {
            outcome = self.run.store_artifact(a.stem, a.ext, &a.bytes);
        }
        match outcome {
            Ok(ArtifactOutcome::Stored(r)) => Some(r),
            Ok(_) => None,
            Err(e) => {
                self.failed("store an artifact", &e, 1);
                None
            }
        }
    }

    /// `lost` pieces could not be written: counted, said in the journal at the next write that
    /// succeeds, shown by the status API meanwhile, logged once per outage.
    fn failed(&mut self, what: &str, e: &cdp_evidence::Error, lost: u64) {
        self.failures.fetch_add(lost, Ordering::Relaxed);
        match self
            .unsaid
            .iter_mut()
            .find(|(_, r)| *r == DropReason::WriteFailed)
        {
            Some((n, _)) => *n += lost,
            None if lost > 0 => self.unsaid.push((lost, DropReason::WriteFailed)),
            None => {}
        }
        // Evidence errors name paths and OS errors, never record contents.
        Health::set(&self.health.failing, Some(format!("cannot {what}: {e}")));
        if !self.outage {
            self.outage = true;
            tracing::warn!(
                "evidence: cannot {what} ({e}); the relay keeps forwarding; what cannot be written is counted and the run will say so"
            );
        }
    }

    /// A write succeeded: an outage, if there was one, is over; `said` pieces it lost were
    /// just said in the journal.
    fn recovered(&mut self, said: u64) {
        if !self.outage {
            return;
        }
        self.outage = false;
        Health::set(&self.health.failing, None);
        let line = format!(
            "{said} pieces of evidence could not be written; the journal of run {} says so",
            self.run.id()
        );
        tracing::info!("evidence: writing again; {line}");
        Health::set(&self.health.last_loss, Some(line));
    }

    /// The run ended under the writer (docs/evidence-format.md, *When writing fails*):
    /// continue in the session's next run. A deleted run took its records with it: say so once,
    /// and let the next run's journal record the loss.
    fn rejoin(&mut self, ended: RunEnded) -> bool {
        let (old_id, old_dir, lost) = (
            self.run.id().to_owned(),
            self.run.dir().to_path_buf(),
            self.appended,
        );
        let Some(run) = self.join_next() else {
            return false;
        };
        if let Some(o) = &self.observer {
            o.ended(self.run_ref(), false);
        }
        match ended {
            RunEnded::Finalized => tracing::info!(
                "evidence: run {old_id} was finalized by another producer; continuing in run {}",
                run.id()
            ),
            RunEnded::Deleted => {
                let line = format!(
                    "cannot write to run {old_id}: its directory {} was deleted while recording, with its {lost} records; continuing in run {}",
                    old_dir.display(),
                    run.id()
                );
                tracing::warn!("evidence: {line}");
                Health::set(&self.health.last_loss, Some(line));
                if lost > 0 {
                    self.failures.fetch_add(lost, Ordering::Relaxed);
                    self.unsaid.push((lost, DropReason::RunDeleted));
                }
            }
        }
        self.switch_to(run);
        true
    }

    /// The session's next run; a failure is counted and said like any failed write.
    fn join_next(&mut self) -> Option<Run> {
        match self.store.join_as(&self.session, "relay", JoinAs::Owner) {
            Ok(run) => Some(run),
            Err(e) => {
                self.failed("join the session's next run", &e, 0);
                None
            }
        }
    }

    fn switch_to(&mut self, run: Run) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = CurrentRun {
            id: run.id().to_owned(),
            dir: run.dir().to_path_buf(),
        };
        reserve(&run);
        self.run = run;
        self.appended = 0;
    }

    /// Finalize → the owner's step (render) → prune, then join the session's next run for what comes after.
    fn rotate(&mut self) -> Option<WriterSummary> {
        let summary = self.finish(0);
        let run = self.join_next()?;
        self.switch_to(run);
        Some(summary)
    }

    /// Writes the last folds, then finalize → the owner's step (render) → prune.
    fn finish(&mut self, dropped_elsewhere: u64) -> WriterSummary {
        let mut folds = self.pages.take_all();
        self.append(&mut folds);
        let failed = self.failures.load(Ordering::Relaxed);
        let totals = Totals {
            dropped_evidence: dropped_elsewhere + failed,
            dropped_recorded: self.said,
            redactions: Some(self.sanitizer.summary()),
        };
        let finalized = self.finalize(&totals);
        if let (true, Some(then)) = (finalized, &self.finalized) {
            then(self.run.dir());
        }
        if let Some(o) = &self.observer {
            o.ended(self.run_ref(), finalized);
        }
        // Retention: keep the newest finalized runs; running and legacy runs are never touched.
        match self.store.prune() {
            Ok(report) => tracing::debug!("evidence: retention: {report:?}"),
            Err(e) => tracing::warn!("evidence: retention could not prune old runs: {e}"),
        }
        WriterSummary {
            run_dir: self.run.dir().to_path_buf(),
            failed_writes: failed,
            finalized,
        }
    }

    /// Finalizes, trying again briefly when the disk is full; says in one line what to do when
    /// it cannot.
    fn finalize(&mut self, totals: &Totals) -> bool {
        let mut last = None;
        for attempt in 0..FINALIZE_TRIES {
            if attempt > 0 {
                std::thread::sleep(FINALIZE_PAUSE * attempt);
            }
            match self.run.finalize(totals.clone()) {
                Ok(()) => return true,
                Err(e) if e.run_ended() == Some(RunEnded::Deleted) => {
                    tracing::warn!(
                        "evidence: run {} was deleted while recording ({} is gone); there is nothing to finalize",
                        self.run.id(),
                        self.run.dir().display()
                    );
                    Health::set(
                        &self.health.last_loss,
                        Some(format!("run {} was deleted while recording", self.run.id())),
                    );
                    return false;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            Health::set(&self.health.failing, Some(format!("cannot finalize: {e}")));
            tracing::warn!(
                "evidence: could not finalize run {} ({e}); it stays running: once there is space, \
                 `cdp-relay evidence finalize --session {} --dropped {}` finalizes it",
                self.run.id(),
                self.session,
                totals.dropped_evidence.saturating_sub(totals.dropped_recorded),
            );
        }
        false
    }
}
