//! An agent's tool calls (records of `source: "mcp"`, see `docs/evidence-format.md`) as steps:
//! a call is the step, the CDP actions that name it (`payload.toolCall`) fold under it as its
//! effects, its failures and frames sit beside it — as evaluations fold under a step.
//!
//! The builder asks three things of this module: what an MCP record is ([`role`]), what an
//! action done during a call becomes ([`Effect`]; `assemble.rs` places it, in either pass and
//! within the caps), and, once every record is placed, the one-line account of each call
//! ([`finish`]). Every string kept here has been through [`crate::text`].

use super::{action_role, flatten, Category, Headline, Outcome, Role, Timeline, Verdict, What};
use crate::limits::{MAX_ERROR, MAX_FIELD, MAX_FIELDS, MAX_KEY, MAX_STATUS_WORD, MAX_WORD};
use crate::text::line;
use cdp_evidence::{
    InputType, LifecycleEvent, Source, StoredAction, StoredLifecycle, StoredRecord,
    StoredToolArgument, VerdictReason, Verified, Word,
};

/// Effects listed under one call at most (the rest are counted).
pub(crate) const MAX_EFFECTS: usize = 50;
/// Effects named in a call's one-line account.
const MAX_ACCOUNT: usize = 6;
/// The URL a call's arguments name, in its headline: one line beside the tool's name.
const GIST_URL: usize = 120;
/// A URL in a call's one-line account, shared with the other effects named there.
const ACCOUNT_URL: usize = 80;

/// One tool call of the agent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ToolCall {
    /// The tool's name (`payload.method`).
    pub name: String,
    /// An agent's own step name (`evidence_mark_step`).
    pub label: Option<String>,
    /// Short words from the arguments (`3 items`, a URL).
    pub gist: Option<String>,
    /// What it returned: `1 item, 1 image`.
    pub returned: Option<String>,
    /// The CDP actions that name it, in time order.
    pub effects: Vec<Effect>,
    /// Effects beyond [`MAX_EFFECTS`], counted.
    pub more_effects: usize,
    /// The one-line account of its effects, set by [`finish`].
    pub account: Option<String>,
}

/// A CDP action done during a tool call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Effect {
    pub what: What,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub at_ms: Option<u64>,
    pub duration_ms: Option<u64>,
}

impl Effect {
    pub(crate) fn headline(&self) -> Headline {
        self.what.headline(1)
    }

    pub(crate) fn verdict(&self) -> Option<&Verdict> {
        match &self.what {
            What::Type { verdict, .. } => verdict.as_ref(),
            _ => None,
        }
    }
}

impl ToolCall {
    pub(crate) fn headline(&self) -> Headline {
        if let Some(label) = &self.label {
            return Headline {
                verb: "Step".into(),
                object: Some(label.clone()),
                note: None,
            };
        }
        let note = match (&self.gist, &self.account) {
            (Some(g), Some(a)) => Some(format!("{g} — {a}")),
            (Some(g), None) => Some(g.clone()),
            (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        };
        Headline {
            verb: String::new(),
            object: Some(self.name.clone()),
            note,
        }
    }
}

/// The gateway's own events that are steps (the others fold into the step before them).
pub(crate) fn gateway_event_words(event: LifecycleEvent) -> Option<&'static str> {
    Some(match event {
        LifecycleEvent::AgentDisconnected => "The agent disconnected",
        LifecycleEvent::ServerExited => "The MCP server exited",
        LifecycleEvent::StopRequested => "Asked to stop",
        LifecycleEvent::BrowserExited => "The browser exited",
        _ => return None,
    })
}

/// The role of a lifecycle event of the gateway; `None` for the relay's own events.
pub(crate) fn lifecycle_role(l: &StoredLifecycle) -> Option<Role> {
    let detail = l.detail.as_deref().map(|d| line(d, MAX_ERROR));
    if let Some(words) = gateway_event_words(l.event) {
        return Some(Role::Step(What::Gateway {
            words: words.to_owned(),
            detail,
        }));
    }
    let words = match l.event {
        LifecycleEvent::AgentConnected => "agent connected",
        LifecycleEvent::ServerStarted => "MCP server started",
        _ => return None,
    };
    let label = match detail {
        Some(d) => format!("{words}: {d}"),
        None => words.to_owned(),
    };
    Some(Role::Plumb(Category::Connection, label))
}

/// The role of an `mcp` action: a tool call step.
pub(crate) fn role(r: &StoredRecord, a: &StoredAction) -> Role {
    let returned = a.result.map(|res| {
        let mut s = plural(res.content, "item", "items");
        if res.images > 0 {
            s.push_str(&format!(", {}", plural(res.images, "image", "images")));
        }
        if res.structured {
            s.push_str(", structured");
        }
        s
    });
    let _ = r;
    Role::Step(What::ToolCall(Box::new(ToolCall {
        name: line(a.method.as_str(), MAX_WORD),
        label: a.label.as_deref().map(|l| line(l, MAX_FIELD)),
        gist: a.arguments.as_deref().and_then(gist),
        returned,
        effects: Vec::new(),
        more_effects: 0,
        account: None,
    })))
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A few words from the arguments: the first URL, else how many form fields.
fn gist(args: &[StoredToolArgument]) -> Option<String> {
    if let Some(url) = args.iter().find_map(|a| a.url.as_deref()) {
        return Some(format!("→ {}", line(url, GIST_URL)));
    }
    args.iter().find_map(|a| {
        let n = a.count?;
        let form = a.name.contains("field") || a.name.contains("element");
        (a.json_type == cdp_evidence::JsonType::Array && form).then(|| plural(n, "field", "fields"))
    })
}

/// The displayed fields of a tool call: its reduced arguments, flattened.
pub(crate) fn fields(r: &StoredRecord) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(&r.tool_arguments(), "", &mut out);
    out.truncate(MAX_FIELDS);
    out
}

fn walk(args: &[StoredToolArgument], prefix: &str, out: &mut Vec<(String, String)>) {
    for arg in args {
        if out.len() >= MAX_FIELDS {
            return;
        }
        let name = line(&arg.name, MAX_KEY);
        let key = if prefix.is_empty() {
            name
        } else if name.bytes().all(|b| b.is_ascii_digit()) {
            format!("{prefix}[{name}]")
        } else {
            format!("{prefix}.{name}")
        };
        let shown = if let Some(u) = &arg.url {
            Some(line(u, MAX_FIELD))
        } else if let Some(i) = &arg.input {
            let t = i
                .input_type
                .as_ref()
                .map_or(InputType::Unknown.as_str(), Word::as_str);
            Some(format!(
                "{} of text, not kept (input type {})",
                plural(i.chars, "char", "chars"),
                line(t, MAX_STATUS_WORD)
            ))
        } else if let Some(n) = arg.chars {
            Some(format!("{} (not kept)", plural(n, "char", "chars")))
        } else {
            arg.value.as_ref().map(|v| match v {
                serde_json::Value::String(s) => line(s, MAX_FIELD),
                other => line(&other.to_string(), MAX_FIELD),
            })
        };
        match (&arg.items, shown) {
            (Some(items), _) => {
                walk(items, &key, out);
                let listed = items.len() as u64;
                if let Some(n) = arg.count.filter(|&n| n > listed) {
                    out.push((key, format!("{} more not shown", n - listed)));
                }
            }
            (None, Some(s)) => out.push((key, s)),
            (None, None) => {
                let t = line(arg.json_type.as_str(), MAX_STATUS_WORD);
                let s = match arg.count {
                    Some(n) => format!("{t} of {n}"),
                    None => t,
                };
                out.push((key, s));
            }
        }
    }
}

/// Once every record is placed: each call's one-line account of what it did in the browser.
pub(crate) fn finish(tl: &mut Timeline) {
    for step in &mut tl.steps {
        // The gateway's own events are not on any page.
        if matches!(step.what, What::Gateway { .. }) {
            step.page = None;
        }
        if let What::ToolCall(call) = &mut step.what {
            let gist = call.gist.clone().unwrap_or_default();
            let words: Vec<String> = call
                .effects
                .iter()
                .filter_map(effect_words)
                // A navigation to the URL the arguments already name, or `clicked` under
                // `click`, says nothing new.
                .filter(|w| {
                    !w.strip_prefix("navigated to ")
                        .is_some_and(|u| gist.ends_with(u))
                        && !said_by_name(&call.name, w)
                })
                .collect();
            if words.is_empty() {
                continue;
            }
            let mut account = words
                .iter()
                .take(MAX_ACCOUNT)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ");
            // Effects over the cap were not kept: they count as more too.
            let more = words.len().saturating_sub(MAX_ACCOUNT) + call.more_effects;
            if more > 0 {
                account.push_str(&format!("; {more} more"));
            }
            call.account = Some(account);
        }
    }
}

/// True when the tool's own name already says `words` (`click`: `clicked`).
fn said_by_name(tool: &str, words: &str) -> bool {
    let verb = tool.strip_prefix("browser_").unwrap_or(tool);
    !verb.is_empty() && (words == format!("{verb}ed") || words == format!("{verb}d"))
}

/// A few words for one effect, or none for effects not worth the headline.
fn effect_words(e: &Effect) -> Option<String> {
    let failed = if e.outcome == Outcome::Error {
        " (failed)"
    } else {
        ""
    };
    let words = match &e.what {
        What::Type {
            chars,
            input_type,
            verdict,
        } => {
            let field = input_type
                .as_ref()
                .map_or(InputType::Text.as_str(), Word::as_str);
            let how = match verdict {
                Some(v)
                    if v.verified == Verified::Indeterminate
                        && v.reason == VerdictReason::SensitiveField =>
                {
                    " not read back"
                }
                Some(v) => &format!(" {}", v.words()),
                None => "",
            };
            format!("{field} {}{how}", plural(*chars, "char", "chars"))
        }
        What::Click { .. } | What::Tap { .. } => "clicked".to_owned(),
        What::Press { key } => match key {
            Some(k) => format!("pressed {k}"),
            None => "pressed a key".to_owned(),
        },
        What::Navigate { url } => match url {
            Some(u) => format!("navigated to {}", line(u, ACCOUNT_URL)),
            None => "navigated".to_owned(),
        },
        What::Reload => "reloaded".to_owned(),
        What::History => "went back or forward".to_owned(),
        What::Screenshot => "took a screenshot".to_owned(),
        What::OpenPage { .. } => "opened a page".to_owned(),
        What::ClosePage => "closed a page".to_owned(),
        What::Upload { .. } => "chose files".to_owned(),
        What::Scroll => "scrolled".to_owned(),
        _ => return None,
    };
    Some(format!("{words}{failed}"))
}

/// An `mcp` action's role, or the relay's own role for any other action.
pub(crate) fn action(r: &StoredRecord, a: &StoredAction, foreign: bool) -> Role {
    if r.is_from(&Source::MCP) {
        role(r, a)
    } else {
        action_role(a, foreign)
    }
}

/// The flattened fields of any step record: tool calls show their reduced arguments.
pub(crate) fn step_fields(r: &StoredRecord, what: &What) -> Vec<(String, String)> {
    match what {
        What::ToolCall(_) => fields(r),
        What::Generic { .. } | What::Action { .. } => {
            let mut f = flatten(&r.payload);
            f.retain(|(k, _)| k != "method" && k != "url");
            f
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
