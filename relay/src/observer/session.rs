//! Per-connection and per-CDP-session state: which endpoint a connection is, which target a
//! flattened session drives, and the typing burst in progress.

use cdp_evidence::Action;
use cdp_sanitize::{InputSummary, InputType, SafeJson, SafeText, Sanitizer};
use std::time::SystemTime;

/// What a websocket path points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/devtools/browser/<id>`.
    Browser,
    /// `/devtools/page/<id>` (pages, workers and other targets share this form).
    Target(String),
    /// Anything else under `/devtools/`.
    Other,
}

impl Endpoint {
    pub(crate) fn from_path(path: &str) -> Endpoint {
        let path = path.split('?').next().unwrap_or(path);
        let mut parts = path.trim_start_matches('/').split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("devtools"), Some("browser"), _) => Endpoint::Browser,
            (Some("devtools"), Some(_), Some(id)) if !id.is_empty() => {
                Endpoint::Target(id.to_owned())
            }
            _ => Endpoint::Other,
        }
    }

    /// The target id a page-level connection drives (memory only).
    pub(crate) fn target_id(&self) -> Option<&str> {
        match self {
            Endpoint::Target(id) => Some(id),
            _ => None,
        }
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Endpoint::Browser => "browser endpoint",
            Endpoint::Target(_) => "target endpoint",
            Endpoint::Other => "devtools endpoint",
        }
    }
}

/// One CDP session on a connection (the root session has key `None`).
pub(crate) struct Session {
    /// The raw target id, when known. Memory only: records carry the sanitized `target`.
    pub(crate) target_id: Option<String>,
    /// Sanitized, allowlisted target metadata for records.
    pub(crate) target: Option<SafeJson>,
    pub(crate) typing: Option<Burst>,
    pub(crate) last_frame: Option<SystemTime>,
}

impl Session {
    pub(crate) fn new(target_id: Option<String>, target: Option<SafeJson>) -> Session {
        Session {
            target_id,
            target,
            typing: None,
            last_frame: None,
        }
    }
}

/// Consecutive keystrokes and insertions on one session, reported as one typing step.
pub(crate) struct Burst {
    pub(crate) seq: u64,
    started: SystemTime,
    pub(crate) last: SystemTime,
    answered_at: SystemTime,
    summary: InputSummary,
    /// The typed text, kept in memory only to register it for echo protection.
    typed: String,
    commands: u64,
    pub(crate) outstanding: usize,
    error: Option<SafeText>,
    target: Option<SafeJson>,
}

impl Burst {
    pub(crate) fn new(seq: u64, at: SystemTime, target: Option<SafeJson>) -> Burst {
        Burst {
            seq,
            started: at,
            last: at,
            answered_at: at,
            summary: InputSummary::of("", InputType::Unknown),
            typed: String::new(),
            commands: 0,
            outstanding: 0,
            error: None,
            target,
        }
    }

    pub(crate) fn add(&mut self, text: &str, at: SystemTime) {
        self.summary.extend(text);
        // Bounded: echo protection needs the literal, not an unbounded buffer.
        if self.typed.len() < 4096 {
            self.typed.push_str(text);
        }
        self.commands += 1;
        self.outstanding += 1;
        self.last = at;
    }

    pub(crate) fn answered(&mut self, error: Option<SafeText>, at: SystemTime) {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.answered_at = at;
        if self.error.is_none() {
            self.error = error;
        }
    }

    /// Registers what was typed so a later echo of it (console, errors, URLs) is masked.
    pub(crate) fn register_echo(&self, sanitizer: &Sanitizer) {
        sanitizer.register_typed(&self.typed);
    }

    /// (action, started, ended, error, target); the typed text stays behind and is dropped.
    pub(crate) fn into_parts(
        self,
        sanitizer: &Sanitizer,
    ) -> (
        Action,
        SystemTime,
        SystemTime,
        Option<SafeText>,
        Option<SafeJson>,
    ) {
        let mut action = Action::new(SafeText::literal("type"));
        action.input = Some(self.summary);
        action.detail = Some(sanitizer.json(&serde_json::json!({ "commands": self.commands })));
        let ended = self.answered_at.max(self.last);
        (action, self.started, ended, self.error, self.target)
    }

    /// Number of commands in the burst.
    #[cfg(test)]
    pub(crate) fn commands(&self) -> u64 {
        self.commands
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            Endpoint::from_path("/devtools/browser/abc"),
            Endpoint::Browser
        );
        assert_eq!(
            Endpoint::from_path("/devtools/page/ABC?x=1"),
            Endpoint::Target("ABC".into())
        );
        assert_eq!(Endpoint::from_path("/devtools/page/"), Endpoint::Other);
        assert_eq!(Endpoint::from_path("/json"), Endpoint::Other);
    }

    #[test]
    fn burst_counts_characters_only() {
        let t0 = SystemTime::UNIX_EPOCH;
        let mut b = Burst::new(1, t0, None);
        b.add("hé", t0);
        b.add("llo", t0);
        assert_eq!(b.commands(), 2);
        let (action, ..) = b.into_parts(&Sanitizer::new());
        let input = action.input.expect("input summary");
        assert_eq!(input.chars(), 5);
        assert_eq!(input.input_type(), InputType::Unknown);
    }
}
