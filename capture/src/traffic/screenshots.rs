//! A client's own pictures of the page: `Page.captureScreenshot` results and sampled
//! `Page.screencastFrame`s, kept as artifacts unless the capture policy withholds them.

use super::{Key, TrafficReader, TOOL};
use crate::cdp::frame::Frame;
use crate::cdp::params as cdp;
use crate::pages::veto::Withheld;
use crate::{Emit, NewArtifact};
use cdp_evidence::{Action, ActionDetail, ActionMethod, Record, RecordKind, Status};
use cdp_sanitize::{SafeJson, SafeText, Sanitizer};
use std::time::SystemTime;

impl TrafficReader {
    /// The image of a successful `Page.captureScreenshot` response, to keep as an artifact;
    /// `None` when it is withheld (the action then says why) or malformed.
    pub(super) fn screenshot_bytes(
        &self,
        action: &mut Action,
        frame: &Frame<'_>,
        withheld: Option<Withheld>,
    ) -> Option<Vec<u8>> {
        let data = frame
            .result::<cdp::Data>()
            .map(|d| d.data)
            .unwrap_or_default();
        let bytes = decode_base64(&data);
        action.bytes = bytes.as_ref().map(|b| b.len() as u64);
        if let Some(w) = withheld {
            action.detail = Some(withheld_detail(&self.sanitizer, w));
            return None;
        }
        bytes
    }

    /// A screencast frame: at most one per session per `screencast_every`, unless withheld.
    pub(super) fn screencast(&mut self, conn: u64, key: &Key, frame: &Frame<'_>, at: SystemTime) {
        if self
            .pages
            .verdict_at(&self.typing_key(conn, key), at)
            .is_err()
        {
            return;
        }
        let every = self.opts.screencast_every;
        let Some(session) = self
            .conns
            .get_mut(&conn)
            .and_then(|c| c.sessions.get_mut(key))
        else {
            return;
        };
        if session
            .last_frame
            .is_some_and(|last| at.duration_since(last).unwrap_or_default() < every)
        {
            return;
        }
        session.last_frame = Some(at);
        let Some(bytes) = frame
            .params::<cdp::Data>()
            .and_then(|d| decode_base64(&d.data))
        else {
            return;
        };
        let mut action = Action::new(ActionMethod::PageScreencastFrame);
        action.bytes = Some(bytes.len() as u64);
        let mut record = Record::new(SafeText::literal(TOOL), RecordKind::Action(action))
            .started_at(at)
            .status(Status::Info);
        if let Some(t) = self.target_for(conn, key) {
            record = record.target(t);
        }
        self.out.emits.push(Emit::WithArtifact {
            record,
            artifact: NewArtifact {
                stem: "screencast",
                ext: "jpeg",
                bytes,
            },
        });
    }
}

fn withheld_detail(sanitizer: &Sanitizer, why: Withheld) -> SafeJson {
    let detail = ActionDetail {
        screenshot_withheld: Some(why.reason().to_owned()),
        ..ActionDetail::default()
    };
    detail.sanitized(sanitizer)
}

/// Decodes CDP's base64 image data; `None` for anything malformed or empty.
pub(super) fn decode_base64(data: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .ok()?;
    (!bytes.is_empty()).then_some(bytes)
}
