//! Taking one of the observer's own frames (when one is wanted is the page model's,
//! `pages/frames.rs`; whether it may be taken, the capture policy's and `browser/shots.rs`'): a
//! live focus check in the page agent's world, then a scaled-down JPEG of the visual viewport on
//! the observer's own session.
//!
//! A frame never comes right after typing (it is postponed until the page has been quiet), never
//! while a sensitive field has focus, and never from a client's session.

use super::conn::{CallError, Cdp};
use super::verify::field_kind;
use crate::cdp::methods::{Call, CommandMethod};
use crate::pages::veto::Withheld;
use serde_json::{json, Value};
use std::time::Duration;

/// A frame taken.
pub(crate) struct Shot {
    pub(crate) bytes: Vec<u8>,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

/// Why no frame was taken.
pub(crate) enum NoFrame {
    /// The policy (or the live focus check) said no.
    Withheld(Withheld),
    /// The browser could not give one (raw reason: sanitize before keeping it).
    Failed(String),
}

/// Knobs for taking a frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameSize {
    /// Frames wider than this many CSS pixels are scaled down to it.
    pub(crate) max_width: u32,
    /// JPEG quality, 0–100.
    pub(crate) quality: u8,
}

/// The live check, then the frame. `world` is the page agent's context on `session`.
pub(crate) async fn take(
    cdp: &Cdp,
    session: &str,
    world: Option<i64>,
    size: FrameSize,
    timeout: Duration,
) -> Result<Shot, NoFrame> {
    let failed = |e: CallError| NoFrame::Failed(e.reason());
    if let Some(ctx) = world {
        let focus = cdp
            .call(
                CommandMethod::RuntimeEvaluate.name(),
                json!({
                    "expression": "globalThis.__cdpRelayAgent ? globalThis.__cdpRelayAgent.focusKind() : 'unknown'",
                    "contextId": ctx,
                    "returnByValue": true,
                    "silent": true,
                }),
                Some(session),
                timeout.min(Duration::from_secs(2)),
            )
            .await;
        match focus {
            Ok(v) => {
                let kind = v
                    .pointer("/result/value")
                    .and_then(Value::as_str)
                    .and_then(field_kind);
                if kind.is_some_and(|k| k.is_sensitive()) {
                    return Err(NoFrame::Withheld(Withheld::SensitiveFocus));
                }
            }
            // A page that cannot run a one-line script will not paint a frame either.
            Err(CallError::Timeout) => {
                return Err(NoFrame::Failed(
                    "the page did not answer (busy or blocked)".into(),
                ))
            }
            // The context went away (a navigation): the frame itself may still be fine.
            Err(_) => {}
        }
    }
    let metrics = cdp
        .call(
            Call::PageGetLayoutMetrics.name(),
            json!({}),
            Some(session),
            timeout,
        )
        .await
        .map_err(failed)?;
    let vv = metrics
        .get("cssVisualViewport")
        .cloned()
        .unwrap_or_default();
    let num = |k: &str| vv.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let (x, y, w, h) = (
        num("pageX"),
        num("pageY"),
        num("clientWidth"),
        num("clientHeight"),
    );
    if w < 1.0 || h < 1.0 {
        return Err(NoFrame::Failed("the page has no visible area".into()));
    }
    let scale = (f64::from(size.max_width) / w).min(1.0);
    let shot = cdp
        .call(
            CommandMethod::PageCaptureScreenshot.name(),
            json!({
                "format": "jpeg",
                "quality": size.quality,
                "fromSurface": true,
                "captureBeyondViewport": false,
                "clip": { "x": x, "y": y, "width": w, "height": h, "scale": scale },
            }),
            Some(session),
            timeout,
        )
        .await
        .map_err(failed)?;
    let data = shot.get("data").and_then(Value::as_str).unwrap_or_default();
    let bytes = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(data.as_bytes())
            .map_err(|_| NoFrame::Failed("the browser sent an image that is not base64".into()))?
    };
    if bytes.is_empty() {
        return Err(NoFrame::Failed("the browser sent an empty image".into()));
    }
    Ok(Shot {
        bytes,
        width: (w * scale).round() as u32,
        height: (h * scale).round() as u32,
    })
}
