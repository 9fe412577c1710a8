//! Which client commands make a filmstrip step, and what each step may say about itself.
//!
//! Typing is not read here: `typed.rs` reads it from the message whatever its spelling, before
//! this classification (which trusts the parsed `method`) sees it. Here a named key (`Enter`,
//! `Tab`) is a press; every other keystroke and insertion is nothing.

use super::typing::Reach;
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

/// Keys whose names say nothing about what was typed; any other key is part of typing. The one
/// table of them: the MCP gateway decides a `press_key` by it too (`cdp_relay_mcp`'s `args::key_press`).
pub const NAMED_KEYS: &[&str] = &[
    "Enter",
    "NumpadEnter",
    "Tab",
    "Escape",
    "Backspace",
    "Delete",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "Insert",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
    "F13",
    "F14",
    "F15",
    "F16",
    "F17",
    "F18",
    "F19",
    "F20",
    "F21",
    "F22",
    "F23",
    "F24",
    "CapsLock",
    "NumLock",
    "ScrollLock",
    "Pause",
    "PrintScreen",
    "ContextMenu",
    "Clear",
    "Help",
    "Cancel",
    "AudioVolumeUp",
    "AudioVolumeDown",
    "AudioVolumeMute",
    "MediaTrackNext",
    "MediaTrackPrevious",
    "MediaStop",
    "MediaPlayPause",
    "Shift",
    "Control",
    "Alt",
    "AltGraph",
    "Meta",
];

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
        M::InputDispatchMouseEvent => {
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
            Command::Action(a, Reach::Page)
        }
        M::InputDispatchTouchEvent => {
            let p: cdp::TouchEvent = frame.params()?;
            if p.kind != "touchStart" {
                return None;
            }
            let mut a = Action::new(ActionMethod::Tap);
            a.point = p.touch_points.first().map(|t| Point { x: t.x, y: t.y });
            Command::Action(a, Reach::Page)
        }
        M::InputDispatchKeyEvent => {
            let p: cdp::KeyEvent = frame.params()?;
            if !matches!(p.kind.as_ref(), "keyDown" | "rawKeyDown" | "char") {
                return None;
            }
            if let Some(key) = NAMED_KEYS.iter().find(|k| **k == p.key) {
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
                return Some(Command::Action(a, Reach::Page));
            }
            // Character keys are typing (`typed.rs`).
            return None;
        }
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
        M::RuntimeEvaluate | M::RuntimeCallFunctionOn => {
            let p: cdp::Evaluate = frame.params().unwrap_or_default();
            // Method and size only: expressions and arguments routinely carry typed values.
            let size = p.expression.len() + p.function_declaration.len();
            let mut a = this();
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
