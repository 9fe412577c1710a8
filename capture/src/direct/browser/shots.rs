//! When the observer takes a frame of a page: the wants the page model keeps (why, when, the
//! failures waiting — `pages/frames.rs`), the capture policy at due time, taking it in a task of
//! its own, and what the records say when no frame could be kept. Failures wait for a frame
//! they may have, bounded in time.

use super::{Browser, Done};
use crate::direct::frames::{self, NoFrame, Shot};
use crate::direct::TOOL;
use crate::pages::veto::Withheld;
use crate::pages::{instant_of, After, Due, Want};
use crate::{Emit, NewArtifact};
use cdp_evidence::{Action, ActionDetail, ActionMethod, Record, RecordKind, Status};
use cdp_sanitize::SafeText;
use std::time::{Duration, Instant, SystemTime};

/// How long failures typed over wait for a frame of the next document before they are written
/// without one.
const PARKED: Duration = Duration::from_secs(60);

impl Browser<'_> {
    /// When the next want (or navigation without a load) needs attention.
    pub(super) fn next_due(&self) -> Instant {
        let far = Instant::now() + Duration::from_secs(3600);
        let wants = self.ctx.pages.next_want_due();
        let loads = self
            .sessions
            .pages
            .values()
            .filter_map(|p| p.loading_since.map(|s| s + self.opts.load_wait));
        loads
            .chain(wants)
            .chain(self.next_reading_due())
            .min()
            .unwrap_or(far)
            .min(far)
    }

    /// Takes the frames that are due.
    pub(super) async fn due(&mut self) {
        let now = Instant::now();
        let now_sys = SystemTime::now();
        let sessions: Vec<String> = self.sessions.pages.keys().cloned().collect();
        for session in sessions {
            let Some(page) = self.sessions.pages.get_mut(&session) else {
                continue;
            };
            let target = page.target_id.clone();
            if page
                .loading_since
                .is_some_and(|s| s + self.opts.load_wait <= now)
            {
                // Committed but never loaded (a slow or hanging resource): a frame anyway.
                page.loading_since = None;
                self.ctx
                    .pages
                    .want_frame(&target, After::Navigation, Duration::ZERO);
            }
            let (crashed, dialog, world) = (page.crashed, page.dialog, page.world);
            let Due::Take(want) = self
                .ctx
                .pages
                .due_frame(&target, now, now_sys, self.draining)
            else {
                continue;
            };
            if !self.ctx.pages.screenshots_on() {
                self.write(want.group.into_iter().map(Emit::Record).collect())
                    .await;
                continue;
            }
            let blocked = if crashed {
                Some(NoFrame::Failed("the page crashed".into()))
            } else if dialog {
                Some(NoFrame::Failed("a JavaScript dialog is open".into()))
            } else {
                None
            };
            if let Some(no) = blocked {
                self.no_frame(&target, want, no, now_sys, Duration::ZERO)
                    .await;
                continue;
            }
            if let Err(w) = self.ctx.pages.start_frame(&target, now_sys) {
                self.withheld(&target, want, w, now_sys, Duration::ZERO)
                    .await;
                continue;
            }
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
            .target(self.ctx.pages.target(target));
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
        let Some(page) = self.sessions.pages.get(session) else {
            let batch = want.group.into_iter().map(Emit::Record).collect();
            self.write(batch).await;
            return;
        };
        let target = page.target_id.clone();
        if outcome.is_ok() {
            // The veto must see every keystroke forwarded before now: the passive thread
            // registers them, and under load it lags behind the check made when the frame
            // was started (a frame was kept 900 ms after typing).
            self.ctx.order.caught_up().await;
        }
        self.ctx.pages.frame_done(&target);
        let shot = match outcome {
            // Judged again with every keystroke known: as of when the frame was started (typing
            // just before, or while it was taken) and as of now (a sensitive field focused).
            Ok(shot) => match self
                .ctx
                .pages
                .verdict_at(&target, started)
                .and_then(|()| self.ctx.pages.verdict_at(&target, SystemTime::now()))
            {
                Ok(()) => shot,
                Err(w) => return self.withheld(&target, want, w, started, took).await,
            },
            Err(NoFrame::Withheld(w)) => {
                return self.withheld(&target, want, w, started, took).await
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
                .target(self.ctx.pages.target(&target)),
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
    /// anything else is written now, saying why: the frame a click or a navigation wanted is
    /// recorded as withheld even while failures wait on (after a password,
    /// a click's frame vanished into a frame of the next document, and no record said it was
    /// withheld).
    pub(super) async fn withheld(
        &mut self,
        target: &str,
        mut want: Want,
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
        if want.after.iter().any(|a| *a != After::Failure) {
            let mut told = Want::new(Instant::now());
            told.after = want.after.clone();
            told.after.retain(|a| *a != After::Failure);
            want.after.retain(|a| *a == After::Failure);
            self.no_frame(target, told, NoFrame::Withheld(w), started, took)
                .await;
        }
        let now = Instant::now();
        let due = match w {
            Withheld::JustTyped => {
                let now_sys = SystemTime::now();
                self.ctx
                    .pages
                    .quiet_until(target, now_sys)
                    .map_or(now, |u| instant_of(u, now_sys, now))
            }
            Withheld::SensitiveFocus => now + self.opts.frame_cooldown,
            // Until the next navigation takes the want over.
            Withheld::TypedSinceNavigation
            | Withheld::NamedValueShown
            | Withheld::ScreenshotsOff => want.born + PARKED,
        };
        // Back on its page, merged with any newer want; written now if the page has gone.
        if let Some(want) = self.ctx.pages.requeue(target, want, due) {
            self.write(want.group.into_iter().map(Emit::Record).collect())
                .await;
        }
    }
}
