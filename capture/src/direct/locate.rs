//! Where a click or a typing step went: the page agent's locators (`agent.js`, *Locators*).
//!
//! The agent takes one when an element receives a trusted `pointerdown` and when typing starts
//! in an element, and reports it over its binding at once, so a navigation the step causes cannot
//! lose it. The direct reader hands it on, raw, over the in-memory channel to the traffic reader,
//! which picks the report in a step's time window and sanitizes it into the step's
//! `payload.target` ([`RawLocator::sanitized`]) only then, after every keystroke forwarded before
//! the step was registered. Text that held anything typed in the run, or anything else the
//! sanitizer redacts, is never recorded: the step is not replayable instead.

use cdp_evidence::Locator;
use cdp_sanitize::{SafeText, Sanitizer};
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// Longest text a locator member may have (the agent cuts names at 80 characters); a longer
/// one is not recorded.
const MAX_CHARS: usize = 256;

/// Why a step is not replayable when its locator held typed text.
pub(crate) const TYPED_TEXT: &str = "the element's name contains typed text";
/// … when it held other text the sanitizer redacts.
const REDACTED: &str = "the element's name contains text the relay redacts";

/// When the agent took the locator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moment {
    /// The element received a trusted `pointerdown`.
    Hit,
    /// Typing started in the element.
    Typed,
}

/// A locator as the page agent reported it: page text, raw, memory only. `Debug` names the
/// members present, never their text.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawLocator {
    #[serde(default)]
    test_id: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    placeholder: Option<String>,
    #[serde(default)]
    css: Option<String>,
    #[serde(default)]
    frame: Option<String>,
    /// The agent's word for why there is none (`no-locator`, `nested-frame`, …).
    #[serde(default)]
    why: Option<String>,
}

impl std::fmt::Debug for RawLocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let present = [
            ("testId", &self.test_id),
            ("role", &self.role),
            ("name", &self.name),
            ("label", &self.label),
            ("placeholder", &self.placeholder),
            ("css", &self.css),
            ("frame", &self.frame),
            ("why", &self.why),
        ];
        let names: Vec<&str> = present
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(n, _)| *n)
            .collect();
        write!(f, "RawLocator({})", names.join(", "))
    }
}

/// What the agent's `why` words stand for; an unknown word reads as `error`.
fn agent_why(word: &str) -> &'static str {
    match word {
        "no-locator" => {
            "no test id, role and name, label, placeholder or short CSS path picks out the element alone"
        }
        "no-element" => "the click hit no element",
        "nested-frame" => "the element is inside a frame inside a frame",
        "unnamed-frame" => "no selector picks out the frame the element is in",
        _ => "the relay's page agent could not describe the element",
    }
}

impl RawLocator {
    /// The locator to record: each member's text through the run's sanitizer, unchanged, or
    /// not replayable (typed text, a redaction, an empty or over-long member).
    pub(crate) fn sanitized(&self, s: &Sanitizer) -> Locator {
        if let Some(word) = &self.why {
            return Locator::not_replayable(SafeText::literal(agent_why(word)));
        }
        let clean = |t: &str| -> Result<SafeText, &'static str> { clean(s, t) };
        let one = || -> Result<Locator, &'static str> {
            let found = if let Some(id) = &self.test_id {
                Locator::test_id(clean(id)?)
            } else if let (Some(role), Some(name)) = (&self.role, &self.name) {
                Locator::role(clean(role)?, clean(name)?)
            } else if let Some(label) = &self.label {
                Locator::label(clean(label)?)
            } else if let Some(p) = &self.placeholder {
                Locator::placeholder(clean(p)?)
            } else if let Some(css) = &self.css {
                Locator::css(clean(css)?)
            } else {
                return Err(agent_why(""));
            };
            Ok(match &self.frame {
                Some(frame) => found.in_frame(clean(frame)?),
                None => found,
            })
        };
        one().unwrap_or_else(|why| Locator::not_replayable(SafeText::literal(why)))
    }
}

/// `t` sanitized, if the sanitizer leaves it as it is.
fn clean(s: &Sanitizer, t: &str) -> Result<SafeText, &'static str> {
    if t.trim().is_empty() || t.chars().count() > MAX_CHARS {
        return Err(agent_why(""));
    }
    let safe = s.text_capped(t, MAX_CHARS);
    if safe.as_str() == t {
        Ok(safe)
    } else if safe.as_str().contains("${TYPED_") {
        Err(TYPED_TEXT)
    } else {
        Err(REDACTED)
    }
}

/// A locator the agent reported, with the page and the moment.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// The page (raw target id, memory only).
    pub(crate) target_id: String,
    /// When the agent took it.
    pub(crate) at: SystemTime,
    pub(crate) moment: Moment,
    pub(crate) locator: RawLocator,
}

/// The agent's time (wall-clock milliseconds) of a report received at `received`. On one machine
/// the clocks agree; a browser far off (more than a second: another host) is taken at the
/// report's arrival.
pub(crate) fn agent_time(ms: f64, received: SystemTime) -> SystemTime {
    let at = (ms.is_finite() && ms > 0.0)
        .then(|| SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs_f64(ms / 1000.0)))
        .flatten();
    match at {
        Some(at) => {
            let skew = match received.duration_since(at) {
                Ok(d) => d,
                Err(e) => e.duration(),
            };
            if skew > Duration::from_secs(1) {
                received
            } else {
                at
            }
        }
        None => received,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_evidence::LocatorKind;

    fn raw(json: serde_json::Value) -> RawLocator {
        serde_json::from_value(json).unwrap()
    }

    fn kind(l: &Locator) -> String {
        format!("{:?}", l.kind())
    }

    #[test]
    fn the_first_locator_in_codegen_order_is_recorded() {
        let s = Sanitizer::new();
        let l = raw(serde_json::json!({"testId": "submit", "role": "button", "name": "Go"}))
            .sanitized(&s);
        assert_eq!(l.kind(), Some(LocatorKind::TestId("submit")));
        let l = raw(serde_json::json!({"role": "button", "name": "Sign in"})).sanitized(&s);
        assert_eq!(
            l.kind(),
            Some(LocatorKind::Role {
                role: "button",
                name: "Sign in"
            })
        );
        // A role without a name is no locator of its own.
        let l = raw(serde_json::json!({"role": "textbox", "label": "Email"})).sanitized(&s);
        assert_eq!(l.kind(), Some(LocatorKind::Label("Email")));
        let l =
            raw(serde_json::json!({"placeholder": "you@example.com", "css": "#e"})).sanitized(&s);
        assert_eq!(l.kind(), Some(LocatorKind::Placeholder("you@example.com")));
        let l = raw(serde_json::json!({"css": "#email", "frame": "#pay"})).sanitized(&s);
        assert_eq!(l.kind(), Some(LocatorKind::Css("#email")));
        assert_eq!(serde_json::to_value(&l).unwrap()["frame"], "#pay");
        let l = raw(serde_json::json!({"why": "nested-frame"})).sanitized(&s);
        assert_eq!(
            l.kind(),
            Some(LocatorKind::NotReplayable(
                "the element is inside a frame inside a frame"
            ))
        );
        // Unknown words, nothing at all, empty or over-long text: not replayable.
        for j in [
            serde_json::json!({"why": "<b>x</b>"}),
            serde_json::json!({}),
            serde_json::json!({"label": "  "}),
            serde_json::json!({"css": "x".repeat(MAX_CHARS + 1)}),
        ] {
            let l = raw(j.clone()).sanitized(&s);
            assert!(kind(&l).contains("NotReplayable"), "{j}: {}", kind(&l));
        }
    }

    #[test]
    fn a_locator_that_held_typed_text_or_a_secret_is_never_recorded() {
        let s = Sanitizer::new();
        let mut echo = s.typed_echo();
        echo.extend("Zw4TypedBBB2");
        s.register_secret("API_KEY", "sk-live-0123").unwrap();
        let cases = [
            (
                serde_json::json!({"role": "button", "name": "Send Zw4TypedBBB2"}),
                TYPED_TEXT,
            ),
            (serde_json::json!({"label": "Hello Zw4Typed"}), TYPED_TEXT),
            (
                serde_json::json!({"role": "heading", "name": "Zw4TypedBBB2!"}),
                TYPED_TEXT,
            ),
            (
                serde_json::json!({"css": "#ok", "frame": "iframe[name=\"Zw4TypedBBB2\"]"}),
                TYPED_TEXT,
            ),
            (
                serde_json::json!({"placeholder": "key sk-live-0123"}),
                REDACTED,
            ),
            (
                serde_json::json!({"testId": "Cookie: sid=31d4d96e407aad42"}),
                REDACTED,
            ),
        ];
        for (j, why) in cases {
            let l = raw(j.clone()).sanitized(&s);
            assert_eq!(l.kind(), Some(LocatorKind::NotReplayable(why)), "{j}");
            let written = serde_json::to_string(&l).unwrap();
            assert!(!written.contains("Zw4T"), "{written}");
            assert!(!written.contains("sk-live"), "{written}");
        }
        // Three characters are not masked anywhere: a name holding them is page text as usual.
        let l = raw(serde_json::json!({"label": "Zw4"})).sanitized(&s);
        assert_eq!(l.kind(), Some(LocatorKind::Label("Zw4")));
    }

    #[test]
    fn raw_locators_do_not_print_their_text() {
        let l = raw(serde_json::json!({"role": "button", "name": "hunter2"}));
        assert_eq!(format!("{l:?}"), "RawLocator(role, name)");
    }

    #[test]
    fn the_agents_clock_is_taken_unless_it_is_far_off() {
        let received = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        let near = agent_time(1_699_999_999_990.5, received);
        let off = received.duration_since(near).unwrap();
        assert!(
            off.abs_diff(Duration::from_micros(9_500)) < Duration::from_micros(5),
            "{off:?}"
        );
        assert_eq!(agent_time(1_600_000_000_000.0, received), received);
        assert_eq!(agent_time(f64::NAN, received), received);
        assert_eq!(agent_time(-1.0, received), received);
    }
}
