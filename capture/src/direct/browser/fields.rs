//! Field readings for a tool call whose text no key carried (`direct/fields.rs`): the pages
//! the call acted on, found by handle among the observer's sessions, read in a task of their
//! own; a page without the agent's world is left out.

use super::Browser;
use crate::direct::fields::{self, FieldRequest};

impl Browser<'_> {
    pub(super) fn read_fields(&mut self, req: FieldRequest) {
        let sanitizer = &self.ctx.sanitizer;
        let pages: Vec<(String, i64)> = self
            .sessions
            .by_target
            .iter()
            .filter(|(target, _)| {
                let handle = sanitizer.handle(target);
                req.pages.iter().any(|p| p == handle.as_str())
            })
            .filter_map(|(_, session)| {
                let page = self.sessions.pages.get(session)?;
                let world = page.world.filter(|_| !page.dialog && !page.crashed)?;
                Some((session.clone(), world))
            })
            .collect();
        let cdp = self.cdp.clone();
        let t = self.opts.verify_timeout;
        tokio::spawn(async move { fields::run(&cdp, pages, req, t).await });
    }
}
