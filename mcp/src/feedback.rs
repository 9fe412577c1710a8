//! What the evidence learned during a tool call, told to the agent in the call's own result:
//! whether the text it typed landed in the field it meant, and which requests failed and which
//! errors the page logged meanwhile. One text item of the gateway's own is appended after the
//! wrapped server's content, and the same facts go under `_meta["cdp-relay/evidence"]` for a
//! harness to gate on; the server's `structuredContent` is never touched.
//!
//! Value-free by construction: everything here is read from records the run's sanitizer made
//! (counts, field kinds, the verdict's own note, sanitized URLs and console text), the same
//! words a report shows, never a typed character. A call that did not type and saw no failure
//! gets nothing.
//!
//! When the wrapped server answers a call that typed, the typing it caused is over: the traffic
//! reader is told so (its open bursts end at once instead of after the typing gap), and the
//! gateway waits — at most [`Feedback::wait`] — until those steps are with the run writer, with
//! their verdicts or without one. A call that types one key (`press_key "7"`) does not wait:
//! typing key by key goes on in the next call, and its step's verdict comes when it pauses.
//! Such a call, and one whose verdicts did not come in time, is owed its verdicts ([`Owed`]):
//! a later call's result tells them, marked as an earlier call's, without waiting for them.

use super::args;
use cdp_capture::feedback::{CallFacts, Linked};
use cdp_capture::PipelineHandle;
use cdp_evidence::{ActionId, RecordKind};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{json, Map, Value};
use std::time::Duration;

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
    /// A typing step whose text did not land (`verified: false`) makes the result an error.
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

/// How a call types, from its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Typed {
    /// Not from its arguments (a page may still receive typing during it).
    No,
    /// Text (`fill`, `type_text`, `browser_type`, …).
    Text,
    /// One character key: typing key by key, which goes on across calls.
    Key,
}

/// Taken when a call begins.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Watch {
    typed: Typed,
    /// Typing bursts the traffic reader had opened before the call.
    bursts_before: u64,
}

impl Watch {
    pub(crate) fn begin(
        h: &PipelineHandle,
        tool: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Watch {
        let typed = if args::typed_key(tool, arguments).is_some() {
            Typed::Key
        } else if !args::typed_literals(tool, arguments).is_empty() {
            Typed::Text
        } else {
            Typed::No
        };
        Watch {
            typed,
            bursts_before: h.typing().started(),
        }
    }
}

/// Calls remembered as owed their verdicts, at most; the oldest go first.
const MAX_OWED: usize = 16;
/// How long a call stays owed (as long as its records are linked to it: `calls::REMEMBER`).
const OWED_FOR: Duration = cdp_capture::calls::REMEMBER;

/// Calls whose typing verdicts were not told in their own result: a key-by-key call, a call
/// whose verdicts came too late.
#[derive(Debug, Default)]
pub(crate) struct Owed {
    calls: std::sync::Mutex<std::collections::VecDeque<OwedCall>>,
}

#[derive(Debug)]
struct OwedCall {
    id: ActionId,
    /// The tool's name, sanitized.
    tool: String,
    /// Typing steps of it told so far.
    told: usize,
    since: std::time::Instant,
}

impl Owed {
    fn owe(&self, id: &ActionId, tool: String, told: usize) {
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if calls.len() >= MAX_OWED {
            calls.pop_front();
        }
        calls.push_back(OwedCall {
            id: id.clone(),
            tool,
            told,
            since: std::time::Instant::now(),
        });
    }

    /// The typing steps of owed calls linked since they were last told; calls whose time is
    /// up are forgotten.
    fn collect(&self, h: &PipelineHandle) -> Vec<(String, Linked)> {
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::new();
        calls.retain_mut(|owed| {
            let Some(facts) = h.calls().facts(&owed.id) else {
                return false;
            };
            for l in facts.typing.iter().skip(owed.told) {
                out.push((owed.tool.clone(), l.clone()));
            }
            owed.told = owed.told.max(facts.typing.len());
            owed.since.elapsed() < OWED_FOR
        });
        out
    }
}

/// What the gateway learned, for the note.
#[derive(Debug, Default)]
pub(crate) struct Learned {
    facts: CallFacts,
    /// Typing steps of earlier calls (the tool's name, the step) not told before.
    earlier: Vec<(String, Linked)>,
    /// Typing bursts begun during the call with no step linked to it yet.
    unverified_yet: u64,
    /// How long was waited for verdicts.
    waited: Duration,
}

/// Waits (bounded) for what the evidence learns about call `id`, which the server has just
/// answered.
pub(crate) async fn gather(
    h: &PipelineHandle,
    owed: &Owed,
    (id, tool): (&ActionId, &str),
    watch: Watch,
    wait: Duration,
) -> Learned {
    let deadline = tokio::time::Instant::now() + wait;
    // Everything the browser and the server said before the answer is read first.
    let _ = tokio::time::timeout_at(deadline, h.order().caught_up()).await;
    let typing = h.typing();
    let bursts = typing.started().saturating_sub(watch.bursts_before);
    let waits = bursts > 0 && watch.typed != Typed::Key;
    if waits {
        // The call's typing is over: its bursts end now, their verdicts are asked for.
        h.tap().typing_over();
        let _ = tokio::time::timeout_at(deadline, h.order().caught_up()).await;
        if typing.written_by(typing.started(), deadline).await {
            // Written steps are linked to their call as the writer takes them.
            let _ = tokio::time::timeout_at(deadline, h.writer().sync()).await;
        }
    }
    let earlier = owed.collect(h);
    let facts = h.calls().facts(id).unwrap_or_default();
    let linked = (facts.typing.len() + facts.more_typing) as u64;
    let unverified_yet = if waits {
        bursts.saturating_sub(linked)
    } else {
        0
    };
    // A key that began a burst owns its step (a step links to the call its first key came in).
    if (watch.typed == Typed::Key && bursts > 0) || unverified_yet > 0 {
        owed.owe(
            id,
            h.sanitizer().text_capped(tool, 64).into_string(),
            facts.typing.len(),
        );
    }
    Learned {
        unverified_yet,
        facts,
        earlier,
        waited: if waits { wait } else { Duration::ZERO },
    }
}

/// A verdict as the note says it.
fn verdict_words(verified: &Value) -> &'static str {
    match verified {
        Value::Bool(true) => "landed",
        Value::Bool(false) => "did NOT land",
        _ => "not verified",
    }
}

/// The payload of a linked record as the journal writes it.
fn payload(l: &Linked) -> Value {
    let v = match l.record.kind() {
        RecordKind::Action(a) => serde_json::to_value(a),
        RecordKind::Network(n) => serde_json::to_value(n),
        RecordKind::Console(c) => serde_json::to_value(c),
        _ => return Value::Null,
    };
    v.unwrap_or(Value::Null)
}

fn capped(s: &str) -> String {
    let mut out: String = s.chars().take(MAX_TEXT).collect();
    if s.chars().nth(MAX_TEXT).is_some() {
        out.push('…');
    }
    // One line per fact.
    out.replace(['\n', '\r'], " ")
}

/// One typing step: its line and its `_meta` entry.
fn typing_step(l: &Linked) -> (String, Value) {
    let p = payload(l);
    let chars = p["input"]["chars"].as_u64().unwrap_or(0);
    let kind = p["input"]["inputType"]
        .as_str()
        .unwrap_or("unknown")
        .to_owned();
    let mut meta = json!({"chars": chars, "inputType": kind});
    let n = if chars == 1 {
        "1 char".to_owned()
    } else {
        format!("{chars} chars")
    };
    let line = match p.get("verification") {
        Some(v) => {
            let note = v["note"].as_str().map(capped).unwrap_or_default();
            meta["verified"] = v["verified"].clone();
            meta["reason"] = v["reason"].clone();
            meta["note"] = Value::String(note.clone());
            let words = verdict_words(&v["verified"]);
            if note.is_empty() || v["verified"] == Value::Bool(true) {
                format!("- typing, {n} ({kind} field): {words}")
            } else {
                format!("- typing, {n} ({kind} field): {words}: {note}")
            }
        }
        None => {
            meta["verified"] = Value::Null;
            format!(
                "- typing, {n} ({kind} field): not verified (the relay's own observer is off or had no reading)"
            )
        }
    };
    if l.shared {
        meta["shared"] = Value::Bool(true);
    }
    (line, meta)
}

/// One failure: its line and its `_meta` entry.
fn failure(l: &Linked) -> (String, Value) {
    let p = payload(l);
    let mut meta = match l.record.kind() {
        RecordKind::Network(_) => {
            let method = p["method"].as_str().unwrap_or("?");
            let url = p["url"].as_str().unwrap_or("?");
            let mut m = json!({"kind": "network", "method": method, "url": url});
            let outcome = match (p["status"].as_u64(), p["errorText"].as_str()) {
                (Some(status), _) => {
                    m["status"] = json!(status);
                    status.to_string()
                }
                (None, Some(e)) => {
                    m["errorText"] = json!(e);
                    e.to_owned()
                }
                (None, None) => "failed".to_owned(),
            };
            let line = format!("- failed request: {method} {} → {outcome}", capped(url));
            (line, m)
        }
        _ => {
            let level = p["level"].as_str().unwrap_or("error");
            let text = capped(p["text"].as_str().unwrap_or(""));
            let line = format!("- console {level}: {text}");
            (
                line,
                json!({"kind": "console", "level": level, "text": text}),
            )
        }
    };
    if l.shared {
        meta.1["shared"] = Value::Bool(true);
        meta.0
            .push_str(" (maybe another call's: calls ran at once)");
    }
    meta
}

/// Appends what was learned to `result`; true when a step's text did not land. Nothing is
/// appended when there is nothing to tell.
pub(crate) fn append(result: &mut CallToolResult, id: &ActionId, learned: &Learned) -> bool {
    let facts = &learned.facts;
    if facts.is_empty() && learned.unverified_yet == 0 && learned.earlier.is_empty() {
        return false;
    }
    let mut lines = vec!["cdp-relay evidence for this call:".to_owned()];
    let mut typing = Vec::new();
    let mut not_landed = false;
    for l in &facts.typing {
        let (line, meta) = typing_step(l);
        not_landed |= meta["verified"] == Value::Bool(false);
        lines.push(line);
        typing.push(meta);
    }
    for _ in 0..learned.unverified_yet {
        typing.push(json!({"verified": null}));
    }
    if learned.unverified_yet > 0 {
        lines.push(format!(
            "- typing: {} step(s) not verified yet (no verdict within {} ms; evidence_summary will list it)",
            learned.unverified_yet,
            learned.waited.as_millis()
        ));
    }
    if facts.more_typing > 0 {
        lines.push(format!("- {} more typing steps", facts.more_typing));
    }
    for (tool, l) in &learned.earlier {
        let (line, mut meta) = typing_step(l);
        not_landed |= meta["verified"] == Value::Bool(false);
        let call = l.record.tool_call().map(|c| c.as_str().to_owned());
        lines.push(format!(
            "- earlier {}",
            line.trim_start_matches("- ")
                .replacen("typing,", &format!("typing (call {tool}),"), 1)
        ));
        meta["earlier"] = Value::Bool(true);
        if let Some(call) = call {
            meta["call"] = Value::String(call);
        }
        typing.push(meta);
    }
    // The same failure again (a retried request) is one line with its count.
    let mut told: Vec<(String, Value, u64)> = Vec::new();
    for l in &facts.failures {
        let (line, meta) = failure(l);
        match told.iter_mut().find(|(seen, ..)| *seen == line) {
            Some((_, _, n)) => *n += 1,
            None => told.push((line, meta, 1)),
        }
    }
    let mut failures = Vec::new();
    for (line, mut meta, n) in told {
        if n > 1 {
            meta["count"] = json!(n);
            lines.push(format!("{line} (×{n})"));
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
    result.content.push(ContentBlock::text(lines.join("\n")));
    let meta = json!({
        "call": id.as_str(),
        "typing": typing,
        "failures": failures,
        "more": {"typing": facts.more_typing, "failures": facts.more_failures},
    });
    result
        .meta
        .get_or_insert_with(MetaObject::new)
        .0
        .insert(META_KEY.to_owned(), meta);
    not_landed
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_evidence::{Action, Console, ConsoleLevel, Record, Verification, Verified};
    use cdp_sanitize::{InputSummary, InputType, SafeText, Sanitizer};

    fn typing(s: &Sanitizer, chars: u64, verified: Option<(Verified, &'static str)>) -> Linked {
        let mut a = Action::new(SafeText::literal("type"));
        a.input = Some(InputSummary::from_count(chars, InputType::Email));
        a.verification = verified.map(|(v, reason)| {
            Verification::new(
                v,
                cdp_evidence::VerdictReason::parse(reason).expect("a reason"),
                s.text("the field holds 3 of 24 characters"),
            )
        });
        Linked {
            record: Record::new(SafeText::literal("cdp"), RecordKind::Action(a)),
            shared: false,
        }
    }

    fn result() -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text("done")])
    }

    #[test]
    fn nothing_learned_appends_nothing() {
        let mut r = result();
        let before = serde_json::to_value(&r).expect("json");
        let id = ActionId::at(std::time::SystemTime::now());
        assert!(!append(&mut r, &id, &Learned::default()));
        assert_eq!(serde_json::to_value(&r).expect("json"), before);
    }

    #[test]
    fn verdicts_and_failures_are_told_in_words_and_under_meta() {
        let s = Sanitizer::new();
        let secret = "hunter2-Zq7";
        s.register_typed(secret);
        let mut facts = CallFacts::default();
        facts
            .typing
            .push(typing(&s, 24, Some((Verified::True, "landed"))));
        facts
            .typing
            .push(typing(&s, 6, Some((Verified::False, "dropped-characters"))));
        let console = Console::new(ConsoleLevel::Error, s.text(&format!("bad {secret}\nline")));
        facts.failures.push(Linked {
            record: Record::new(SafeText::literal("cdp"), RecordKind::Console(console)),
            shared: true,
        });
        facts.failures.push(facts.failures[0].clone());
        facts.more_failures = 2;
        let learned = Learned {
            facts,
            unverified_yet: 1,
            waited: Duration::from_millis(1000),
            earlier: Vec::new(),
        };
        let mut r = result();
        let id = ActionId::at(std::time::SystemTime::now());
        assert!(append(&mut r, &id, &learned), "a step did not land");
        assert_eq!(r.content.len(), 2, "the child's content, then ours");
        let text = r.content[1].as_text().expect("text").text.clone();
        assert!(text.starts_with("cdp-relay evidence for this call:\n"));
        assert!(text.contains("- typing, 24 chars (email field): landed\n"));
        assert!(text.contains(
            "- typing, 6 chars (email field): did NOT land: the field holds 3 of 24 characters"
        ));
        assert!(text.contains("1 step(s) not verified yet (no verdict within 1000 ms"));
        assert!(text.contains("- console error: bad "));
        assert!(
            text.contains("(maybe another call's: calls ran at once) (×2)"),
            "{text}"
        );
        assert!(text.contains("- 2 more failures"));
        assert!(!text.contains(secret), "{text}");
        let meta = &r.meta.as_ref().expect("meta").0[META_KEY];
        assert_eq!(meta["call"], id.as_str());
        assert_eq!(meta["typing"][0]["verified"], true);
        assert_eq!(meta["typing"][1]["reason"], "dropped-characters");
        assert_eq!(meta["typing"][2]["verified"], Value::Null);
        assert_eq!(meta["failures"][0]["shared"], true);
        assert_eq!(meta["failures"][0]["count"], 2);
        assert_eq!(meta["more"]["failures"], 2);
        assert!(!meta.to_string().contains(secret));
        assert!(r.structured_content.is_none());
    }

    #[test]
    fn an_earlier_calls_verdict_is_told_as_its_own() {
        let s = Sanitizer::new();
        let mut step = typing(&s, 6, Some((Verified::False, "no-input")));
        let pin = ActionId::at(std::time::SystemTime::now());
        step.record.link_tool_call(pin.clone());
        let learned = Learned {
            earlier: vec![("press_key".into(), step)],
            ..Learned::default()
        };
        let mut r = result();
        let id = ActionId::at(std::time::SystemTime::now());
        assert!(append(&mut r, &id, &learned));
        let text = r.content[1].as_text().expect("text").text.clone();
        assert!(
            text.contains("- earlier typing (call press_key), 6 chars (email field): did NOT land"),
            "{text}"
        );
        let meta = &r.meta.as_ref().expect("meta").0[META_KEY];
        assert_eq!(meta["typing"][0]["earlier"], true);
        assert_eq!(meta["typing"][0]["call"], pin.as_str());
    }

    #[test]
    fn the_childs_own_meta_is_kept() {
        let s = Sanitizer::new();
        let mut r = result();
        let mut theirs = MetaObject::new();
        theirs.0.insert("theirs".into(), json!(1));
        r.meta = Some(theirs);
        let mut facts = CallFacts::default();
        facts.typing.push(typing(&s, 3, None));
        let learned = Learned {
            facts,
            ..Learned::default()
        };
        let id = ActionId::at(std::time::SystemTime::now());
        assert!(!append(&mut r, &id, &learned));
        let meta = &r.meta.as_ref().expect("meta").0;
        assert_eq!(meta["theirs"], 1);
        assert_eq!(meta[META_KEY]["typing"][0]["verified"], Value::Null);
    }
}
