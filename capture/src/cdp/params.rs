//! The few CDP shapes the observers read, as borrowed serde structs. Everything else in a message
//! is skipped by the parser without being materialized.

use serde::Deserialize;
use std::borrow::Cow;

type Str<'a> = Cow<'a, str>;

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Url<'a> {
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct MouseEvent<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Str<'a>,
    pub(crate) x: f64,
    pub(crate) y: f64,
    #[serde(borrow)]
    pub(crate) button: Str<'a>,
    pub(crate) click_count: u32,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct TouchPoint {
    pub(crate) x: f64,
    pub(crate) y: f64,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct TouchEvent<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Str<'a>,
    pub(crate) touch_points: Vec<TouchPoint>,
}

/// A key event, for named keys only: typed text is read by `typed.rs`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct KeyEvent<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Str<'a>,
    #[serde(borrow)]
    pub(crate) key: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct FileInput<'a> {
    #[serde(borrow)]
    pub(crate) files: Vec<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Evaluate<'a> {
    #[serde(borrow)]
    pub(crate) expression: Str<'a>,
    #[serde(borrow)]
    pub(crate) function_declaration: Str<'a>,
    /// V8 refuses to run anything with a side effect: the call can only read the page.
    pub(crate) throw_on_side_effect: bool,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct TargetId<'a> {
    #[serde(borrow)]
    pub(crate) target_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Screenshot<'a> {
    #[serde(borrow)]
    pub(crate) format: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Data<'a> {
    #[serde(borrow)]
    pub(crate) data: Str<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Request<'a> {
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
    #[serde(borrow)]
    pub(crate) method: Str<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RequestWillBeSent<'a> {
    #[serde(borrow)]
    pub(crate) request_id: Str<'a>,
    /// The document that made the request.
    #[serde(borrow, rename = "documentURL")]
    pub(crate) document_url: Str<'a>,
    #[serde(borrow)]
    pub(crate) request: Request<'a>,
    #[serde(borrow, rename = "type")]
    pub(crate) resource_type: Option<Str<'a>>,
    pub(crate) timestamp: f64,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Response<'a> {
    pub(crate) status: u16,
    #[serde(borrow)]
    pub(crate) status_text: Str<'a>,
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ResponseReceived<'a> {
    #[serde(borrow)]
    pub(crate) request_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) response: Response<'a>,
    #[serde(borrow, rename = "type")]
    pub(crate) resource_type: Option<Str<'a>>,
    pub(crate) timestamp: f64,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CorsStatus<'a> {
    #[serde(borrow)]
    pub(crate) cors_error: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct LoadingFailed<'a> {
    #[serde(borrow)]
    pub(crate) request_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) error_text: Str<'a>,
    pub(crate) canceled: bool,
    #[serde(borrow)]
    pub(crate) blocked_reason: Option<Str<'a>>,
    #[serde(borrow)]
    pub(crate) cors_error_status: Option<CorsStatus<'a>>,
    #[serde(borrow, rename = "type")]
    pub(crate) resource_type: Option<Str<'a>>,
    pub(crate) timestamp: f64,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RequestId<'a> {
    #[serde(borrow)]
    pub(crate) request_id: Str<'a>,
}

/// A `Runtime.RemoteObject`, reduced to what makes console text.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RemoteObject<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Str<'a>,
    pub(crate) value: Option<serde_json::Value>,
    #[serde(borrow)]
    pub(crate) unserializable_value: Option<Str<'a>>,
    #[serde(borrow)]
    pub(crate) description: Option<Str<'a>>,
}

impl RemoteObject<'_> {
    /// How DevTools would print this argument.
    pub(crate) fn display(&self) -> String {
        match &self.value {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Null) => "null".into(),
            Some(v @ (serde_json::Value::Bool(_) | serde_json::Value::Number(_))) => v.to_string(),
            _ => self
                .unserializable_value
                .as_deref()
                .or(self.description.as_deref())
                .unwrap_or(&self.kind)
                .to_owned(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CallFrame<'a> {
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
    pub(crate) line_number: u32,
    pub(crate) column_number: u32,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct StackTrace<'a> {
    #[serde(borrow)]
    pub(crate) call_frames: Vec<CallFrame<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ConsoleApiCalled<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Str<'a>,
    #[serde(borrow)]
    pub(crate) args: Vec<RemoteObject<'a>>,
    #[serde(borrow)]
    pub(crate) stack_trace: Option<StackTrace<'a>>,
    /// Milliseconds since the epoch; the same in every session that sees the call.
    pub(crate) timestamp: f64,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ExceptionDetails<'a> {
    #[serde(borrow)]
    pub(crate) text: Str<'a>,
    pub(crate) line_number: u32,
    pub(crate) column_number: u32,
    #[serde(borrow)]
    pub(crate) url: Option<Str<'a>>,
    #[serde(borrow)]
    pub(crate) exception: Option<RemoteObject<'a>>,
    #[serde(borrow)]
    pub(crate) stack_trace: Option<StackTrace<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ExceptionThrown<'a> {
    #[serde(borrow)]
    pub(crate) exception_details: ExceptionDetails<'a>,
    pub(crate) timestamp: f64,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct LogEntry<'a> {
    #[serde(borrow)]
    pub(crate) source: Str<'a>,
    #[serde(borrow)]
    pub(crate) level: Str<'a>,
    #[serde(borrow)]
    pub(crate) text: Str<'a>,
    #[serde(borrow)]
    pub(crate) url: Option<Str<'a>>,
    pub(crate) line_number: Option<u32>,
    pub(crate) timestamp: f64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct EntryAdded<'a> {
    #[serde(borrow)]
    pub(crate) entry: LogEntry<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Frame<'a> {
    #[serde(borrow)]
    pub(crate) parent_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub(crate) url: Str<'a>,
    /// The document's loader: a new one for every document the frame commits.
    #[serde(borrow)]
    pub(crate) loader_id: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct FrameNavigated<'a> {
    #[serde(borrow)]
    pub(crate) frame: Frame<'a>,
    /// `Navigation` or `BackForwardCacheRestore`.
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Str<'a>,
}

impl FrameNavigated<'_> {
    /// The main frame committed a document (what the capture policy needs to know of it).
    pub(crate) fn main_frame_commit(&self) -> Option<(&str, Commit)> {
        if self.frame.parent_id.is_some() || self.frame.loader_id.is_empty() {
            return None;
        }
        let bfcache = self.kind == "BackForwardCacheRestore";
        Some((&self.frame.loader_id, Commit::FrameNavigated { bfcache }))
    }
}

/// `Page.frameStartedNavigating`: how a navigation that may commit `loader_id` began.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct FrameStartedNavigating<'a> {
    #[serde(borrow)]
    pub(crate) frame_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) loader_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) navigation_type: Str<'a>,
}

/// The reply to `Page.navigate`: a loader when a document is on its way (none for a navigation
/// within the document), an error when it will not commit (a 204, a download, an error page).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Navigated<'a> {
    #[serde(borrow)]
    pub(crate) loader_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) error_text: Option<Str<'a>>,
    pub(crate) is_download: bool,
}

impl Navigated<'_> {
    /// The loader of the fresh document this reply says committed, if it says so.
    pub(crate) fn fresh_loader(&self) -> Option<&str> {
        let committed = !self.loader_id.is_empty()
            && self.error_text.as_deref().is_none_or(str::is_empty)
            && !self.is_download;
        committed.then_some(&*self.loader_id)
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AttachedToTarget<'a> {
    #[serde(borrow)]
    pub(crate) session_id: Str<'a>,
    pub(crate) target_info: serde_json::Value,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct TargetInfoChanged {
    pub(crate) target_info: serde_json::Value,
}

/// A non-flat session's message: the params of `Target.sendMessageToTarget` (a command to the
/// session, named by `sessionId` or, deprecated, `targetId`) and of
/// `Target.receivedMessageFromTarget` (its answer or event). `message` is a whole CDP message as
/// a JSON string.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Wrapped<'a> {
    #[serde(borrow)]
    pub(crate) session_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) target_id: Str<'a>,
    #[serde(borrow)]
    pub(crate) message: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct SessionRef<'a> {
    #[serde(borrow)]
    pub(crate) session_id: Str<'a>,
}

/// `Runtime.executionContextCreated`: the relay's observer looks for its page agent's world.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct ContextCreated<'a> {
    #[serde(borrow)]
    pub(crate) context: ContextDescription<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ContextDescription<'a> {
    pub(crate) id: i64,
    #[serde(borrow)]
    pub(crate) name: Str<'a>,
    /// The frame's origin (`://` for an opaque one).
    #[serde(borrow)]
    pub(crate) origin: Str<'a>,
    #[serde(borrow)]
    pub(crate) aux_data: ContextAux<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ContextAux<'a> {
    #[serde(borrow)]
    pub(crate) frame_id: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ContextDestroyed {
    pub(crate) execution_context_id: i64,
}

/// `Runtime.bindingCalled`: a message from the relay's page agent (or from a page calling a
/// binding of the same name in another world, which is ignored).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct BindingCalled<'a> {
    #[serde(borrow)]
    pub(crate) name: Str<'a>,
    #[serde(borrow)]
    pub(crate) payload: Str<'a>,
    pub(crate) execution_context_id: i64,
}

/// A report that the main frame committed a document (identified by its loader id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// `Page.frameNavigated` for the main frame; `bfcache` when its `type` is
    /// `BackForwardCacheRestore`. How the navigation started (see
    /// `Pages::navigation_started`) tells a fresh document from one out of history.
    FrameNavigated { bfcache: bool },
    /// The reply to `Page.navigate` named a loader and no error: a fresh document committed
    /// (a navigation within the document names none; a 204 or a download carries an error).
    NavigateReply,
}
