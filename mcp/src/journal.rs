//! The gateway's records: one `action` per tool call (`source: "mcp"`), and the gateway's
//! lifecycle events. The one module that writes them, through the run writer every other
//! producer in the relay uses; and the one place that registers the text an agent types.
//!
//! A call is registered with the pipeline's [`ToolCalls`](cdp_capture::calls::ToolCalls)
//! when it begins (so the CDP records it causes name it) and its record is written when it ends
//! — or, if it never ends (the agent left, the handler was dropped), as `interrupted`.
//! Records go to the run writer through a queue of their own and a task that forwards them in
//! order: an agent's call never waits for room in the writer's queue (a busy writer delays the
//! evidence, not the call); [`Recorder::flush`] waits until they are in the journal.
//! Arguments are reduced by [`super::args`]; results are never kept, only their counts, the
//! `isError` flag and a sanitized first line of an error. Nothing here logs an argument.

use super::args;
use cdp_capture::{Emit, PipelineHandle};
use cdp_evidence::{
    Action, ActionId, Lifecycle, LifecycleEvent, Record, RecordKind, Source, Status, ToolArgument,
    ToolResult,
};
use cdp_sanitize::{SafeText, Sanitizer};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

/// The `tool` of the gateway's own records: evidence's vocabulary.
pub(crate) use cdp_evidence::GATEWAY_TOOL;

/// A call begun and not yet written.
struct Pending {
    tool: SafeText,
    method: SafeText,
    arguments: Vec<ToolArgument>,
    start: SystemTime,
    clock: Instant,
    /// How long the server took, once it answered (the call may still be finishing: the
    /// gateway waits for what the evidence learned before it replies).
    answered: Option<std::time::Duration>,
}

/// How a call ended.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub status: Option<Status>,
    pub result: Option<ToolResult>,
    /// Raw error text (sanitized here, first line only).
    pub error: Option<String>,
    /// An agent's name for a step (`evidence_mark_step`), raw.
    pub label: Option<String>,
}

impl Outcome {
    pub(crate) fn ok(result: Option<ToolResult>) -> Outcome {
        Outcome {
            status: Some(Status::Ok),
            result,
            ..Outcome::default()
        }
    }

    pub(crate) fn error(error: impl Into<String>) -> Outcome {
        Outcome {
            status: Some(Status::Error),
            error: Some(error.into()),
            ..Outcome::default()
        }
    }

    pub(crate) fn interrupted(why: impl Into<String>) -> Outcome {
        Outcome {
            status: Some(Status::Interrupted),
            error: Some(why.into()),
            ..Outcome::default()
        }
    }
}

/// Records queued for the run writer at most; beyond, they go to the writer's own queue
/// without waiting (and are counted as dropped evidence if that is full too).
const FORWARD_QUEUE: usize = 4096;

/// What the forwarding task is given.
enum Forward {
    Batch(Vec<Emit>),
    /// Reply once everything before is in the journal.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Writes the gateway's records; a no-op without evidence.
pub(crate) struct Recorder {
    handle: Option<PipelineHandle>,
    pending: Mutex<HashMap<ActionId, Pending>>,
    /// Woken whenever a call ends.
    ended: tokio::sync::Notify,
    /// Short text typed one call at a time (`press_key {key: "7"}`, a one-time code `fill`ed
    /// box by box): one literal across consecutive calls, registered from its fourth
    /// character on ([`args::short_typing`] says which calls grow it, keep it or end it).
    short: Mutex<Option<cdp_sanitize::TypedEcho>>,
    forward: Option<tokio::sync::mpsc::Sender<Forward>>,
}

/// A call in flight. Ending it writes its record; dropping it unended writes it interrupted.
pub(crate) struct Call {
    id: ActionId,
    /// When it began, on the wall clock.
    start: SystemTime,
    recorder: Arc<Recorder>,
}

impl Recorder {
    /// A recorder writing through `handle` (call within a runtime: it starts the forwarding
    /// task).
    pub(crate) fn new(handle: Option<PipelineHandle>) -> Arc<Recorder> {
        let forward = handle.as_ref().map(|h| {
            let (tx, mut rx) = tokio::sync::mpsc::channel(FORWARD_QUEUE);
            let writer = h.writer().clone();
            tokio::spawn(async move {
                while let Some(f) = rx.recv().await {
                    match f {
                        Forward::Batch(batch) => writer.send(batch).await,
                        Forward::Flush(done) => {
                            writer.sync().await;
                            let _ = done.send(());
                        }
                    }
                }
            });
            tx
        });
        Arc::new(Recorder {
            handle,
            pending: Mutex::new(HashMap::new()),
            ended: tokio::sync::Notify::new(),
            short: Mutex::new(None),
            forward,
        })
    }

    /// Queues records for the journal without waiting.
    fn write(&self, batch: Vec<Emit>) {
        if batch.is_empty() {
            return;
        }
        let (Some(tx), Some(h)) = (&self.forward, &self.handle) else {
            return;
        };
        if let Err(e) = tx.try_send(Forward::Batch(batch)) {
            if let Forward::Batch(batch) = e.into_inner() {
                h.writer().try_send(batch);
            }
        }
    }

    /// Waits until every record queued so far is in the journal.
    pub(crate) async fn flush(&self) {
        if let Some(tx) = &self.forward {
            let (done, wait) = tokio::sync::oneshot::channel();
            if tx.send(Forward::Flush(done)).await.is_ok() {
                let _ = wait.await;
            }
        }
    }

    pub(crate) fn handle(&self) -> Option<&PipelineHandle> {
        self.handle.as_ref()
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<ActionId, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until no call is in flight, or `deadline`; true when none is.
    pub(crate) async fn settled(&self, deadline: tokio::time::Instant) -> bool {
        loop {
            let ended = self.ended.notified();
            if self.pending().is_empty() {
                return true;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return false;
            }
        }
    }

    /// Registers the text the agent types in this call as secrets of the run, so an echo on
    /// the page, in a console message or in the server's stderr is masked — before the call is
    /// forwarded. The one call site of the sanitizer's typed-literal API.
    pub(crate) fn protect_typed(&self, literals: &[String]) {
        if let Some(h) = &self.handle {
            for literal in literals {
                h.sanitizer().register_typed(literal);
            }
        }
    }

    /// Short text typed by a call (a character key, one box's `fill`) grows the literal of
    /// the short typing calls before it; a call that only reads the page leaves it open; any
    /// other call of the wrapped server ends it (the field may have changed). The gateway's own
    /// tools touch no page and leave it alone.
    fn protect_short(&self, server: &str, tool: &str, arguments: Option<&Map<String, Value>>) {
        let Some(h) = &self.handle else {
            return;
        };
        if server == GATEWAY_TOOL {
            return;
        }
        let mut short = self.short.lock().unwrap_or_else(PoisonError::into_inner);
        match args::short_typing(tool, arguments) {
            args::ShortTyping::Types(pieces) => {
                let echo = short.get_or_insert_with(|| h.sanitizer().typed_echo());
                for piece in pieces {
                    echo.extend(&piece);
                }
            }
            args::ShortTyping::Keeps => {}
            args::ShortTyping::Ends => *short = None,
        }
    }

    /// A call of `tool` on `server` begins: its typed text is protected, its arguments reduced,
    /// and it is announced to the pipeline so records made meanwhile name it.
    pub(crate) fn begin(
        self: &Arc<Self>,
        server: &str,
        tool: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Call {
        // Both clocks at once: the call's end is `start` plus the monotonic time since, and
        // keys are matched to it on the wall clock (reading the monotonic clock after the work
        // below put its end that much too early, before keys it typed).
        let (start, clock) = (SystemTime::now(), Instant::now());
        let id = ActionId::at(start);
        if let Some(h) = &self.handle {
            self.protect_short(server, tool, arguments);
            self.protect_typed(&args::typed_literals(tool, arguments));
            let s = h.sanitizer();
            let pending = Pending {
                tool: s.text_capped(server, 128),
                method: s.text_capped(tool, 128),
                arguments: args::reduce(s, tool, arguments),
                start,
                clock,
                answered: None,
            };
            self.pending().insert(id.clone(), pending);
            h.calls().begin(id.clone(), start);
        }
        Call {
            id,
            start,
            recorder: self.clone(),
        }
    }

    /// The record of a call that ended; `None` if it was written already.
    fn finish(&self, id: &ActionId, outcome: Outcome) -> Option<Emit> {
        let h = self.handle.as_ref()?;
        let p = self.pending().remove(id)?;
        self.ended.notify_waiters();
        let duration = p.answered.unwrap_or_else(|| p.clock.elapsed());
        if p.answered.is_none() {
            h.calls().end(id, p.start + duration);
        }
        let s = h.sanitizer();
        let mut action = Action::new(p.method);
        if !p.arguments.is_empty() {
            action.arguments = Some(p.arguments);
        }
        action.result = outcome.result;
        action.label = outcome.label.as_deref().map(|l| s.text_capped(l, 200));
        let mut record = Record::new(p.tool, RecordKind::Action(action))
            .source(Source::MCP)
            .action_id(id.clone())
            .started_at(p.start)
            .duration(duration)
            .status(outcome.status.unwrap_or(Status::Ok));
        if let Some(e) = outcome.error.as_deref() {
            record = record.error(first_line(s, e));
        }
        Some(Emit::Record(record))
    }

    /// Writes every call still in flight as interrupted (the gateway is stopping).
    pub(crate) fn abandon_all(&self, why: &str) {
        let ids: Vec<ActionId> = self.pending().keys().cloned().collect();
        let batch: Vec<Emit> = ids
            .iter()
            .filter_map(|id| self.finish(id, Outcome::interrupted(why)))
            .collect();
        self.write(batch);
    }

    /// Records a lifecycle event of the gateway.
    pub(crate) fn lifecycle(&self, event: LifecycleEvent, status: Status, detail: Option<&str>) {
        let Some(h) = &self.handle else {
            return;
        };
        let mut l = Lifecycle::new(event, 0);
        l.detail = detail.map(|d| h.sanitizer().text_capped(d, 300));
        let record = Record::new(SafeText::literal(GATEWAY_TOOL), RecordKind::Lifecycle(l))
            .source(Source::MCP)
            .status(status);
        self.write(vec![Emit::Record(record)]);
    }
}

impl Call {
    /// The id of its record (what the records it caused name).
    pub(crate) fn id(&self) -> &ActionId {
        &self.id
    }

    /// When it began, on the wall clock.
    pub(crate) fn started(&self) -> SystemTime {
        self.start
    }

    /// The server answered: the call's time ends here, for its record and for linking, even if
    /// the gateway takes a moment more before it replies.
    pub(crate) fn answered(&self) {
        let Some(h) = &self.recorder.handle else {
            return;
        };
        let mut pending = self.recorder.pending();
        if let Some(p) = pending.get_mut(&self.id) {
            if p.answered.is_none() {
                let took = p.clock.elapsed();
                p.answered = Some(took);
                h.calls().end(&self.id, p.start + took);
            }
        }
    }

    /// Ends the call and writes its record.
    pub(crate) fn end(self, outcome: Outcome) {
        if let Some(emit) = self.recorder.finish(&self.id, outcome) {
            self.recorder.write(vec![emit]);
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        // Not ended: the handler was dropped (the agent cancelled, or left).
        if let Some(emit) = self
            .recorder
            .finish(&self.id, Outcome::interrupted("the call was abandoned"))
        {
            self.recorder.write(vec![emit]);
        }
    }
}

/// The first line of an error, sanitized and capped.
fn first_line(s: &Sanitizer, e: &str) -> SafeText {
    // Sanitize the whole text first: a secret split by the cut must not leave half of itself.
    let whole = s.error(e);
    let first = whole.as_str().lines().next().unwrap_or("").trim();
    if first.len() == whole.as_str().len() {
        whole
    } else {
        s.text_capped(first, 300)
    }
}

/// The shape of a result for its record: counts and flags, never content.
pub(crate) fn result_shape(r: &CallToolResult) -> ToolResult {
    let images = r
        .content
        .iter()
        .filter(|c| matches!(c, rmcp::model::ContentBlock::Image(_)))
        .count();
    ToolResult::new(
        r.content.len() as u64,
        images as u64,
        r.structured_content.is_some(),
        r.is_error == Some(true),
    )
}

/// The first text of an error result (for its record's `error`, sanitized there).
pub(crate) fn result_error_text(r: &CallToolResult) -> Option<String> {
    if r.is_error != Some(true) {
        return None;
    }
    r.content.iter().find_map(|c| match c {
        rmcp::model::ContentBlock::Text(t) => Some(t.text.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_capture::{Hooks, Pipeline, Settings};
    use cdp_evidence::{InputType, StoredInput, StoredPayload, StoredRecord, Word};
    use serde_json::json;

    /// An action's `method` as written.
    fn method(r: &StoredRecord) -> Option<String> {
        r.action_method().map(|m| m.as_str().to_owned())
    }

    fn pipeline(root: &std::path::Path) -> Pipeline {
        let settings = Settings {
            session: Some("journal-test".into()),
            ..Settings::at(root)
        };
        Pipeline::start(&settings, Hooks::default()).unwrap()
    }

    #[tokio::test]
    async fn a_call_is_announced_and_its_typed_text_protected_before_it_is_forwarded() {
        let tmp = tempfile::tempdir().unwrap();
        let p = pipeline(tmp.path());
        let h = p.handle().clone();
        let recorder = Recorder::new(Some(h.clone()));
        let args = json!({"elements": [{"uid": "1_5", "value": "S3cret-Passw0rd"}]});
        let call = recorder.begin("chrome_devtools", "fill_form", args.as_object());
        // From the moment the call begins, before anything reaches the browser.
        assert_eq!(
            h.sanitizer().text("echo: S3cret-Passw0rd").as_str(),
            "echo: ${TYPED_1}"
        );
        let mut cdp = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(cdp_evidence::Action::new(SafeText::literal(
                "Input.insertText",
            ))),
        );
        h.calls().link(&mut cdp);
        assert!(
            cdp.tool_call().is_some(),
            "records made meanwhile name the call"
        );
        call.end(Outcome {
            result: Some(ToolResult::new(1, 0, false, false)),
            ..Outcome::ok(None)
        });
        // A call whose handler is dropped unended is interrupted; one still open at the end
        // is written when the gateway gives up on it.
        drop(recorder.begin("chrome_devtools", "click", None));
        let _open = recorder.begin("chrome_devtools", "wait_for", None);
        recorder.abandon_all("the gateway stopped");
        recorder.lifecycle(LifecycleEvent::AgentDisconnected, Status::Info, None);
        recorder.flush().await;
        let run = p.finish().await.unwrap().run_dir;
        let bytes = std::fs::read(run.join("actions.jsonl")).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("S3cret"));
        let records: Vec<StoredRecord> = cdp_evidence::parse_journal(&bytes).records;
        let by = |m: &str| {
            records
                .iter()
                .find(|r| r.source.as_deref() == Some("mcp") && method(r).as_deref() == Some(m))
                .unwrap_or_else(|| panic!("{m}"))
        };
        let fill = by("fill_form");
        assert_eq!(fill.status.as_deref(), Some("ok"));
        assert_eq!(fill.tool.as_deref(), Some("chrome_devtools"));
        assert_eq!(
            fill.tool_arguments()[0].items.as_ref().unwrap()[0]
                .items
                .as_ref()
                .unwrap()[1]
                .input,
            Some(StoredInput {
                chars: 15,
                input_type: Some(Word::Known(InputType::Unknown)),
                variable: None,
            })
        );
        let StoredPayload::Action(fill_action) = fill.typed_payload() else {
            panic!("fill_form's record is no action: {fill:?}");
        };
        let result = fill_action.result.expect("fill_form's result");
        assert_eq!(
            (result.content, result.images, result.structured),
            (1, 0, false)
        );
        assert_eq!(by("click").status.as_deref(), Some("interrupted"));
        assert_eq!(by("wait_for").status.as_deref(), Some("interrupted"));
        assert!(records.iter().any(|r| matches!(
            r.typed_payload(),
            StoredPayload::Lifecycle(l) if l.event == LifecycleEvent::AgentDisconnected
        )));
    }

    #[tokio::test]
    async fn keys_typed_one_call_at_a_time_are_one_literal_until_another_call() {
        let tmp = tempfile::tempdir().unwrap();
        let p = pipeline(tmp.path());
        let h = p.handle().clone();
        let recorder = Recorder::new(Some(h.clone()));
        let press = |server: &str, tool: &str, key: &str| {
            let args = json!({"key": key});
            recorder
                .begin(server, tool, args.as_object())
                .end(Outcome::ok(None));
        };
        // A PIN typed key by key, a look at the evidence between keys, a named key.
        press("chrome_devtools", "press_key", "4");
        press("chrome_devtools", "press_key", "8");
        recorder
            .begin(GATEWAY_TOOL, "evidence_summary", None)
            .end(Outcome::ok(None));
        press("chrome_devtools", "press_key", "Shift+Q");
        press("chrome_devtools", "press_key", "9");
        press("chrome_devtools", "press_key", "Enter");
        assert_eq!(h.sanitizer().text("pin 48Q9").as_str(), "pin ${TYPED_1}");
        // Another call of the server ends the literal: the next keys start a new one.
        recorder
            .begin(
                "chrome_devtools",
                "click",
                json!({"uid": "1_2"}).as_object(),
            )
            .end(Outcome::ok(None));
        for key in ["7", "7", "1"] {
            press("playwright", "browser_press_key", key);
        }
        assert_eq!(
            h.sanitizer().text("771").as_str(),
            "771",
            "three keys: not yet"
        );
        press("playwright", "browser_press_key", "3");
        assert_eq!(h.sanitizer().text("7713").as_str(), "${TYPED_2}");
        recorder.flush().await;
        let run = p.finish().await.unwrap().run_dir;
        let journal = std::fs::read_to_string(run.join("actions.jsonl")).unwrap();
        let records = cdp_evidence::parse_journal(journal.as_bytes()).records;
        let keys: Vec<_> = records
            .iter()
            .filter(|r| method(r).is_some_and(|m| m.ends_with("press_key")))
            .map(|r| r.tool_arguments().remove(0))
            .collect();
        assert_eq!(keys.len(), 9);
        assert_eq!(keys[4].value, Some(json!("Enter")));
        for (i, k) in keys.iter().enumerate().filter(|(i, _)| *i != 4) {
            assert_eq!(
                k.input.as_ref().map(|input| input.chars),
                Some(1),
                "{i}: {k:?}"
            );
            assert!(k.value.is_none(), "{i}: {k:?}");
        }
    }

    #[tokio::test]
    async fn a_code_filled_box_by_box_is_one_literal_until_the_page_is_acted_on() {
        let tmp = tempfile::tempdir().unwrap();
        let p = pipeline(tmp.path());
        let h = p.handle().clone();
        let recorder = Recorder::new(Some(h.clone()));
        let call = |server: &str, tool: &str, args: Value| {
            recorder
                .begin(server, tool, args.as_object())
                .end(Outcome::ok(None));
        };
        // chrome-devtools-mcp: one `fill` per box, a snapshot between some of them.
        for (i, digit) in "757525".chars().enumerate() {
            call(
                "chrome_devtools",
                "fill",
                json!({"uid": format!("1_{i}"), "value": digit.to_string()}),
            );
            if i == 1 {
                call("chrome_devtools", "take_snapshot", json!({}));
            }
        }
        let masked = h.sanitizer().text("code 757525 expired");
        assert!(
            masked.as_str().starts_with("code ${TYPED_") && !masked.as_str().contains("7575"),
            "{}",
            masked.as_str()
        );
        // @playwright/mcp: a form of boxes in one call.
        call("playwright", "browser_click", json!({"target": "e3"}));
        call(
            "playwright",
            "browser_fill_form",
            json!({"fields": [
                {"name": "Digit 1", "type": "textbox", "target": "e4", "value": "4"},
                {"name": "Digit 2", "type": "textbox", "target": "e5", "value": "1"},
                {"name": "Digit 3", "type": "textbox", "target": "e6", "value": "9"},
                {"name": "Digit 4", "type": "textbox", "target": "e7", "value": "3"}
            ]}),
        );
        assert!(!h.sanitizer().text("4193").as_str().contains("4193"));
        // Short typing on either side of an action on the page is never glued.
        call(
            "playwright",
            "browser_type",
            json!({"target": "e8", "text": "ok"}),
        );
        call("playwright", "browser_click", json!({"target": "e9"}));
        call(
            "playwright",
            "browser_type",
            json!({"target": "e10", "text": "go"}),
        );
        assert_eq!(h.sanitizer().text("okgo").as_str(), "okgo");
        // Nor across a long text, which is protected on its own.
        call(
            "playwright",
            "browser_type",
            json!({"target": "e11", "text": "Berlin"}),
        );
        call(
            "playwright",
            "browser_type",
            json!({"target": "e12", "text": "12"}),
        );
        assert_eq!(h.sanitizer().text("go12").as_str(), "go12");
        recorder.flush().await;
        let run = p.finish().await.unwrap().run_dir;
        let journal = std::fs::read_to_string(run.join("actions.jsonl")).unwrap();
        for needle in ["757525", "7575", "4193"] {
            assert!(!journal.contains(needle), "{needle} in the journal");
        }
    }

    #[test]
    fn an_error_keeps_its_first_line_only_sanitized() {
        let s = Sanitizer::new();
        let e = first_line(&s, "Timeout: no element\n  at token=abc123 line 2");
        assert_eq!(e.as_str(), "Timeout: no element");
        let e = first_line(&s, "failed with password=hunter22");
        assert_eq!(e.as_str(), "failed with password=[redacted:password]");
    }
}
