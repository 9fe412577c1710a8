//! Where a click, a typing step, a `<select>` choice or a file choice went: the page agent's
//! locators (`agent.js`, *Locators*).
//!
//! The agent takes one when an element receives a trusted `pointerdown`, when typing starts in
//! an element, and when a `<select>` or a file input changes, and reports it over its binding at
//! once, so a navigation the step causes cannot lose it. The direct reader hands it on, raw, over
//! the in-memory channel to the traffic reader, which picks the report in a step's time window
//! and sanitizes it into the step's `payload.target` ([`AgentLocator::sanitized`]) only then,
//! after every keystroke forwarded before the step was registered. The agent reports a locator in
//! the evidence format's own shape ([`StoredLocator`], read here as page text that is not
//! sanitized yet); text that held anything typed in the run, or anything else the sanitizer
//! redacts, is never recorded: the step is not replayable instead.

use cdp_evidence::{Locator, LocatorKind, StoredLocator};
use cdp_sanitize::{SafeText, Sanitizer};
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// Longest text a locator member may have (the agent cuts names at 80 characters); a longer
/// one is not recorded.
const MAX_CHARS: usize = 256;
/// Most frame levels a locator may go down.
const MAX_FRAMES: usize = 8;
/// Most options a `<select>` step may record.
pub(crate) const MAX_OPTIONS: usize = 16;

/// Why a step is not replayable when its locator held typed text.
pub(crate) const TYPED_TEXT: &str = "the element's name contains typed text";
/// … when it held other text the sanitizer redacts.
const REDACTED: &str = "the element's name contains text the relay redacts";
/// … when a chosen option's label held typed text or a redaction.
const OPTION_REDACTED: &str =
    "the chosen option's label contains typed text or text the relay redacts";
/// … when the agent reported no label for the choice.
const NO_OPTION: &str = "the relay's page agent could not name the chosen option";

/// When the agent took the locator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moment {
    /// The element received a trusted `pointerdown`.
    Hit,
    /// Typing started in the element.
    Typed,
    /// A `<select>` changed: a choice was made.
    Chose,
    /// A file input's files were set.
    Files,
}

/// A locator as the page agent reported it, in the format's shape: page text, raw, memory only.
/// `Debug` names the members present, never their text.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub(crate) struct AgentLocator(Box<StoredLocator>);

impl Default for AgentLocator {
    fn default() -> AgentLocator {
        AgentLocator(Box::new(StoredLocator::not_replayable(String::new())))
    }
}

impl std::fmt::Debug for AgentLocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.0;
        let present = [
            ("testId", l.test_id.is_some()),
            ("role", l.role.is_some()),
            ("name", l.name.is_some()),
            ("label", l.label.is_some()),
            ("placeholder", l.placeholder.is_some()),
            ("text", l.text.is_some()),
            ("css", l.css.is_some()),
            ("exact", l.exact.is_some()),
            ("frames", l.frames.is_some()),
            ("why", l.why.is_some()),
        ];
        let names: Vec<&str> = present
            .iter()
            .filter(|(_, p)| *p)
            .map(|(n, _)| *n)
            .collect();
        write!(f, "AgentLocator({})", names.join(", "))
    }
}

/// What the agent's `why` words stand for; an unknown word reads as `error`.
fn agent_why(word: &str) -> &'static str {
    match word {
        "no-locator" => {
            "no test id, role and name, label, placeholder, text or short CSS path picks out the element alone"
        }
        "generated-id" => {
            "no test id, role and name, label, placeholder or text picks out the element alone, and its id or class looks generated (it would differ at the replay)"
        }
        "no-element" => "the click hit no element",
        "page-background" => "the click hit the page itself, not an element on it",
        "cross-origin-frame" => "the element is inside a frame of another origin",
        "unnamed-frame" => "no selector picks out a frame on the way to the element",
        "sensitive-choice" => "the choice was made in a field marked sensitive (payment, password or marked by the page)",
        _ => "the relay's page agent could not describe the element",
    }
}

impl AgentLocator {
    /// The locator to record: each member's text through the run's sanitizer, unchanged, or
    /// not replayable (typed text, a redaction, an empty or over-long member). Which member is
    /// the locator is evidence's rule ([`StoredLocator::kind`]).
    pub(crate) fn sanitized(&self, s: &Sanitizer) -> Locator {
        let raw = &self.0;
        let clean = |t: &str| -> Result<SafeText, &'static str> { clean(s, t) };
        let one = || -> Result<Locator, &'static str> {
            let found = match raw.kind() {
                Some(LocatorKind::NotReplayable(_)) => return Err(agent_why("")),
                Some(LocatorKind::TestId(id)) => Locator::test_id(clean(id)?),
                Some(LocatorKind::Role { role, name }) => Locator::role(clean(role)?, clean(name)?),
                Some(LocatorKind::Label(label)) => Locator::label(clean(label)?),
                Some(LocatorKind::Placeholder(p)) => Locator::placeholder(clean(p)?),
                Some(LocatorKind::Text(t)) => Locator::text(clean(t)?),
                Some(LocatorKind::Css(css)) => Locator::css(clean(css)?),
                None => return Err(agent_why(raw.why.as_deref().unwrap_or(""))),
            };
            let path = raw.frame_path();
            if path.len() > MAX_FRAMES {
                return Err(agent_why("unnamed-frame"));
            }
            let frames = path.into_iter().map(clean).collect::<Result<Vec<_>, _>>()?;
            let found = found.in_frames(frames);
            Ok(if raw.is_exact() {
                found.exactly()
            } else {
                found
            })
        };
        one().unwrap_or_else(|why| Locator::not_replayable(SafeText::literal(why)))
    }
}

/// The labels of the options a `<select>` step chose: page text, raw, memory only. `Debug`
/// says how many, never which.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Options(Vec<String>);

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Options({})", self.0.len())
    }
}

impl Options {
    /// The labels to record, each through the run's sanitizer, unchanged; else why the choice
    /// cannot be replayed.
    pub(crate) fn sanitized(&self, s: &Sanitizer) -> Result<Vec<SafeText>, &'static str> {
        if self.0.is_empty() || self.0.len() > MAX_OPTIONS {
            return Err(NO_OPTION);
        }
        self.0
            .iter()
            .map(|label| clean(s, label).map_err(|_| OPTION_REDACTED))
            .collect()
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
    pub(crate) locator: AgentLocator,
    /// For a click: the element the pointer rested on first for the clicked one to show.
    pub(crate) hover: Option<AgentLocator>,
    /// For a `<select>` choice: the chosen options' labels (`None`: the agent named none).
    pub(crate) options: Option<Options>,
    /// For a press: it never reached the document (stopped on the window).
    pub(crate) blocked: bool,
    /// For a file choice: how many files.
    pub(crate) count: Option<u64>,
    /// For typing: it went on in the element typed into just before, after a pause (the step
    /// of typing that began there owns it).
    pub(crate) continued: bool,
}

impl Located {
    /// A `<select>` choice to record: the select's locator and the chosen options' labels, or
    /// not replayable (the locator, or a label the sanitizer would change, or none named).
    pub(crate) fn choice(&self, s: &Sanitizer) -> (Locator, Option<Vec<SafeText>>) {
        let target = self.locator.sanitized(s);
        if let Some(LocatorKind::NotReplayable(_)) = target.kind() {
            return (target, None);
        }
        match self.options.as_ref().map(|o| o.sanitized(s)) {
            Some(Ok(labels)) => (target, Some(labels)),
            Some(Err(why)) => (Locator::not_replayable(SafeText::literal(why)), None),
            None => (Locator::not_replayable(SafeText::literal(NO_OPTION)), None),
        }
    }
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

    fn raw(json: serde_json::Value) -> AgentLocator {
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
        let l = raw(serde_json::json!({"text": "Tile", "exact": true})).sanitized(&s);
        assert_eq!(l.kind(), Some(LocatorKind::Text("Tile")));
        assert!(l.is_exact());
        let l =
            raw(serde_json::json!({"css": "#email", "frames": ["#pay", "iframe"]})).sanitized(&s);
        assert_eq!(l.kind(), Some(LocatorKind::Css("#email")));
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            serde_json::json!({"css": "#email", "frames": ["#pay", "iframe"]})
        );
        // A run's one `frame` (as the agent wrote it before) is read as a path of one.
        let l = raw(serde_json::json!({"css": "#email", "frame": "#pay"})).sanitized(&s);
        assert_eq!(l.frame_path(), ["#pay"]);
        let l = raw(serde_json::json!({"why": "cross-origin-frame"})).sanitized(&s);
        assert_eq!(
            l.kind(),
            Some(LocatorKind::NotReplayable(
                "the element is inside a frame of another origin"
            ))
        );
        let l = raw(serde_json::json!({"why": "generated-id"})).sanitized(&s);
        assert!(kind(&l).contains("looks generated"), "{}", kind(&l));
        // Unknown words, nothing at all, empty or over-long text: not replayable.
        for j in [
            serde_json::json!({"why": "<b>x</b>"}),
            serde_json::json!({}),
            serde_json::json!({"label": "  "}),
            serde_json::json!({"css": "x".repeat(MAX_CHARS + 1)}),
            serde_json::json!({"css": "#a", "frames": vec!["iframe"; MAX_FRAMES + 1]}),
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
                serde_json::json!({"css": "#ok", "frames": ["#outer", "iframe[name=\"Zw4TypedBBB2\"]"]}),
                TYPED_TEXT,
            ),
            (
                serde_json::json!({"text": "Zw4TypedBBB2", "exact": true}),
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
        // A chosen option's label is page text too: an echo or a secret in it is never recorded.
        let options =
            |labels: &[&str]| serde_json::from_value::<Options>(serde_json::json!(labels)).unwrap();
        let kept = options(&["Blue", "Dark green"]).sanitized(&s).unwrap();
        assert_eq!(
            kept.iter().map(SafeText::as_str).collect::<Vec<_>>(),
            ["Blue", "Dark green"]
        );
        for labels in [
            &["Zw4TypedBBB2"][..],
            &["Blue", "key sk-live-0123"],
            &[],
            &["  "],
        ] {
            let refused = options(labels).sanitized(&s);
            assert!(refused.is_err(), "{labels:?}");
        }
        assert_eq!(format!("{:?}", options(&["Blue"])), "Options(1)");
    }

    #[test]
    fn raw_locators_do_not_print_their_text() {
        let l = raw(serde_json::json!({"role": "button", "name": "hunter2", "exact": true}));
        assert_eq!(format!("{l:?}"), "AgentLocator(role, name, exact)");
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
