//! A document the page left before its typing was read.
//!
//! A form submitted with Enter, or a click that navigates while readings still wait their turn,
//! replaces the document typed into before the relay asks its page agent about the typing; the
//! agent's record of it would go with its world. As a navigation away from the document starts
//! (`beforeunload`), the agent hands the relay what a reading needs (`sealed()` in `agent.js`):
//! the unread segments of its
//! last seconds and their fields as they were at that moment — the inserted text and the
//! field's value, in this process's memory only; a sensitive field's count only. The readings
//! of the page pass it back as an argument into the next document's agent (the same page, the
//! relay's own connection), which judges it the same way it judges its own segments.
//!
//! Never printed, serialized to anything but that argument, or logged; kept for [`KEEP`] at
//! most, its segments forgotten as readings take them, and replaced by the next document's.

use serde::Deserialize;
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// How long the handover is kept: a reading is asked for within the typing gap and waits a few
/// seconds at most.
pub(crate) const KEEP: Duration = Duration::from_secs(10);

/// What the agent sends (`{t: "sealed", installedAt, fields, segs}`), typed text inside.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Sealed {
    #[serde(default)]
    installed_at: f64,
    /// The document's origin (`location.origin`; `null` for an opaque one).
    #[serde(default)]
    origin: String,
    #[serde(default)]
    fields: Vec<Value>,
    #[serde(default)]
    segs: Vec<Value>,
}

/// The handover of the page's last left document.
pub(crate) struct Left {
    received: SystemTime,
    sealed: Sealed,
}

impl Left {
    pub(crate) fn new(sealed: Sealed, received: SystemTime) -> Left {
        Left { received, sealed }
    }

    /// Still kept at `now`, with a segment no reading took.
    pub(crate) fn live(&self, now: SystemTime) -> bool {
        now.duration_since(self.received).unwrap_or_default() <= KEEP
            && self.sealed.segs.iter().any(|s| !s.is_null())
    }

    /// Whether a document of `origin` (an execution context's) may be handed this: only the
    /// same origin, never an opaque one — the typing of one site never enters another site's
    /// renderer, even in an isolated world.
    pub(crate) fn same_origin(&self, origin: &str) -> bool {
        self.sealed.origin == origin && origin.contains("://") && origin != "://"
    }

    /// The argument for the agent's reading.
    pub(crate) fn argument(&self) -> Value {
        serde_json::json!({
            "installedAt": self.sealed.installed_at,
            "fields": self.sealed.fields,
            "segs": self.sealed.segs,
        })
    }

    /// A reading took the segments of ids `took` (here or in the document itself, before it
    /// was left): no other reading may take them again. `id@end` is a segment taken up to `end`
    /// (its text after that is another step's).
    pub(crate) fn taken(&mut self, took: &[String]) {
        for t in took {
            let (id, end) = match t.rsplit_once('@') {
                Some((id, end)) => (id, end.parse::<u64>().ok()),
                None => (t.as_str(), None),
            };
            for s in &mut self.sealed.segs {
                if s.get("id").and_then(Value::as_str) != Some(id) {
                    continue;
                }
                match end {
                    Some(end) => s["taken"] = Value::from(end),
                    None => *s = Value::Null,
                }
            }
        }
    }
}

impl std::fmt::Debug for Left {
    /// Counts only, never what was typed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Left")
            .field("fields", &self.sealed.fields.len())
            .field("segments", &self.sealed.segs.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn left(at: SystemTime) -> Left {
        let sealed: Sealed = serde_json::from_value(serde_json::json!({
            "installedAt": 5.5,
            "origin": "https://a.example",
            "fields": [{"connected": true, "rich": false, "value": "Typed1Secret"}],
            "segs": [{"id": "a/1", "field": 0, "data": "Typed1Secret"}, {"id": "a/2", "field": 0, "data": "x"}],
        }))
        .unwrap();
        Left::new(sealed, at)
    }

    #[test]
    fn segments_taken_are_not_handed_over_again_and_the_handover_expires() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut l = left(t0);
        assert!(l.live(t0 + KEEP));
        assert!(!l.live(t0 + KEEP + Duration::from_millis(1)));
        l.taken(&["a/1".into(), "b/9".into(), "a/2@1".into()]);
        let arg = l.argument();
        assert_eq!(arg["segs"][0], Value::Null);
        assert_eq!(arg["segs"][1]["data"], "x");
        assert_eq!(
            arg["segs"][1]["taken"], 1,
            "taken up to its first character"
        );
        assert_eq!(arg["installedAt"], 5.5);
        l.taken(&["a/2".into()]);
        assert!(!l.live(t0), "nothing left to read");
    }

    #[test]
    fn a_handover_goes_to_a_document_of_its_own_origin_only() {
        let l = left(SystemTime::UNIX_EPOCH);
        assert!(l.same_origin("https://a.example"));
        for other in ["https://b.example", "http://a.example", "://", "null", ""] {
            assert!(!l.same_origin(other), "{other}");
        }
    }

    #[test]
    fn debug_shows_counts_only() {
        let l = left(SystemTime::UNIX_EPOCH);
        let d = format!("{l:?}");
        assert!(!d.contains("Typed1Secret"), "{d}");
        assert!(d.contains("segments: 2"), "{d}");
    }
}
