//! When the observer takes a frame of a page: wants (why, when, the failures waiting), the
//! capture policy at due time, taking it in a task of its own, and what the records say when no
//! frame could be kept. Failures wait for a frame they may have, bounded in time.

use super::{Browser, Done};
use crate::pipeline::active::frames::{self, After, NoFrame, Shot, Want};
use crate::pipeline::active::TOOL;
use crate::pipeline::capture::Withheld;
use crate::pipeline::{Emit, NewArtifact, Trigger};
use cdp_evidence::{Action, ActionDetail, ActionMethod, Record, RecordKind, Status};
use cdp_sanitize::SafeText;
use std::time::{Duration, Instant, SystemTime};

/// Failure records one frame may hold back; more are written at once, without a frame.
const MAX_GROUP: usize = 64;

/// How long failures typed over wait for a frame of the next document before they are written
/// without one.
const PARKED: Duration = Duration::from_secs(60);

impl Browser<'_> {
    /// Asks for a frame of the page behind `session`, `delay` from now (joining a frame already
    /// wanted); `record` waits for it.
    pub(super) async fn want(
        &mut self,
        session: &str,
        after: After,
        delay: Duration,
        record: Option<Record>,
    ) {
        let cooldown = self.opts.frame_cooldown;
        let Some(page) = self.pages.get_mut(session) else {
            if let Some(r) = record {
                self.write(vec![Emit::Record(r)]).await;
            }
            return;
        };
        let want = page.want_frame(after, delay, cooldown);
        if let Some(r) = record {
            if want.group.len() < MAX_GROUP {
                want.group.push(r);
            } else {
                self.write(vec![Emit::Record(r)]).await;
            }
        }
    }

    /// A failure the passive observer recorded on a page this observer does not cover yet: it
    /// waits for the page's next frame, or is written now when there is no session to take one.
    pub(super) async fn passive_failure(&mut self, target: &str, record: Record) {
        tracing::trace!(
            "observer: a failure recorded by the passive observer; it waits for a frame"
        );
        match self.by_target.get(target).cloned() {
            Some(session) => {
                let delay = self.opts.failure_debounce;
                self.want(&session, After::Failure, delay, Some(record))
                    .await;
            }
            None => self.write(vec![Emit::Record(record)]).await,
        }
    }

    pub(super) fn trigger(&mut self, t: Trigger) {
        let (target, after) = match t {
            Trigger::Clicked {
                target_id: Some(t), ..
            } => (t, After::Click),
            // Failures on pages the observer covers are its own; others still get a frame.
            Trigger::FailureSeen {
                target_id: Some(t), ..
            } if !self.ctx.once.covered(&t) => (t, After::Failure),
            _ => return,
        };
        let Some(session) = self.by_target.get(&target).cloned() else {
            return;
        };
        let cooldown = self.opts.frame_cooldown;
        let delay = match after {
            After::Click => self.opts.after_click,
            _ => self.opts.failure_debounce,
        };
        if let Some(page) = self.pages.get_mut(&session) {
            page.want_frame(after, delay, cooldown);
        }
    }

    /// When the next want (or navigation without a load) needs attention.
    pub(super) fn next_due(&self) -> Instant {
        let far = Instant::now() + Duration::from_secs(3600);
        self.pages
            .values()
            .filter_map(|p| {
                let want = p.want.as_ref().filter(|_| !p.capturing).map(|w| w.due);
                let load = p.loading_since.map(|s| s + self.opts.load_wait);
                match (want, load) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            })
            .min()
            .unwrap_or(far)
            .min(far)
    }

    /// Takes the frames that are due.
    pub(super) async fn due(&mut self) {
        let now = Instant::now();
        let now_sys = SystemTime::now();
        let sessions: Vec<String> = self.pages.keys().cloned().collect();
        for session in sessions {
            let Some(page) = self.pages.get_mut(&session) else {
                continue;
            };
            if page
                .loading_since
                .is_some_and(|s| s + self.opts.load_wait <= now)
            {
                // Committed but never loaded (a slow or hanging resource): a frame anyway.
                page.loading_since = None;
                self.want(&session, After::Navigation, Duration::ZERO, None)
                    .await;
            }
            let Some(page) = self.pages.get_mut(&session) else {
                continue;
            };
            if page.capturing || page.want.as_ref().is_none_or(|w| w.due > now) {
                continue;
            }
            let target = page.target_id.clone();
            if !self.draining {
                if let Some(until) = self.ctx.capture.quiet_until(&target, now_sys) {
                    // Never a frame right after typing: wait until the page has been quiet.
                    if let Some(w) = page.want.as_mut() {
                        w.due = frames::instant_of(until, now_sys, now);
                    }
                    continue;
                }
            }
            let Some(want) = page.want.take() else {
                continue;
            };
            if !self.ctx.capture.screenshots_on() {
                self.write(want.group.into_iter().map(Emit::Record).collect())
                    .await;
                continue;
            }
            let blocked = if page.crashed {
                Some(NoFrame::Failed("the page crashed".into()))
            } else if page.dialog {
                Some(NoFrame::Failed("a JavaScript dialog is open".into()))
            } else {
                match self.ctx.capture.verdict_at(&target, now_sys) {
                    Ok(()) => None,
                    Err(w) => {
                        self.withheld(&session, &target, want, w, now_sys, Duration::ZERO)
                            .await;
                        continue;
                    }
                }
            };
            if let Some(no) = blocked {
                self.no_frame(&target, want, no, now_sys, Duration::ZERO)
                    .await;
                continue;
            }
            page.capturing = true;
            let world = page.world;
            let cdp = self.cdp.clone();
            let done = self.done_tx.clone();
            let size = self.opts.frame_size();
            let t = self.opts.command_timeout;
            let give_up = self.give_up.clone();
            self.in_flight += 1;
            tokio::spawn(async move {
                let started = SystemTime::now();
                let outcome = tokio::select! {
                    outcome = frames::take(&cdp, &session, world, size, t) => outcome,
                    _ = give_up.cancelled() => Err(NoFrame::Failed(
                        "the page gave no frame before the relay stopped".into(),
                    )),
                };
                let _ = done
                    .send(Done::Frame {
                        session,
                        want,
                        outcome,
                        started,
                    })
                    .await;
            });
        }
    }

    /// No frame for `want`: its failures are written without one, and the frame record (when
    /// it would have had one) says why.
    pub(super) async fn no_frame(
        &mut self,
        target: &str,
        want: Want,
        no: NoFrame,
        started: SystemTime,
        took: Duration,
    ) {
        let mut action = Action::new(ActionMethod::Frame);
        let mut detail = ActionDetail {
            after: Some(want.detail_after()),
            ..ActionDetail::default()
        };
        let (status, error) = match &no {
            NoFrame::Withheld(w) => {
                detail.screenshot_withheld = Some(w.reason().to_owned());
                (Status::Info, None)
            }
            NoFrame::Failed(why) => (Status::Error, Some(self.ctx.sanitizer.error(why))),
        };
        action.detail = Some(detail.sanitized(&self.ctx.sanitizer));
        let mut r = Record::new(SafeText::literal(TOOL), RecordKind::Action(action))
            .started_at(started)
            .duration(took)
            .status(status)
            .target(self.meta.target(target, &self.ctx.sanitizer));
        if let Some(e) = error {
            r = r.error(e);
        }
        tracing::trace!(
            "observer: no frame; {} waiting failures written without one",
            want.group.len()
        );
        let mut batch: Vec<Emit> = want.group.into_iter().map(Emit::Record).collect();
        batch.push(Emit::Record(r));
        self.write(batch).await;
    }

    pub(super) async fn frame_done(
        &mut self,
        session: &str,
        want: Want,
        outcome: Result<Shot, NoFrame>,
        started: SystemTime,
    ) {
        let took = SystemTime::now()
            .duration_since(started)
            .unwrap_or_default();
        let Some(page) = self.pages.get_mut(session) else {
            let batch = want.group.into_iter().map(Emit::Record).collect();
            self.write(batch).await;
            return;
        };
        page.capturing = false;
        page.last_frame = Some(Instant::now());
        let target = page.target_id.clone();
        let shot = match outcome {
            // Typing that began while the frame was taken makes it a frame right after typing.
            Ok(shot) => match self.ctx.capture.verdict_at(&target, SystemTime::now()) {
                Ok(()) => shot,
                Err(w) => {
                    return self
                        .withheld(session, &target, want, w, started, took)
                        .await
                }
            },
            Err(NoFrame::Withheld(w)) => {
                return self
                    .withheld(session, &target, want, w, started, took)
                    .await
            }
            Err(no) => return self.no_frame(&target, want, no, started, took).await,
        };
        // The frame record says when the frame was taken (a failure's frame may come after a
        // navigation, of the next document); the failures waiting for it name it too.
        let mut action = Action::new(ActionMethod::Frame);
        action.bytes = Some(shot.bytes.len() as u64);
        let detail = ActionDetail {
            after: Some(want.detail_after()),
            width: Some(u64::from(shot.width)),
            height: Some(u64::from(shot.height)),
            ..ActionDetail::default()
        };
        action.detail = Some(detail.sanitized(&self.ctx.sanitizer));
        let mut records = vec![
            Record::new(SafeText::literal(TOOL), RecordKind::Action(action))
                .started_at(started)
                .duration(took)
                .status(Status::Info)
                .target(self.meta.target(&target, &self.ctx.sanitizer)),
        ];
        tracing::trace!(
            "observer: frame taken; {} waiting failures written with it",
            want.group.len()
        );
        records.extend(want.group);
        self.write(vec![Emit::Shared {
            records,
            artifact: NewArtifact {
                stem: "frame",
                ext: "jpeg",
                bytes: shot.bytes,
            },
        }])
        .await;
    }

    /// A frame the policy withheld. Failures keep waiting for one they may have — after quiet,
    /// once the sensitive field loses focus, in the next document — for at most [`PARKED`];
    /// anything else is written now, saying why.
    pub(super) async fn withheld(
        &mut self,
        session: &str,
        target: &str,
        want: Want,
        w: Withheld,
        started: SystemTime,
        took: Duration,
    ) {
        let waits = !want.group.is_empty() && !self.draining && want.born.elapsed() < PARKED;
        if !waits || w == Withheld::ScreenshotsOff {
            return self
                .no_frame(target, want, NoFrame::Withheld(w), started, took)
                .await;
        }
        let now = Instant::now();
        let due = match w {
            Withheld::JustTyped => {
                let now_sys = SystemTime::now();
                self.ctx
                    .capture
                    .quiet_until(target, now_sys)
                    .map_or(now, |u| frames::instant_of(u, now_sys, now))
            }
            Withheld::SensitiveFocus => now + self.opts.frame_cooldown,
            // Until the next navigation takes the want over.
            Withheld::TypedSinceNavigation | Withheld::ScreenshotsOff => want.born + PARKED,
        };
        self.requeue(session, want, due).await;
    }

    /// Puts a want whose frame could not be kept back on its page, merged with any newer one;
    /// its failures are written now when the page has gone meanwhile.
    async fn requeue(&mut self, session: &str, mut want: Want, due: Instant) {
        let Some(page) = self.pages.get_mut(session) else {
            self.write(want.group.into_iter().map(Emit::Record).collect())
                .await;
            return;
        };
        if let Some(newer) = page.want.take() {
            for a in newer.after {
                want.add_after(a);
            }
            want.group.extend(newer.group);
        }
        want.due = due;
        page.want = Some(want);
    }
}
