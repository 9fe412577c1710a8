//! Which client commands make a filmstrip step, and what each step may say about itself.
//!
//! Typing is not read here: `typed.rs` reads it from the message whatever its spelling, before
//! this classification (which trusts the parsed `method`) sees it. Here a named key (`Enter`,
//! `Tab`) is a press; every other keystroke and insertion is nothing.

use super::typed::NAMED_KEYS;
use crate::cdp::frame::Frame;
use crate::cdp::methods::CommandMethod;
use crate::cdp::params as cdp;
use cdp_evidence::{Action, ActionDetail, ActionMethod, MouseButton, Point};
use cdp_sanitize::{SafeText, Sanitizer};
use serde_json::json;

/// A classified client command.
pub(crate) enum Command {
    /// An ordinary step, recorded with its response, and how far it may reach into a field
    /// being typed into.
    Action(Action, Reach),
    /// A navigation: also re-allows screenshots of the target.
    Navigate(Action),
    /// `Page.captureScreenshot`: the response may become an artifact.
    Screenshot { action: Action, ext: &'static str },
}

/// How far a command other than typing may reach into a field being typed into on its page,
/// for the typing bursts there (`TrafficReader::end_typing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// It cannot change the page (an evaluation V8 runs refusing side effects): no burst ends.
    Nothing,
    /// It reads the page (a screenshot): its own client's bursts end (the step sits between
    /// them); another client's go on.
    Client,
    /// It may change a field through script (an evaluation): its own client's bursts end;
    /// another client's go on, protected afresh from here.
    Script,
    /// It acts on the page as a user would (input), or navigates: every burst on it ends.
    Page,
}

/// Classifies `method`; `None` for the calls of it that are not evidence (a mouse move, a key
/// up).
pub(crate) fn classify(method: CommandMethod, frame: &Frame<'_>, s: &Sanitizer) -> Option<Command> {
    use CommandMethod as M;
    let this = || Action::new(SafeText::literal(method.name()));
    Some(match method {
        M::PageNavigate => {
            let p: cdp::Url = frame.params()?;
            let mut a = this();
            a.url = Some(s.url(&p.url));
            Command::Navigate(a)
        }
        M::PageReload | M::PageNavigateToHistoryEntry => Command::Navigate(this()),
        M::PageStopLoading => Command::Action(this(), Reach::Page),
        // Pictures of the page: they read it.
        M::PageStartScreencast | M::PageStopScreencast | M::PagePrintToPdf => {
            Command::Action(this(), Reach::Client)
        }
        M::PageCaptureScreenshot => {
            let p: cdp::Screenshot = frame.params().unwrap_or_default();
            let ext = match p.format.as_ref() {
                "jpeg" => "jpeg",
                "webp" => "webp",
                _ => "png",
            };
            Command::Screenshot {
                action: this(),
                ext,
            }
        }
        M::InputDispatchMouseEvent => return mouse_event(frame, s),
        M::InputDispatchTouchEvent => {
            let p: cdp::TouchEvent = frame.params()?;
            if p.kind != "touchStart" {
                return None;
            }
            let mut a = Action::new(ActionMethod::Tap);
            a.point = p.touch_points.first().map(|t| Point { x: t.x, y: t.y });
            Command::Action(a, Reach::Page)
        }
        M::InputDispatchKeyEvent => return key_event(frame, s),
        M::InputInsertText
        | M::InputImeSetComposition
        | M::DomSetAttributeValue
        | M::DomSetAttributesAsText
        | M::DomSetNodeValue
        | M::TargetSendMessageToTarget => return None,
        M::DomSetFileInputFiles => {
            let p: cdp::FileInput = frame.params().unwrap_or_default();
            let mut a = this();
            a.detail = Some(s.json(&json!({ "files": p.files.len() })));
            Command::Action(a, Reach::Page)
        }
        M::RuntimeEvaluate | M::RuntimeCallFunctionOn => evaluate(this(), frame),
        M::TargetCreateTarget => {
            let p: cdp::TargetId = frame.params().unwrap_or_default();
            let mut a = this();
            a.url = Some(s.url(&p.url));
            Command::Action(a, Reach::Page)
        }
        M::TargetCloseTarget | M::TargetAttachToTarget | M::TargetActivateTarget => {
            let p: cdp::TargetId = frame.params().unwrap_or_default();
            let mut a = this();
            if !p.target_id.is_empty() {
                a.detail = Some(s.json(&json!({ "targetId": p.target_id })));
            }
            Command::Action(a, Reach::Page)
        }
        M::BrowserClose => Command::Action(this(), Reach::Page),
    })
}

/// `Input.dispatchMouseEvent`: a press is a click, a wheel a scroll; moves and releases are
/// not evidence.
fn mouse_event(frame: &Frame<'_>, s: &Sanitizer) -> Option<Command> {
    let p: cdp::MouseEvent = frame.params()?;
    let name = match p.kind.as_ref() {
        "mousePressed" => ActionMethod::Click,
        "mouseWheel" => ActionMethod::Scroll,
        _ => return None,
    };
    let mut a = Action::new(name);
    a.point = Some(Point { x: p.x, y: p.y });
    if name == ActionMethod::Click {
        let button = MouseButton::parse(&p.button).unwrap_or(MouseButton::Other);
        let detail = ActionDetail {
            button: Some(button.into()),
            click_count: Some(u64::from(p.click_count)),
            ..ActionDetail::default()
        };
        a.detail = Some(detail.sanitized(s));
    }
    Some(Command::Action(a, Reach::Page))
}

/// `Input.dispatchKeyEvent`: a named key's press; character keys are typing (`typed.rs`).
fn key_event(frame: &Frame<'_>, s: &Sanitizer) -> Option<Command> {
    let p: cdp::KeyEvent = frame.params()?;
    if !matches!(p.kind.as_ref(), "keyDown" | "rawKeyDown" | "char") {
        return None;
    }
    let key = NAMED_KEYS.iter().find(|k| **k == p.key)?;
    // keyDown and a following char event would make two presses; count keyDown only.
    if p.kind == "char" {
        return None;
    }
    let mut a = Action::new(ActionMethod::Press);
    let detail = ActionDetail {
        key: Some((*key).to_owned()),
        ..ActionDetail::default()
    };
    a.detail = Some(detail.sanitized(s));
    Some(Command::Action(a, Reach::Page))
}

/// `Runtime.evaluate`, `Runtime.callFunctionOn`: the method and the size only, since
/// expressions and arguments routinely carry typed values.
fn evaluate(mut a: Action, frame: &Frame<'_>) -> Command {
    let p: cdp::Evaluate = frame.params().unwrap_or_default();
    let size = p.expression.len() + p.function_declaration.len();
    a.bytes = Some(size as u64);
    // V8 refuses any side effect: it can only read. Anything else may change a field
    // (`f.value = ''`), or only read it (DevTools' `getNodeForIndex`): who can tell.
    let reach = if p.throw_on_side_effect {
        Reach::Nothing
    } else {
        Reach::Script
    };
    Command::Action(a, reach)
}
