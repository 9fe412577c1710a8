//! The evidence vocabulary: every word the format gives a meaning to, as a closed set with one
//! spelling per variant (`cdp_sanitize::words!`), written and read through the same type.
//!
//! A field that another producer may fill with its own words is a [`Word`] of its set: the
//! set's words read as [`Word::Known`], anything else as [`Word::Other`] with the text as
//! written, so a reader matches on variants and still shows a foreign word. Where the format
//! closes a set (a record's `status`, a console `level`, a lifecycle `event`), an unknown word
//! makes the payload not fit its kind (see `docs/evidence-format.md`, *Vocabulary*).

use cdp_sanitize::{words, SafeJson, Sanitizer, Word};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `tool` of the MCP gateway's own records: its tool calls (`evidence_*`, the steps an agent
/// marks) and its lifecycle events.
pub const GATEWAY_TOOL: &str = "cdp-relay";

words! {
    /// Outcome of a record (`status`). A closed set: readers may rely on these four words.
    pub enum Status {
        /// The action succeeded.
        Ok = "ok",
        /// The action failed, or the record describes a failure (network, console error).
        Error = "error",
        /// No outcome: the connection closed or the producer stopped before the response.
        Interrupted = "interrupted",
        /// Not an action with an outcome: an observation or a marker.
        Info = "info",
    }
}

words! {
    /// The built-in record kinds (`kind`); a producer may define others
    /// ([`crate::CustomKind`]).
    pub enum Kind {
        /// A client command worth a filmstrip step ([`crate::ActionOf`]).
        Action = "action",
        /// A failed request.
        Network = "network",
        /// A console error, warning, assertion or exception.
        Console = "console",
        /// A connection event.
        Lifecycle = "lifecycle",
        /// Run bookkeeping.
        Marker = "marker",
    }
}

words! {
    /// Run status in the manifest (`status`).
    pub enum RunStatus {
        /// Created and not finalized: producers may append.
        Running = "running",
        /// Finalized: the journal is closed.
        Finalized = "finalized",
    }
}

words! {
    /// Console entry levels that make evidence (`payload.level`).
    pub enum ConsoleLevel {
        /// `console.error` or a `Log` error entry.
        Error = "error",
        /// `console.warn`.
        Warning = "warning",
        /// A failed `console.assert`.
        Assert = "assert",
        /// An uncaught exception.
        Exception = "exception",
    }
}

words! {
    /// Connection events (`payload.event`).
    pub enum LifecycleEvent {
        /// A CDP client connected through the relay.
        ClientConnected = "clientConnected",
        /// A CDP client disconnected.
        ClientDisconnected = "clientDisconnected",
        /// The browser side went away without a close frame.
        UpstreamLost = "upstreamLost",
        /// An agent connected to the MCP gateway (`detail`: its name).
        AgentConnected = "agentConnected",
        /// The agent closed its connection (stdin) to the MCP gateway.
        AgentDisconnected = "agentDisconnected",
        /// The MCP server the gateway wraps answered `initialize` (`detail`: its name).
        ServerStarted = "serverStarted",
        /// The wrapped MCP server exited (`detail`: how; status `error` when it failed or
        /// crashed).
        ServerExited = "serverExited",
        /// The gateway was asked to stop (`detail`: the signal).
        StopRequested = "stopRequested",
        /// The browser the gateway launched exited (status `error` when it was not asked to).
        BrowserExited = "browserExited",
    }
}

words! {
    /// The markers of the format (`payload.marker`); [`crate::MarkerKind`] holds their fields.
    pub enum MarkerName {
        /// The run was created.
        RunStarted = "runStarted",
        /// The run was finalized; the last record of a run.
        RunFinalized = "runFinalized",
        /// The first artifact refused for the budget.
        EvidenceTruncated = "evidenceTruncated",
        /// The first record refused for the journal budget.
        JournalTruncated = "journalTruncated",
        /// A producer dropped evidence.
        EvidenceDropped = "evidenceDropped",
        /// A writer repaired a torn tail.
        JournalRepaired = "journalRepaired",
        /// A producer took over a dead owner's run.
        OwnerRecovered = "ownerRecovered",
    }
}

words! {
    /// The `method` of an action: the relay's own verbs for what a client did, and the CDP
    /// methods it records by name (their one spelling: the relay's method table names them
    /// through this set). Another producer's verbs (an agent's tool names, a device layer's
    /// `swipe`) are [`Word::Other`].
    pub enum ActionMethod {
        /// A mouse press (`Input.dispatchMouseEvent` `mousePressed`): `point`, `detail.button`,
        /// `detail.clickCount`.
        Click = "click",
        /// A touch start: `point`.
        Tap = "tap",
        /// A mouse wheel event: `point`.
        Scroll = "scroll",
        /// A named key (`Enter`, `Tab`, …): `detail.key`.
        Press = "press",
        /// A typing burst: `input`, `verification`.
        Type = "type",
        /// An option chosen in a `<select>` (set by script, as Playwright and the browser MCP
        /// servers do, or by the keyboard): `target`, `options`.
        Select = "select",
        /// Files chosen for a file input by script (a client that sets them in the page):
        /// `target`, `detail.files`. Files set with `DOM.setFileInputFiles` are that record's.
        Files = "files",
        /// The relay's own picture of a page (its artifact), or why there is none
        /// (`detail.screenshotWithheld`).
        Frame = "frame",
        /// `Page.navigate`: `url`.
        PageNavigate = "Page.navigate",
        /// `Page.reload`.
        PageReload = "Page.reload",
        /// `Page.navigateToHistoryEntry`.
        PageNavigateToHistoryEntry = "Page.navigateToHistoryEntry",
        /// `Page.stopLoading`.
        PageStopLoading = "Page.stopLoading",
        /// `Page.startScreencast`.
        PageStartScreencast = "Page.startScreencast",
        /// `Page.stopScreencast`.
        PageStopScreencast = "Page.stopScreencast",
        /// A screencast frame a client received (its artifact).
        PageScreencastFrame = "Page.screencastFrame",
        /// `Page.printToPDF`.
        PagePrintToPdf = "Page.printToPDF",
        /// `Page.captureScreenshot` (its artifact).
        PageCaptureScreenshot = "Page.captureScreenshot",
        /// `Page.bringToFront`.
        PageBringToFront = "Page.bringToFront",
        /// `DOM.setFileInputFiles`: `detail.files`, and `target` (the file input).
        DomSetFileInputFiles = "DOM.setFileInputFiles",
        /// `Runtime.evaluate`: `bytes` of the expression.
        RuntimeEvaluate = "Runtime.evaluate",
        /// `Runtime.callFunctionOn`: `bytes` of the function.
        RuntimeCallFunctionOn = "Runtime.callFunctionOn",
        /// `Target.createTarget`: `url`.
        TargetCreateTarget = "Target.createTarget",
        /// `Target.closeTarget`: `detail.targetId`.
        TargetCloseTarget = "Target.closeTarget",
        /// `Target.attachToTarget`: `detail.targetId`.
        TargetAttachToTarget = "Target.attachToTarget",
        /// `Target.activateTarget`: `detail.targetId`.
        TargetActivateTarget = "Target.activateTarget",
        /// `Target.setAutoAttach`.
        TargetSetAutoAttach = "Target.setAutoAttach",
        /// `Target.getTargets`.
        TargetGetTargets = "Target.getTargets",
        /// `Target.getTargetInfo`.
        TargetGetTargetInfo = "Target.getTargetInfo",
        /// `Target.setDiscoverTargets`.
        TargetSetDiscoverTargets = "Target.setDiscoverTargets",
        /// `Browser.close`.
        BrowserClose = "Browser.close",
    }
}

words! {
    /// Why a typing verdict is what it is (`payload.verification.reason`).
    pub enum VerdictReason {
        /// The field changed exactly as the typed text would change it.
        Landed = "landed",
        /// Fewer characters arrived than were typed.
        DroppedCharacters = "dropped-characters",
        /// The page received (almost) none of it as input.
        NoInput = "no-input",
        /// The field already held this text and did not change.
        AlreadyHeld = "already-held",
        /// A selection was replaced by the same text.
        SameText = "same-text",
        /// The page rewrote the value (a mask, a formatter).
        Rewritten = "rewritten",
        /// Focus moved to another field during the burst.
        FocusMoved = "focus-moved",
        /// Editable content changed, but not as plain insertion.
        RichText = "rich-text",
        /// A password, one-time-code, payment or page-marked field: never read back.
        SensitiveField = "sensitive-field",
        /// The field is inside a frame the relay cannot read.
        Frame = "frame",
        /// The reading could not run.
        NotRead = "not-read",
        /// The field left the document before it could be read.
        Detached = "detached",
        /// The same text reached the page more than once around the step.
        Ambiguous = "ambiguous",
        /// Other input reached the page with the step's text.
        Interleaved = "interleaved",
        /// All of the text went in, at a caret with the field's own text after it: before that
        /// text, not after it.
        Misplaced = "misplaced",
        /// The field held the text, then the page emptied it (read again after the typing).
        ClearedByPage = "cleared-by-page",
        /// Set as a `value` attribute, not typed.
        Attribute = "attribute",
        /// Longer than the relay keeps in memory to verify.
        TooLong = "too-long",
    }
}

words! {
    /// A click's mouse button (`detail.button`).
    pub enum MouseButton {
        /// The primary button.
        Left = "left",
        /// The wheel button.
        Middle = "middle",
        /// The secondary button.
        Right = "right",
        /// The "back" button.
        Back = "back",
        /// The "forward" button.
        Forward = "forward",
        /// No button.
        None = "none",
        /// A button CDP does not name.
        Other = "other",
    }
}

words! {
    /// Why the relay's observer took a frame (`detail.after` of a `frame` action).
    pub enum FrameAfter {
        /// A main-frame navigation committed and loaded.
        Navigation = "navigation",
        /// A client's click.
        Click = "click",
        /// Failures (a failed request, a console error).
        Failure = "failure",
    }
}

/// `payload.detail` of an action: the members the relay writes and readers interpret, read and
/// written through this one type. Another producer's detail may hold anything; a member of the
/// wrong type reads as absent, and members this type does not know are ignored here (a report
/// still shows them field by field).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionDetail {
    /// A click's mouse button.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub button: Option<Word<MouseButton>>,
    /// A click's count (2 for a double click).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub click_count: Option<u64>,
    /// A pressed key's name (`Enter`, `Tab`, …; never a character key).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub key: Option<String>,
    /// Files chosen for an upload.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub files: Option<u64>,
    /// The target a `Target.*` command named (a sanitizer handle).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub target_id: Option<String>,
    /// Why a frame was taken.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub after: Option<Vec<Word<FrameAfter>>>,
    /// A frame's size in CSS pixels.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub width: Option<u64>,
    /// A frame's height in CSS pixels.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub height: Option<u64>,
    /// Why the relay kept no picture: one sentence for people.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub screenshot_withheld: Option<String>,
}

impl ActionDetail {
    /// The detail to write ([`crate::Action::detail`]): its strings through the sanitizer.
    pub fn sanitized(&self, sanitizer: &Sanitizer) -> SafeJson {
        // Serializing a struct of strings, numbers and words cannot fail.
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        sanitizer.json(&value)
    }

    /// The detail of a record as read back: whatever is not an object reads as empty.
    pub fn read(detail: Option<&Value>) -> ActionDetail {
        detail
            .and_then(|d| ActionDetail::deserialize(d).ok())
            .unwrap_or_default()
    }
}

/// A member of the wrong type reads as absent (another producer's detail).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_names_are_the_markers_own_tags() {
        use crate::MarkerKind as M;
        let all = [
            M::RunStarted { pid: 1 },
            M::RunFinalized {
                pid: 1,
                records: 1,
                artifact_bytes: 0,
                dropped_evidence: 0,
            },
            M::EvidenceTruncated {
                budget_bytes: 1,
                used_bytes: 1,
                refused_bytes: 1,
            },
            M::JournalTruncated {
                budget_bytes: 1,
                used_bytes: 1,
            },
            M::EvidenceDropped {
                count: 1,
                reason: None,
            },
            M::JournalRepaired { discarded_bytes: 1 },
            M::OwnerRecovered {
                previous_pid: 1,
                pid: 2,
            },
        ];
        assert_eq!(all.len(), MarkerName::ALL.len());
        for kind in all {
            let tag = serde_json::to_value(&kind).unwrap()["marker"].clone();
            assert_eq!(tag, kind.name().as_str(), "{kind:?}");
        }
    }

    #[test]
    fn a_detail_is_written_and_read_through_one_type() {
        let s = Sanitizer::new();
        let d = ActionDetail {
            button: Some(MouseButton::Right.into()),
            click_count: Some(2),
            after: Some(vec![FrameAfter::Failure.into()]),
            screenshot_withheld: Some("typing moments ago".into()),
            ..ActionDetail::default()
        };
        let written = d.sanitized(&s).into_value();
        assert_eq!(
            written,
            serde_json::json!({"button": "right", "clickCount": 2, "after": ["failure"],
                "screenshotWithheld": "typing moments ago"})
        );
        assert_eq!(ActionDetail::read(Some(&written)), d);
        // Another producer's detail: wrong types read as absent, foreign words are kept.
        let foreign = serde_json::json!({"button": "thumb", "clickCount": "two", "key": 7,
            "files": 3, "extra": {"a": 1}});
        let read = ActionDetail::read(Some(&foreign));
        assert_eq!(read.button, Some(Word::Other("thumb".into())));
        assert_eq!(read.click_count, None);
        assert_eq!(read.key, None);
        assert_eq!(read.files, Some(3));
        assert_eq!(
            ActionDetail::read(Some(&serde_json::json!([1]))),
            ActionDetail::default()
        );
        assert_eq!(ActionDetail::read(None), ActionDetail::default());
    }

    #[test]
    fn an_action_method_from_any_producer_reads_as_its_word() {
        for &m in ActionMethod::ALL {
            let w: Word<ActionMethod> = serde_json::from_value(m.as_str().into()).unwrap();
            assert_eq!(w, m);
        }
        let w: Word<ActionMethod> = serde_json::from_value("swipe".into()).unwrap();
        assert_eq!(w.as_str(), "swipe");
        assert!(w.known().is_none());
    }
}
