//! Typed-text readings: queued per page, one at a time, each in a task of its own; every way a
//! reading cannot run is answered at once as a note.

use super::{Browser, Done};
use crate::direct::verify::{self, VerifyReply, VerifyRequest};

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

    pub(super) fn next_verify(&mut self, session: &str) {
        loop {
            let Some(page) = self.sessions.pages.get_mut(session) else {
                return;
            };
            if page.verifying {
                return;
            }
            let Some(req) = page.verify_queue.pop_front() else {
                return;
            };
            let chars = req.chars;
            let why = if page.dialog {
                Some("a JavaScript dialog is open")
            } else if page.crashed {
                Some("the page crashed")
            } else if page.world.is_none() {
                Some("the relay's page agent is not running in that page")
            } else {
                None
            };
            if let Some(why) = why {
                self.reply(VerifyReply::unread(req.burst, chars, why));
                continue;
            }
            let Some(world) = page.world else {
                continue;
            };
            page.verifying = true;
            let cdp = self.cdp.clone();
            let done = self.done_tx.clone();
            let t = self.opts.verify_timeout;
            let session = session.to_owned();
            self.in_flight += 1;
            tokio::spawn(async move {
                let reply = verify::run(&cdp, &session, world, req, t).await;
                let _ = done.send(Done::Verified { session, reply }).await;
            });
            return;
        }
    }
}
