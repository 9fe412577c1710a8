//! Typed-text readings: queued per page, one at a time, each in a task of its own; every way a
//! reading cannot run is answered as a note.
//!
//! A reading runs in the page's current document, with what the document before it handed over
//! when the page left it (`left.rs`): typing into a form submitted with Enter is read there.
//! Between documents (no agent world) readings wait for the next one, at most [`WORLD_WAIT`];
//! a reading whose document went away under it is tried once more, once the handover or the
//! next document's agent came in (or that wait passed).

use super::{Browser, Done};
use crate::direct::sessions::Hold;
use crate::direct::verify::{self, Place, Reading, VerifyReply, VerifyRequest};
use std::time::{Duration, Instant, SystemTime};

/// How long readings wait for the agent of a page's next document (and a reading whose
/// document went away, for what the agent handed over as it left).
const WORLD_WAIT: Duration = Duration::from_millis(1500);

impl Browser<'_> {
    pub(super) fn reply(&self, reply: VerifyReply) {
        // The traffic reader stops waiting on its own if this is lost.
        let _ = self.ctx.verify_tx.try_send(reply);
    }

    pub(super) fn verify(&mut self, req: VerifyRequest) {
        let Some(session) = self.sessions.by_target.get(&req.target_id).cloned() else {
            return self.reply(VerifyReply::unread(
                req.burst,
                req.chars,
                "the observer has no session on that page",
            ));
        };
        if let Some(page) = self.sessions.pages.get_mut(&session) {
            page.verify_queue.push_back(req);
        }
        self.next_verify(&session);
    }

    /// A reading ended: its verdict goes to the traffic reader, or it is read again.
    pub(super) fn read(&mut self, session: &str, reading: Reading) {
        let page = self.sessions.pages.get_mut(session);
        match (reading, page) {
            (
                Reading::Done {
                    reply,
                    took,
                    recheck,
                },
                page,
            ) => {
                if let Some(left) = page.and_then(|p| p.left.as_mut()) {
                    left.taken(&took);
                }
                match recheck {
                    // Read again in a task of its own: the page's next reading need not wait.
                    Some(again) => {
                        let cdp = self.cdp.clone();
                        let done = self.done_tx.clone();
                        let t = self.opts.verify_timeout;
                        let session = session.to_owned();
                        self.in_flight += 1;
                        tokio::spawn(async move {
                            let reply = verify::recheck(&cdp, &session, again, reply, t).await;
                            let _ = done.send(Done::Rechecked(reply)).await;
                        });
                    }
                    None => self.reply(reply),
                }
            }
            (Reading::Again(req, world), Some(page)) => {
                // In the next document's world: its agent reads what the one it replaced handed
                // over as the page left it.
                page.hold = Some(Hold {
                    until: Instant::now() + WORLD_WAIT,
                    lost: Some(world),
                });
                page.verify_queue.push_front(req);
            }
            (Reading::Again(req, _), None) => self.reply(VerifyReply::unread(
                req.burst,
                req.chars,
                "the page closed before the reading",
            )),
        }
    }

    /// Runs the page's next reading if none is running and it can run now.
    pub(super) fn next_verify(&mut self, session: &str) {
        loop {
            let Some(page) = self.sessions.pages.get_mut(session) else {
                return;
            };
            if page.verifying {
                return;
            }
            let Some(started_at) = page.verify_queue.front().map(|r| r.started_at) else {
                page.hold = None;
                return;
            };
            let why = if page.dialog {
                Some("a JavaScript dialog is open")
            } else if page.crashed {
                Some("the page crashed")
            } else {
                None
            };
            if let Some(why) = why {
                if let Some(req) = page.verify_queue.pop_front() {
                    self.reply(VerifyReply::unread(req.burst, req.chars, why));
                }
                continue;
            }
            let now = Instant::now();
            let now_sys = SystemTime::now();
            if let Some(hold) = page.hold {
                let next = page.world.filter(|w| Some(*w) != hold.lost);
                if next.is_none() && now < hold.until {
                    return;
                }
                page.hold = None;
            }
            let Some(world) = page.world else {
                if !std::mem::take(&mut page.waited) {
                    page.hold = Some(Hold {
                        until: now + WORLD_WAIT,
                        lost: None,
                    });
                    page.waited = true;
                    return;
                }
                // Waited for the next document's agent in vain: every reading queued says so.
                let unread: Vec<VerifyRequest> = page.verify_queue.drain(..).collect();
                for req in unread {
                    self.reply(VerifyReply::unread(
                        req.burst,
                        req.chars,
                        "the relay's page agent is not running in that page",
                    ));
                }
                return;
            };
            page.waited = false;
            let Some(req) = page.verify_queue.pop_front() else {
                return;
            };
            let left = page
                .left
                .as_ref()
                .filter(|l| l.live(now_sys) && l.same_origin(&page.world_origin))
                .map(|l| l.argument());
            let document_left = page.worlds > 1 && page.world_since.is_some_and(|s| s > started_at);
            page.verifying = true;
            let cdp = self.cdp.clone();
            let done = self.done_tx.clone();
            let t = self.opts.verify_timeout;
            let session = session.to_owned();
            self.in_flight += 1;
            tokio::spawn(async move {
                let place = Place {
                    session: &session,
                    world,
                    left,
                    document_left,
                };
                let reading = verify::run(&cdp, place, req, t).await;
                let _ = done.send(Done::Verified { session, reading }).await;
            });
            return;
        }
    }

    /// When the next held reading's wait ends, if one is held.
    pub(super) fn next_reading_due(&self) -> Option<Instant> {
        self.sessions
            .pages
            .values()
            .filter(|p| !p.verify_queue.is_empty() && !p.verifying)
            .filter_map(|p| p.hold.map(|h| h.until))
            .min()
    }

    /// Readings whose wait is over run (or are answered).
    pub(super) fn readings_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .sessions
            .pages
            .iter()
            .filter(|(_, p)| p.hold.is_some_and(|h| h.until <= now))
            .map(|(s, _)| s.clone())
            .collect();
        for session in due {
            self.next_verify(&session);
        }
    }
}
