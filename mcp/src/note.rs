//! The note: what the evidence learned during a tool call, told to the agent in the call's own
//! result — whether the text it typed landed in the field it meant, and which requests failed
//! and which errors the page logged meanwhile. One text item of the gateway's own is appended
//! after the wrapped server's content, and the same facts go under `_meta["cdp-relay/evidence"]`
//! for a harness to gate on; the server's `structuredContent` is never touched.
//!
//! Value-free by construction: everything here is read from records the run's sanitizer made
//! (counts, field kinds, the verdict's own note, sanitized URLs and console text) and from the
//! page agent's field readings (kind words, lengths, indices), the same words a report shows,
//! never a typed character. A call that did not type and saw no failure gets nothing.
//!
//! A call whose arguments type never ends without a line about its typing
//! ([`wait_for_evidence`]):
//!
//! - each typing step linked to it, with its verdict (the traffic reader tags every burst at its
//!   first key with the calls that could have typed it: this is the call's own typing, not the
//!   process's). When the server answers, the call's bursts end at once (not after the typing
//!   gap) and the gateway waits — at most [`Feedback::wait`] — until each has its step;
//! - "not verified yet" for a step whose verdict did not come in time, and for a call whose
//!   browser traffic the relay had not read by then: a later call's result tells it, marked as
//!   an earlier call's ([`PendingVerdicts`]);
//! - when no key reached the browser (a server that sets `.value` by script: long texts, dates,
//!   selects), what the page agent reads on the pages the call acted on: whether a field set by
//!   script holds the text (landed), how many characters it holds if not, or whether a field
//!   already held it — lengths against the argument's, never a character;
//! - for a key typed by a key-pressing call (`press_key "7"`), which does not wait (typing key
//!   by key goes on in the next call): that its step is still being typed, or that it continues
//!   an earlier call's step; the verdict comes in a later result.
//!
//! A failure the run links to a call after its answer (the page logs the error a moment after
//! the request the click started failed) is told in the next result, marked as that call's
//! ([`PendingVerdicts::late_failures`]): what a call caused is never left untold because the
//! server answered first.
//!
//! Every deadline is checked: a wait that runs out is said, never taken for "nothing typed".
//! What the lines say, and the `_meta` words beside the journal's verdict words, are in
//! docs/security.md ("What the agent hears").

use super::args;
use cdp_capture::calls::{CallTyping, ToolCalls};
use cdp_capture::facts::{CallFacts, Linked};
use cdp_capture::PipelineHandle;
use cdp_evidence::{ActionId, RecordKind, VerdictReason, Verified};
use cdp_relay_proxy::order::Order;
use cdp_relay_proxy::tap::Tap;
use cdp_sanitize::{NetworkFailure, Sanitizer};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{json, Map, Value};
use std::time::{Duration, SystemTime};

/// The `_meta` key of the facts.
pub(crate) const META_KEY: &str = "cdp-relay/evidence";

/// By default, how long a call that typed waits for its verdicts once the server answered.
pub const DEFAULT_FEEDBACK_WAIT: Duration = Duration::from_millis(1000);

/// Longest console text quoted in the note, in characters.
const MAX_TEXT: usize = 200;

/// What the gateway tells the agent of the evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feedback {
    /// Off: results go to the agent exactly as the wrapped server sent them.
    pub enabled: bool,
    /// How long a call that typed waits for its verdicts after the server answered.
    pub wait: Duration,
    /// A typing step whose text did not land (`verified: false`) makes the result an error;
    /// every step is judged, listed or not, and an earlier call's told here too.
    pub strict: bool,
}

impl Default for Feedback {
    fn default() -> Self {
        Feedback {
            enabled: true,
            wait: DEFAULT_FEEDBACK_WAIT,
            strict: false,
        }
    }
}

/// Tools whose text may be a dialog's answer rather than typing into a field.
const DIALOG_TOOLS: &[&str] = &["handle_dialog", "browser_handle_dialog", "evaluate_script"];

/// How a call types, from its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HowTyped {
    /// Not from its arguments (a page may still receive typing during it).
    Nothing,
    /// Text into fields (`fill`, `type_text`, `browser_type`, …).
    IntoFields,
    /// One character key: typing key by key, which goes on across calls.
    KeyByKey,
    /// A dialog's answer: not typed into a field.
    DialogAnswer,
}

/// What a call was asked to type, taken when it begins. The texts stay in memory only: they are
/// compared in the page when no key carried them, as verification compares typed text.
pub(crate) struct Intent {
    how: HowTyped,
    texts: Vec<String>,
}

impl std::fmt::Debug for Intent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lengths: Vec<u64> = self.texts.iter().map(|t| chars(t)).collect();
        f.debug_struct("Intent")
            .field("how", &self.how)
            .field("lengths", &lengths)
            .finish()
    }
}

impl Intent {
    pub(crate) fn of(tool: &str, arguments: Option<&Map<String, Value>>) -> Intent {
        if let Some(key) = args::typed_key(tool, arguments) {
            return Intent {
                how: HowTyped::KeyByKey,
                texts: vec![key],
            };
        }
        let texts = args::typed_literals(tool, arguments);
        let how = match (texts.is_empty(), DIALOG_TOOLS.contains(&tool)) {
            (true, _) => HowTyped::Nothing,
            (false, true) => HowTyped::DialogAnswer,
            (false, false) => HowTyped::IntoFields,
        };
        Intent { how, texts }
    }
}

fn chars(s: &str) -> u64 {
    s.chars().count() as u64
}

/// What [`wait_for_evidence`] reads: the pipeline's parts (a stand-in's in tests).
pub(crate) struct Sources<'a> {
    order: &'a Order,
    calls: &'a ToolCalls,
    tap: &'a Tap,
    sanitizer: &'a Sanitizer,
    /// The pipeline, for the writer and field readings; `None` in tests.
    pipeline: Option<&'a PipelineHandle>,
}

impl<'a> Sources<'a> {
    pub(crate) fn of(h: &'a PipelineHandle) -> Sources<'a> {
        Sources {
            order: h.order(),
            calls: h.calls(),
            tap: h.tap(),
            sanitizer: h.sanitizer(),
            pipeline: Some(h),
        }
    }
}

/// One line of the note and its `_meta` entry.
#[derive(Debug, Clone)]
struct Told {
    line: String,
    meta: Value,
}

impl Told {
    fn new(line: String, verified: Value, reason: &str) -> Told {
        Told {
            line,
            meta: json!({"verified": verified, "reason": reason}),
        }
    }

    fn chars(mut self, n: u64) -> Told {
        self.meta["chars"] = json!(n);
        self
    }

    /// No key carried it and no field was set by script to it (`how: "none"`).
    fn without_keys(mut self) -> Told {
        self.meta["how"] = json!("none");
        self
    }

    fn not_landed(&self) -> bool {
        self.meta["verified"] == Value::Bool(false)
    }
}

/// Calls remembered with verdicts still to tell, at most; the oldest go first.
const MAX_PENDING: usize = 16;
/// How long a call's verdicts stay to be told (as long as its records are linked to it:
/// `calls::REMEMBER`).
const PENDING_FOR: Duration = cdp_capture::calls::REMEMBER;

/// How long after its answer a call's failures are looked for: the run links an effect to a
/// call up to `AFTERMATH` after it ended, and writes it a moment later.
const LATE_FOR: Duration = cdp_capture::calls::AFTERMATH.saturating_add(Duration::from_secs(3));

/// What earlier calls have not told yet, so that a later call's result tells it: typing not
/// told in full (a key-by-key call, a call whose verdicts came too late, a call whose traffic
/// the relay had not read in time), and failures linked to a call after its answer.
#[derive(Debug, Default)]
pub(crate) struct PendingVerdicts {
    calls: std::sync::Mutex<std::collections::VecDeque<PendingCall>>,
    answered: std::sync::Mutex<std::collections::VecDeque<Answered>>,
}

/// A call answered lately, with the failures its result told.
#[derive(Debug)]
struct Answered {
    id: ActionId,
    /// The tool's name, sanitized.
    tool: String,
    /// Failures told so far (kept and counted).
    told: usize,
    at: std::time::Instant,
}

#[derive(Debug)]
struct PendingCall {
    id: ActionId,
    /// The tool's name, sanitized.
    tool: String,
    /// Typing steps of it told so far.
    told: usize,
    /// The relay had read its browser traffic when it was answered.
    checked: bool,
    since: std::time::Instant,
}

impl PendingVerdicts {
    fn remember(&self, id: &ActionId, tool: String, told: usize, checked: bool) {
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if calls.len() >= MAX_PENDING {
            calls.pop_front();
        }
        calls.push_back(PendingCall {
            id: id.clone(),
            tool,
            told,
            checked,
            since: std::time::Instant::now(),
        });
    }

    /// What pending calls learned since they were last told (`caught_up`: the relay has read
    /// the browser's traffic up to now); a call with nothing more to come, or whose time is up,
    /// is forgotten.
    fn news(&self, calls: &ToolCalls, caught_up: bool) -> Vec<Told> {
        let mut pending = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::new();
        pending.retain_mut(|call| {
            let (Some(facts), Some(typing)) = (calls.facts(&call.id), calls.typing_of(&call.id))
            else {
                return false;
            };
            // New steps are the latest kept (a kept landed step may have made room for them).
            let total = facts.typing_steps();
            let new = total.saturating_sub(call.told).min(facts.typing.len());
            for step in &facts.typing[facts.typing.len() - new..] {
                out.push(earlier(&call.tool, &call.id, typing_step(step)));
            }
            call.told = call.told.max(total);
            if !call.checked && caught_up {
                call.checked = true;
                if typing.keys == 0 {
                    let told = Told::new(
                        "- typing: not verified: no key reached the browser".into(),
                        json!("indeterminate"),
                        "no-keys",
                    );
                    out.push(earlier(&call.tool, &call.id, told));
                }
            }
            let more_to_come = typing.open > 0 || !call.checked;
            more_to_come && call.since.elapsed() < PENDING_FOR
        });
        out
    }
}

impl PendingVerdicts {
    /// Remembers call `id` (of `tool`), answered with `told` failures told.
    fn answered(&self, id: &ActionId, tool: String, told: usize) {
        let mut calls = self
            .answered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if calls.len() >= MAX_PENDING {
            calls.pop_front();
        }
        calls.push_back(Answered {
            id: id.clone(),
            tool,
            told,
            at: std::time::Instant::now(),
        });
    }

    /// Failures linked to calls answered lately since they were last told, each marked as its
    /// call's; a call whose time for effects is over is forgotten.
    fn late_failures(&self, calls: &ToolCalls) -> Vec<Told> {
        let mut answered = self
            .answered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::new();
        answered.retain_mut(|call| {
            let Some(facts) = calls.facts(&call.id) else {
                return false;
            };
            let total = facts.failures.len() + facts.more_failures;
            if total > call.told {
                let kept = facts.failures.iter().skip(call.told);
                let n_kept = facts.failures.len().saturating_sub(call.told);
                for l in kept {
                    out.push(after_answer(&call.tool, &call.id, failure(l)));
                }
                let more = total - call.told - n_kept;
                if more > 0 {
                    let told = Told {
                        line: format!("- {more} more failures (evidence_summary lists them)"),
                        meta: json!({"kind": "more", "count": more}),
                    };
                    out.push(after_answer(&call.tool, &call.id, told));
                }
                call.told = total;
            }
            call.at.elapsed() < LATE_FOR
        });
        out
    }
}

/// `told`, a failure linked to an earlier call after its answer.
fn after_answer(tool: &str, id: &ActionId, mut told: Told) -> Told {
    let rest = told.line.trim_start_matches("- ");
    told.line = format!("- after call {tool} was answered: {rest}");
    told.meta["earlier"] = Value::Bool(true);
    told.meta["call"] = Value::String(id.as_str().to_owned());
    told
}

/// `told` as an earlier call's.
fn earlier(tool: &str, id: &ActionId, mut told: Told) -> Told {
    let rest = told.line.trim_start_matches("- typing");
    told.line = format!("- earlier typing (call {tool}){rest}");
    told.meta["earlier"] = Value::Bool(true);
    told.meta["call"] = Value::String(id.as_str().to_owned());
    told
}

/// What the gateway learned, for the note.
#[derive(Debug, Default)]
pub(crate) struct CallEvidence {
    facts: CallFacts,
    /// Lines about this call's typing that no step's verdict says.
    notes: Vec<Told>,
    /// Earlier calls' typing, told now.
    earlier: Vec<Told>,
    /// Failures linked to earlier calls after their answers, told now.
    late: Vec<Told>,
}

/// Waits (bounded by `wait`) for what the evidence learns about call `id` (of `tool`, begun at
/// `since`), which the server has just answered.
pub(crate) async fn wait_for_evidence(
    src: &Sources<'_>,
    pending: &PendingVerdicts,
    (id, tool): (&ActionId, &str),
    intent: &Intent,
    since: SystemTime,
    wait: Duration,
) -> CallEvidence {
    let deadline = tokio::time::Instant::now() + wait;
    // Everything the browser and the server said before the answer is read first: the call's
    // keys are tagged by then.
    let caught_up = tokio::time::timeout_at(deadline, src.order.caught_up())
        .await
        .is_ok();
    let mut typing = src.calls.typing_of(id).unwrap_or_default();
    if caught_up && typing.open > 0 && intent.how != HowTyped::KeyByKey {
        // The call's typing is over: its bursts end now, their verdicts are asked for.
        src.tap.typing_over(Some(id.as_str()));
        let _attending = src.order.attend();
        src.calls.typing_settled(id, deadline).await;
        typing = src.calls.typing_of(id).unwrap_or_default();
    }
    let facts = src.calls.facts(id).unwrap_or_default();
    let mut notes = Vec::new();
    let verdicts_to_come = if !caught_up {
        if intent.how != HowTyped::Nothing {
            notes.push(Told::new(
                format!(
                    "- typing: not verified yet (the relay had not read this call's browser traffic within {} ms; a later result tells it)",
                    wait.as_millis()
                ),
                Value::Null,
                "not-read-yet",
            ));
        }
        intent.how != HowTyped::Nothing || typing.open > 0
    } else {
        let open = typing.open;
        for _ in 0..open {
            notes.push(match intent.how {
                // Not waited for: typing key by key goes on in the next call.
                HowTyped::KeyByKey => Told::new(
                    "- typing: a typing step still being typed (its verdict comes when the typing pauses; a later result tells it)".into(),
                    Value::Null,
                    "still-typing",
                ),
                _ => not_verified_yet(wait),
            });
        }
        notes.extend(without_steps(src, id, intent, typing, since, deadline).await);
        open > 0
    };
    let earlier = pending.news(src.calls, caught_up);
    let late = pending.late_failures(src.calls);
    let tool = src.sanitizer.text_capped(tool, 64).into_string();
    pending.answered(id, tool.clone(), facts.failures.len() + facts.more_failures);
    if verdicts_to_come {
        pending.remember(id, tool, facts.typing_steps(), caught_up);
    }
    CallEvidence {
        facts,
        notes,
        earlier,
        late,
    }
}

fn not_verified_yet(wait: Duration) -> Told {
    Told::new(
        format!(
            "- typing: not verified yet (no verdict within {} ms; a later result tells it)",
            wait.as_millis()
        ),
        Value::Null,
        "not-verified-yet",
    )
}

/// Lines for what the call meant to type that has no step of its own: a key still being typed
/// or continuing an earlier call's step, a dialog's answer, text no key carried.
async fn without_steps(
    src: &Sources<'_>,
    id: &ActionId,
    intent: &Intent,
    typing: CallTyping,
    since: SystemTime,
    deadline: tokio::time::Instant,
) -> Vec<Told> {
    let n = intent.texts.first().map_or(0, |t| chars(t));
    let continues = || {
        Told::new(
            "- typing: continues a typing step an earlier call began (its verdict is told with that call's)".into(),
            Value::Null,
            "continues-earlier",
        )
        .chars(n)
    };
    match intent.how {
        HowTyped::Nothing => Vec::new(),
        HowTyped::KeyByKey if typing.keys == 0 => vec![no_key(
            n,
            "not verified: no key reached the browser",
            "no-keys",
        )],
        // Its step is still being typed (counted open), or an earlier call's is.
        HowTyped::KeyByKey if typing.bursts == 0 => vec![continues()],
        HowTyped::KeyByKey => Vec::new(),
        HowTyped::DialogAnswer if typing.keys == 0 => intent
            .texts
            .iter()
            .map(|t| {
                no_key(
                    chars(t),
                    "not verified: a dialog's answer, not typed into a field",
                    "dialog-answer",
                )
            })
            .collect(),
        HowTyped::DialogAnswer => Vec::new(),
        HowTyped::IntoFields if typing.keys > 0 && typing.bursts == 0 => vec![continues()],
        HowTyped::IntoFields if (typing.bursts as usize) < intent.texts.len() => {
            fields::read_fields(src, id, intent, typing, since, deadline).await
        }
        HowTyped::IntoFields => Vec::new(),
    }
}

/// Typing of `n` characters with no step, not verified: `words` says why (its `note` under
/// `_meta`, as a step's verdict has), `reason` in a word.
fn no_key(n: u64, words: &str, reason: &str) -> Told {
    let mut told = Told::new(
        format!("- typing, {}: {words}", count(n)),
        json!("indeterminate"),
        reason,
    )
    .chars(n)
    .without_keys();
    let note = words.strip_prefix("not verified: ").unwrap_or(words);
    told.meta["note"] = json!(note);
    told
}

fn count(n: u64) -> String {
    if n == 1 {
        "1 char".into()
    } else {
        format!("{n} chars")
    }
}

/// A verdict as the note says it.
fn verdict_words(verified: Option<Verified>) -> &'static str {
    match verified {
        Some(Verified::True) => "landed",
        Some(Verified::False) => "did NOT land",
        _ => "not verified",
    }
}

fn verdict_json(verified: Verified) -> Value {
    match verified {
        Verified::True => json!(true),
        Verified::False => json!(false),
        Verified::Indeterminate => json!("indeterminate"),
    }
}

fn capped(s: &str) -> String {
    let mut out: String = s.chars().take(MAX_TEXT).collect();
    if s.chars().nth(MAX_TEXT).is_some() {
        out.push('…');
    }
    // One line per fact.
    out.replace(['\n', '\r'], " ")
}

/// One typing step: its line and its `_meta` entry, read from the record's own types.
fn typing_step(l: &Linked) -> Told {
    let RecordKind::Action(a) = l.record.kind() else {
        return Told::new("- typing: not verified".into(), Value::Null, "not-read");
    };
    let (n, kind) = a
        .input
        .as_ref()
        .map_or((0, "unknown"), |i| (i.chars(), i.input_type().as_str()));
    let head = format!("- typing, {} ({kind} field)", count(n));
    let mut told = match &a.verification {
        Some(v) => {
            let note = capped(v.note.as_str());
            let words = verdict_words(Some(v.verified));
            let line = if note.is_empty() || v.verified == Verified::True {
                format!("{head}: {words}")
            } else if v.reason == VerdictReason::ClearedByPage {
                // The text did land; "not verified" before it would tell the agent otherwise.
                format!("{head}: {note}")
            } else {
                format!("{head}: {words}: {note}")
            };
            let mut t = Told::new(line, verdict_json(v.verified), v.reason.as_str());
            t.meta["note"] = Value::String(note);
            t
        }
        None => Told::new(
            format!("{head}: not verified (the relay's own observer is off or had no reading)"),
            Value::Null,
            "not-read",
        ),
    };
    told.meta["chars"] = json!(n);
    told.meta["inputType"] = json!(kind);
    if l.shared {
        told.meta["shared"] = Value::Bool(true);
    }
    told
}

/// One failure: its line and its `_meta` entry, read from the record's own types.
fn failure(l: &Linked) -> Told {
    let mut told = match l.record.kind() {
        RecordKind::Network(n) => failed_request(n),
        RecordKind::Console(c) => {
            let level = c.level.as_str();
            let text = capped(c.text.as_str());
            Told {
                line: format!("- console {level}: {text}"),
                meta: json!({"kind": "console", "level": level, "text": text}),
            }
        }
        _ => Told {
            line: "- failure".to_owned(),
            meta: json!({"kind": "other"}),
        },
    };
    if l.shared {
        told.meta["shared"] = Value::Bool(true);
        told.line
            .push_str(" (maybe another call's: calls ran at once)");
    }
    told
}

fn failed_request(n: &NetworkFailure) -> Told {
    let (method, url) = (n.method().as_str(), n.url().as_str());
    let mut meta = json!({"kind": "network", "method": method, "url": url});
    let outcome = match (n.status(), n.error_text()) {
        (Some(status), _) => {
            meta["status"] = json!(status);
            status.to_string()
        }
        (None, Some(e)) => {
            meta["errorText"] = json!(e.as_str());
            e.as_str().to_owned()
        }
        (None, None) => "failed".to_owned(),
    };
    Told {
        line: format!("- failed request: {method} {} → {outcome}", capped(url)),
        meta,
    }
}

/// The line for typing steps linked but not listed.
fn more_typing(facts: &CallFacts) -> Option<String> {
    let (n, landed) = (facts.more_typing, facts.more_landed);
    match (n, landed) {
        (0, _) => None,
        (n, l) if l == n => Some(format!("- {n} more typing steps, all landed")),
        (n, l) => Some(format!(
            "- {n} more typing steps ({l} landed; evidence_summary lists the others)"
        )),
    }
}

/// Appends what was learned to `result`; true when a step's text did not land (every step is
/// judged, listed or not). Nothing is appended when there is nothing to tell.
pub(crate) fn append(result: &mut CallToolResult, id: &ActionId, learned: &CallEvidence) -> bool {
    let facts = &learned.facts;
    if facts.is_empty()
        && learned.notes.is_empty()
        && learned.earlier.is_empty()
        && learned.late.is_empty()
    {
        return false;
    }
    let mut lines = vec!["cdp-relay evidence for this call:".to_owned()];
    let mut typing = Vec::new();
    let steps = facts.typing.iter().map(typing_step);
    for told in steps.chain(learned.notes.iter().cloned()) {
        lines.push(told.line);
        typing.push(told.meta);
    }
    lines.extend(more_typing(facts));
    for told in &learned.earlier {
        lines.push(told.line.clone());
        typing.push(told.meta.clone());
    }
    let not_landed = facts.not_landed > 0
        || learned.notes.iter().any(Told::not_landed)
        || learned.earlier.iter().any(Told::not_landed);
    // The same failure again (a retried request) is one line with its count.
    let mut told: Vec<(Told, u64)> = Vec::new();
    for l in &facts.failures {
        let failed = failure(l);
        match told.iter_mut().find(|(seen, _)| seen.line == failed.line) {
            Some((_, times)) => *times += 1,
            None => told.push((failed, 1)),
        }
    }
    let mut failures = Vec::new();
    for (Told { line, mut meta }, times) in told {
        if times > 1 {
            meta["count"] = json!(times);
            lines.push(format!("{line} (×{times})"));
        } else {
            lines.push(line);
        }
        failures.push(meta);
    }
    if facts.more_failures > 0 {
        lines.push(format!(
            "- {} more failures (evidence_summary lists them)",
            facts.more_failures
        ));
    }
    for told in &learned.late {
        lines.push(told.line.clone());
        failures.push(told.meta.clone());
    }
    result.content.push(ContentBlock::text(lines.join("\n")));
    let meta = json!({
        "call": id.as_str(),
        "typing": typing,
        "failures": failures,
        "more": {
            "typing": facts.more_typing,
            "typingLanded": facts.more_landed,
            "failures": facts.more_failures,
        },
        "notLanded": facts.not_landed,
    });
    result
        .meta
        .get_or_insert_with(MetaObject::new)
        .0
        .insert(META_KEY.to_owned(), meta);
    not_landed
}

mod fields;
#[cfg(test)]
mod tests;
