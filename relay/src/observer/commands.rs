//! Which client commands make a filmstrip step, and what each step may say about itself.
//!
//! Typed text never leaves this module as text: a typing command yields the raw string only so
//! the observer can count it and register it for echo protection in memory.

use super::cdp;
use super::frame::Frame;
use cdp_evidence::{Action, Point};
use cdp_sanitize::{SafeText, Sanitizer};
use serde_json::json;

/// A classified client command.
pub(crate) enum Command {
    /// An ordinary step, recorded with its response.
    Action(Action),
    /// A navigation: also re-allows screenshots of the target.
    Navigate(Action),
    /// `Page.captureScreenshot`: the response may become an artifact.
    Screenshot { action: Action, ext: &'static str },
    /// Text typed into the page (memory only).
    Typing { text: String },
}

/// Keys whose names say nothing about what was typed; any other key is part of typing.
const NAMED_KEYS: [&str; 30] = [
    "Enter",
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
    "Shift",
    "Control",
    "Alt",
    "Meta",
];

/// Every method [`classify`] may turn into evidence; the rest are skipped unparsed.
const EVIDENCE: [&str; 21] = [
    "Page.navigate",
    "Page.reload",
    "Page.navigateToHistoryEntry",
    "Page.stopLoading",
    "Page.startScreencast",
    "Page.stopScreencast",
    "Page.printToPDF",
    "Page.captureScreenshot",
    "Input.dispatchMouseEvent",
    "Input.dispatchTouchEvent",
    "Input.dispatchKeyEvent",
    "Input.insertText",
    "DOM.setAttributeValue",
    "DOM.setFileInputFiles",
    "Runtime.evaluate",
    "Runtime.callFunctionOn",
    "Target.createTarget",
    "Target.closeTarget",
    "Target.attachToTarget",
    "Target.activateTarget",
    "Browser.close",
];

/// True if `method` can be evidence.
pub(crate) fn is_evidence(method: &str) -> bool {
    EVIDENCE.contains(&method)
}

/// Classifies `method`; `None` for commands that are not evidence (most of them).
pub(crate) fn classify(method: &str, frame: &Frame<'_>, s: &Sanitizer) -> Option<Command> {
    let named = |m: &'static str| Action::new(SafeText::literal(m));
    Some(match method {
        "Page.navigate" => {
            let p: cdp::Url = frame.params()?;
            let mut a = named("Page.navigate");
            a.url = Some(s.url(&p.url));
            Command::Navigate(a)
        }
        "Page.reload" => Command::Navigate(named("Page.reload")),
        "Page.navigateToHistoryEntry" => Command::Navigate(named("Page.navigateToHistoryEntry")),
        "Page.stopLoading" => Command::Action(named("Page.stopLoading")),
        "Page.startScreencast" => Command::Action(named("Page.startScreencast")),
        "Page.stopScreencast" => Command::Action(named("Page.stopScreencast")),
        "Page.printToPDF" => Command::Action(named("Page.printToPDF")),
        "Page.captureScreenshot" => {
            let p: cdp::Screenshot = frame.params().unwrap_or_default();
            let ext = match p.format.as_ref() {
                "jpeg" => "jpeg",
                "webp" => "webp",
                _ => "png",
            };
            Command::Screenshot {
                action: named("Page.captureScreenshot"),
                ext,
            }
        }
        "Input.dispatchMouseEvent" => {
            let p: cdp::MouseEvent = frame.params()?;
            let name = match p.kind.as_ref() {
                "mousePressed" => "click",
                "mouseWheel" => "scroll",
                _ => return None,
            };
            let mut a = named(name);
            a.point = Some(Point { x: p.x, y: p.y });
            if name == "click" {
                let button = match p.button.as_ref() {
                    "left" | "middle" | "right" | "back" | "forward" | "none" => p.button.as_ref(),
                    _ => "other",
                };
                a.detail = Some(s.json(&json!({ "button": button, "clickCount": p.click_count })));
            }
            Command::Action(a)
        }
        "Input.dispatchTouchEvent" => {
            let p: cdp::TouchEvent = frame.params()?;
            if p.kind != "touchStart" {
                return None;
            }
            let mut a = named("tap");
            a.point = p.touch_points.first().map(|t| Point { x: t.x, y: t.y });
            Command::Action(a)
        }
        "Input.dispatchKeyEvent" => {
            let p: cdp::KeyEvent = frame.params()?;
            if !matches!(p.kind.as_ref(), "keyDown" | "rawKeyDown" | "char") {
                return None;
            }
            if let Some(key) = NAMED_KEYS.iter().find(|k| **k == p.key) {
                // keyDown and a following char event would make two presses; count keyDown only.
                if p.kind == "char" {
                    return None;
                }
                let mut a = named("press");
                a.detail = Some(s.json(&json!({ "key": key })));
                return Some(Command::Action(a));
            }
            if p.text.is_empty() || p.kind == "rawKeyDown" {
                return None;
            }
            Command::Typing {
                text: p.text.into_owned(),
            }
        }
        "Input.insertText" => {
            let p: cdp::InsertText = frame.params()?;
            Command::Typing {
                text: p.text.into_owned(),
            }
        }
        "DOM.setAttributeValue" => {
            let p: cdp::SetAttribute = frame.params()?;
            if !p.name.eq_ignore_ascii_case("value") {
                return None;
            }
            Command::Typing {
                text: p.value.into_owned(),
            }
        }
        "DOM.setFileInputFiles" => {
            let p: cdp::FileInput = frame.params().unwrap_or_default();
            let mut a = named("DOM.setFileInputFiles");
            a.detail = Some(s.json(&json!({ "files": p.files.len() })));
            Command::Action(a)
        }
        "Runtime.evaluate" | "Runtime.callFunctionOn" => {
            let p: cdp::Evaluate = frame.params().unwrap_or_default();
            // Method and size only: expressions and arguments routinely carry typed values.
            let size = p.expression.len() + p.function_declaration.len();
            let mut a = named(if method == "Runtime.evaluate" {
                "Runtime.evaluate"
            } else {
                "Runtime.callFunctionOn"
            });
            a.bytes = Some(size as u64);
            Command::Action(a)
        }
        "Target.createTarget" => {
            let p: cdp::TargetId = frame.params().unwrap_or_default();
            let mut a = named("Target.createTarget");
            a.url = Some(s.url(&p.url));
            Command::Action(a)
        }
        "Target.closeTarget" | "Target.attachToTarget" | "Target.activateTarget" => {
            let p: cdp::TargetId = frame.params().unwrap_or_default();
            let mut a = named(match method {
                "Target.closeTarget" => "Target.closeTarget",
                "Target.attachToTarget" => "Target.attachToTarget",
                _ => "Target.activateTarget",
            });
            if !p.target_id.is_empty() {
                a.detail = Some(s.json(&json!({ "targetId": p.target_id })));
            }
            Command::Action(a)
        }
        "Browser.close" => Command::Action(named("Browser.close")),
        _ => return None,
    })
}
