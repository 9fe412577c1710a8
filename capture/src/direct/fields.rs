//! Reading fields for text no key carried: a tool call meant to type (its arguments say so) but
//! the browser saw no keystroke, because the server set the value by script (chrome-devtools-mcp
//! fills text of 100 characters or more, dates, times and selects that way). The producer of
//! tool calls asks ([`FieldQuery`]) which fields were set by script in the call's time window on
//! the pages the call acted on, and whether each holds one of the call's texts; the page agent
//! (`agent.js`, `readFields`) answers with kind words, lengths and indices into the texts.
//!
//! The texts travel as verification's do: wrapped in a [`Literal`] that cannot be printed, as a
//! call argument into the page agent's isolated world of the page the call acted on, where the
//! server put them, and nowhere else; a field the agent classifies sensitive is compared by
//! length only. Nothing the page controls reaches the answer but integers, booleans and words
//! checked against closed lists. Separate from verification (`verify.rs`): that judges a typing
//! burst the traffic reader saw; this one looks where no burst was.

use super::conn::Cdp;
use super::verify::{field_kind, Literal};
use crate::pages::veto::FieldKind;
use cdp_sanitize::InputType;
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// Texts compared per reading, at most; the rest are not read.
pub const MAX_TEXTS: usize = 64;

/// What a producer of tool calls asks.
pub struct FieldQuery {
    /// The pages the call acted on (target handles, as records carry them).
    pub pages: Vec<String>,
    /// The call's time window on the wall clock: fields set by script within it count.
    pub since: SystemTime,
    /// Its end (the server's answer).
    pub until: SystemTime,
    /// What the call meant to type, in argument order (memory only; never printed).
    pub texts: Vec<String>,
}

impl std::fmt::Debug for FieldQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldQuery")
            .field("pages", &self.pages.len())
            .field("texts", &self.texts.len())
            .finish_non_exhaustive()
    }
}

cdp_sanitize::words! {
    /// What kind of control a field is, beyond its input type.
    pub enum Control {
        /// `<select>`.
        Select = "select",
        /// `<textarea>`.
        Textarea = "textarea",
        /// A contenteditable element.
        Editable = "editable",
        /// `<input type=date>`.
        Date = "date",
        /// `<input type=time>`.
        Time = "time",
        /// `<input type=datetime-local>`.
        DatetimeLocal = "datetime-local",
        /// `<input type=month>`.
        Month = "month",
        /// `<input type=week>`.
        Week = "week",
        /// `<input type=color>`.
        Color = "color",
        /// `<input type=range>`.
        Range = "range",
        /// `<input type=number>`.
        Number = "number",
        /// Another `<input>`.
        Input = "input",
    }
}

/// A field some script set during the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedField {
    /// Its input type as the page agent classifies fields (`unknown` for a select or a control
    /// typing does not reach).
    pub kind: InputType,
    /// What control it is, when the agent's word is known.
    pub control: Option<Control>,
    /// Characters it holds now (a select: its chosen option's label).
    pub chars: u64,
    /// Indices of the texts it holds exactly (never for a sensitive field).
    pub equals: Vec<usize>,
    /// Classified sensitive: compared by length only.
    pub sensitive: bool,
    /// Indices of the texts as long as what it holds.
    pub same_length: Vec<usize>,
    /// Still in the document.
    pub connected: bool,
}

/// What the pages the call acted on said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldReading {
    /// Fields set by script in the window, oldest first, each once.
    pub changed: Vec<ScriptedField>,
    /// Indices of texts no field set by script holds, but some readable field holds now.
    pub held: Vec<usize>,
    /// Indices of texts a sensitive field could hold (it is as long).
    pub maybe: Vec<usize>,
    /// A frame of the page could not be read (another origin).
    pub unreadable: bool,
    /// Pages whose agent answered.
    pub pages_read: usize,
}

/// A reading asked of the direct reader.
pub(crate) struct FieldRequest {
    pub(crate) pages: Vec<String>,
    pub(crate) since: SystemTime,
    pub(crate) until: SystemTime,
    pub(crate) texts: Vec<Literal>,
    pub(crate) reply: tokio::sync::oneshot::Sender<FieldReading>,
}

impl FieldRequest {
    pub(crate) fn new(
        q: FieldQuery,
        reply: tokio::sync::oneshot::Sender<FieldReading>,
    ) -> FieldRequest {
        FieldRequest {
            pages: q.pages,
            since: q.since,
            until: q.until,
            texts: q
                .texts
                .into_iter()
                .take(MAX_TEXTS)
                .map(Literal::new)
                .collect(),
            reply,
        }
    }
}

/// The agent's answer, as it writes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    #[serde(default)]
    changed: Vec<AnswerField>,
    #[serde(default)]
    held: Vec<usize>,
    #[serde(default)]
    maybe: Vec<usize>,
    #[serde(default)]
    unreadable: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerField {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    control: String,
    #[serde(default)]
    chars: u64,
    #[serde(default)]
    equals: Vec<usize>,
    #[serde(default)]
    sensitive: bool,
    #[serde(default)]
    same_length: Vec<usize>,
    #[serde(default = "yes")]
    connected: bool,
}

fn yes() -> bool {
    true
}

/// Fields the agent reports at most per page.
const MAX_FIELDS: usize = 64;

impl Answer {
    /// Into the reading, indices checked against the `texts` sent; a field whose kind word is
    /// not one the relay knows is taken for sensitive (compared by nothing).
    fn into_reading(self, texts: usize) -> FieldReading {
        let valid =
            |v: Vec<usize>| -> Vec<usize> { v.into_iter().filter(|&i| i < texts).collect() };
        let changed = self
            .changed
            .into_iter()
            .take(MAX_FIELDS)
            .map(|f| {
                let kind = field_kind(&f.kind);
                let sensitive = f.sensitive || kind.is_none_or(FieldKind::is_sensitive);
                ScriptedField {
                    kind: kind.map_or(InputType::Unknown, FieldKind::input_type),
                    control: Control::parse(&f.control),
                    chars: f.chars,
                    equals: if sensitive {
                        Vec::new()
                    } else {
                        valid(f.equals)
                    },
                    sensitive,
                    same_length: valid(f.same_length),
                    connected: f.connected,
                }
            })
            .collect();
        FieldReading {
            changed,
            held: valid(self.held),
            maybe: valid(self.maybe),
            unreadable: self.unreadable,
            pages_read: 1,
        }
    }
}

impl FieldReading {
    /// Adds another page's reading.
    fn merge(&mut self, other: FieldReading) {
        self.changed.extend(other.changed);
        for i in other.held {
            if !self.held.contains(&i) {
                self.held.push(i);
            }
        }
        for i in other.maybe {
            if !self.maybe.contains(&i) {
                self.maybe.push(i);
            }
        }
        self.unreadable |= other.unreadable;
        self.pages_read += other.pages_read;
    }
}

fn epoch_ms(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1000.0
}

/// Asks the page agent in each (session, world) and merges what they say; a page that cannot
/// answer adds nothing (and is not counted as read).
pub(crate) async fn run(
    cdp: &Cdp,
    pages: Vec<(String, i64)>,
    req: FieldRequest,
    timeout: Duration,
) {
    let window = serde_json::json!({
        "start": epoch_ms(req.since),
        "end": epoch_ms(req.until.max(req.since)),
        "now": epoch_ms(SystemTime::now()),
    });
    let texts: Vec<&str> = req.texts.iter().map(Literal::expose_to_page).collect();
    let mut reading = FieldReading::default();
    for (session, world) in pages {
        let params = serde_json::json!({
            "functionDeclaration": "function (texts, win) { return globalThis.__cdpRelayAgent.readFields(texts, win); }",
            "executionContextId": world,
            "arguments": [{ "value": texts }, { "value": window }],
            "returnByValue": true,
            "silent": true,
        });
        let answer = cdp
            .call(
                crate::cdp::methods::CommandMethod::RuntimeCallFunctionOn.name(),
                params,
                Some(&session),
                timeout,
            )
            .await;
        let Ok(v) = answer else { continue };
        if v.get("exceptionDetails").is_some() {
            continue;
        }
        if let Some(a) = v
            .pointer("/result/value")
            .cloned()
            .and_then(|a| serde_json::from_value::<Answer>(a).ok())
        {
            reading.merge(a.into_reading(texts.len()));
        }
    }
    // The texts are dropped with the request; the answer holds none of them.
    let _ = req.reply.send(reading);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_keeps_kinds_lengths_and_valid_indices_only() {
        let a: Answer = serde_json::from_value(serde_json::json!({
            "changed": [
                {"kind": "text", "control": "date", "chars": 10, "equals": [0, 7], "sensitive": false,
                 "sameLength": [0], "connected": true},
                {"kind": "password", "control": "input", "chars": 8, "equals": [1], "sensitive": true,
                 "sameLength": [1]},
                {"kind": "<b>", "control": "<i>", "chars": 3, "equals": [0]}
            ],
            "held": [1, 9],
            "maybe": [0],
            "unreadable": true
        }))
        .unwrap();
        let r = a.into_reading(2);
        assert_eq!(r.changed.len(), 3);
        assert_eq!(r.changed[0].control, Some(Control::Date));
        assert_eq!(r.changed[0].kind, InputType::Text);
        assert_eq!(
            r.changed[0].equals,
            vec![0],
            "an index past the texts is dropped"
        );
        // A sensitive field is never said to hold a text, whatever the agent says.
        assert!(r.changed[1].sensitive && r.changed[1].equals.is_empty());
        assert_eq!(r.changed[1].same_length, vec![1]);
        // Words the relay does not know: taken for sensitive, no control.
        assert!(r.changed[2].sensitive && r.changed[2].control.is_none());
        assert!(r.changed[2].equals.is_empty());
        assert_eq!((r.held.clone(), r.maybe.clone()), (vec![1], vec![0]));
        assert!(r.unreadable);
        let mut all = FieldReading::default();
        all.merge(r.clone());
        all.merge(r);
        assert_eq!(
            (all.changed.len(), all.held.len(), all.pages_read),
            (6, 1, 2)
        );
    }

    #[test]
    fn a_query_does_not_print_its_texts() {
        let q = FieldQuery {
            pages: vec!["target:0123456789ab".into()],
            since: SystemTime::UNIX_EPOCH,
            until: SystemTime::UNIX_EPOCH,
            texts: vec!["hunter2-secret".into()],
        };
        assert!(!format!("{q:?}").contains("hunter2"));
        let (tx, _rx) = tokio::sync::oneshot::channel();
        let r = FieldRequest::new(q, tx);
        assert_eq!(r.texts.len(), 1);
        assert!(!format!("{:?}", r.texts).contains("hunter2"));
    }

    /// Every control word the page agent writes is one the relay parses.
    #[test]
    fn the_agent_writes_only_control_words_the_relay_parses() {
        let source = super::super::AGENT_SOURCE;
        let start = source.find("const CONTROLS = new Set([").expect("controls");
        let list = &source[start..source[start..].find(']').map(|e| start + e).expect("end")];
        let mut words: Vec<&str> = list.split('\'').skip(1).step_by(2).collect();
        words.extend(["select", "textarea", "editable", "input"]);
        for w in &words {
            assert!(Control::parse(w).is_some(), "agent.js: control {w:?}");
        }
        assert!(source.contains("const EDITABLE = 'editable';"));
        assert!(source.contains("const PLAIN_INPUT = 'input';"));
        assert!(source.contains("{ SELECT: 'select', TEXTAREA: 'textarea' }"));
    }
}
