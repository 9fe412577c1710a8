//! The run's journal read into what a replay needs, in the format's order (`startedAt`, then
//! `actionId`): the steps the agent took, the failures the browser answered, and where each page
//! was. Everything else (framework plumbing, screenshots, frames, markers) is left out.

use cdp_evidence::{ActionMethod, Kind, Source, Status, StoredRecord, Word};
use serde_json::Value;
use std::collections::BTreeMap;

/// The `tool` of the MCP gateway's own tool calls.
const GATEWAY_TOOL: &str = "cdp-relay";

/// Events kept at most; a longer run is exported up to here and says so.
pub(crate) const MAX_EVENTS: usize = 100_000;

/// A locator as the relay's page agent recorded it (`payload.target`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Locator {
    TestId(String),
    Role { role: String, name: Option<String> },
    Label(String),
    Placeholder(String),
    Css(String),
}

/// What a click or a typing step was aimed at.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Aim {
    /// A locator, inside the frame `frame` (a CSS selector of the `<iframe>`) when set.
    At {
        locator: Locator,
        frame: Option<String>,
    },
    /// The relay said it cannot be replayed, and why.
    NotReplayable(String),
    /// No `payload.target` (a run recorded before locators, or a producer without them).
    Missing,
    /// A `payload.target` this version does not understand.
    Unknown,
}

/// One event of the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum What {
    Navigate {
        url: Option<String>,
        error: Option<String>,
    },
    Reload,
    History,
    Click {
        aim: Aim,
        point: Option<(f64, f64)>,
        button: Option<String>,
        count: u64,
    },
    Type {
        aim: Aim,
        chars: u64,
        input_type: Option<String>,
        variable: Option<String>,
    },
    Press {
        key: Option<String>,
    },
    /// `Target.createTarget`.
    OpenPage {
        url: Option<String>,
    },
    /// `Target.closeTarget` of the page with this handle.
    ClosePage {
        handle: Option<String>,
    },
    /// A step the export does not reproduce (a tap, a scroll, an upload, another producer's
    /// action): its method word.
    NotExported {
        method: String,
        why: &'static str,
    },
    /// An agent's tool call (`source: "mcp"`): a comment before the steps it made.
    ToolCall {
        tool: Option<String>,
        name: String,
        label: Option<String>,
    },
    /// A failed request or a console error: a comment where it happened.
    Failure {
        text: String,
    },
    /// Only where a page was (a record of plumbing, a frame, a screenshot).
    Seen,
}

/// One event, with the page it happened on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Event {
    pub at: Option<u64>,
    pub id: String,
    /// The page's handle (`target.targetId`), when the record names one.
    pub page: Option<String>,
    /// The page's URL when the record was made (`target.url`).
    pub page_url: Option<String>,
    /// The handle of the page that opened this one (`target.openerId`).
    pub opener: Option<String>,
    pub what: What,
}

/// The events of a journal, ordered, and how many were left out past [`MAX_EVENTS`].
#[derive(Debug, Default)]
pub(crate) struct Events {
    pub events: Vec<Event>,
    pub left_out: usize,
    pub unreadable: usize,
    /// The URL each page was last seen at (in file order).
    urls: BTreeMap<String, Option<String>>,
}

impl Events {
    pub(crate) fn push(&mut self, r: &StoredRecord) {
        let Some(what) = what(r) else { return };
        let target = r.target.as_ref();
        let tstr = |k: &str| {
            target
                .and_then(|t| t.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let page = tstr("targetId");
        let page_url = tstr("url");
        if what == What::Seen {
            // Only a change of where a page is matters.
            let Some(handle) = &page else { return };
            if self.urls.get(handle) == Some(&page_url) {
                return;
            }
        }
        if let Some(handle) = &page {
            if self.urls.get(handle) != Some(&page_url) {
                self.urls.insert(handle.clone(), page_url.clone());
            }
        }
        if self.events.len() >= MAX_EVENTS {
            self.left_out += 1;
            return;
        }
        self.events.push(Event {
            at: r.started_at_ms,
            id: r.action_id.clone(),
            page,
            page_url,
            opener: tstr("openerId"),
            what,
        });
    }

    /// Orders the events as the format says: `startedAt`, then `actionId` (a record without a
    /// time last).
    pub(crate) fn sort(&mut self) {
        self.events
            .sort_by(|a, b| (a.at.is_none(), a.at, &a.id).cmp(&(b.at.is_none(), b.at, &b.id)));
    }
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// What one record means to a replay; `None` for records that do not matter at all.
fn what(r: &StoredRecord) -> Option<What> {
    let p = &r.payload;
    match r.kind_word().known() {
        Some(Kind::Action) => {}
        Some(Kind::Network) => return Some(network(r)),
        Some(Kind::Console) => return console(r),
        Some(Kind::Lifecycle | Kind::Marker) => return None,
        None => return Some(What::Seen),
    }
    let method = s(p, "method")?;
    if r.source.is_some() && r.is_from(&Source::MCP) {
        let label = s(p, "label");
        // The gateway's own bookkeeping (a summary, a secret registered, this export) is not
        // a step of the agent's; a step it marked is.
        if r.tool.as_deref() == Some(GATEWAY_TOOL) && label.is_none() {
            return None;
        }
        return Some(What::ToolCall {
            tool: r.tool.clone(),
            label,
            name: method,
        });
    }
    let foreign = r.source.is_some() && !r.is_from(&Source::RELAY);
    let detail = p.get("detail").unwrap_or(&Value::Null);
    let url = s(p, "url");
    use ActionMethod as M;
    Some(
        match Word::<ActionMethod, &str>::from_text(method.as_str()) {
            Word::Known(M::PageNavigate) => What::Navigate {
                url,
                error: r.error.clone().filter(|_| {
                    r.status.as_deref().map(Word::<Status, &str>::from_text)
                        == Some(Word::Known(Status::Error))
                }),
            },
            Word::Known(M::PageReload) => What::Reload,
            Word::Known(M::PageNavigateToHistoryEntry) => What::History,
            Word::Known(M::Click) => What::Click {
                aim: aim(p),
                point: p.get("point").and_then(|pt| {
                    Some((
                        pt.get("x").and_then(Value::as_f64)?,
                        pt.get("y").and_then(Value::as_f64)?,
                    ))
                }),
                button: s(detail, "button"),
                count: detail
                    .get("clickCount")
                    .and_then(Value::as_u64)
                    .unwrap_or(1),
            },
            Word::Known(M::Type) => {
                let input = p.get("input").unwrap_or(&Value::Null);
                What::Type {
                    aim: aim(p),
                    chars: input.get("chars").and_then(Value::as_u64).unwrap_or(0),
                    input_type: s(input, "inputType"),
                    variable: s(input, "variable"),
                }
            }
            Word::Known(M::Press) => What::Press {
                key: s(detail, "key"),
            },
            Word::Known(M::TargetCreateTarget) => What::OpenPage { url },
            Word::Known(M::TargetCloseTarget) => What::ClosePage {
                handle: s(detail, "targetId"),
            },
            Word::Known(M::Tap) => What::NotExported {
                method,
                why: "a touch the export does not reproduce",
            },
            Word::Known(M::Scroll) => What::NotExported {
                method,
                why: "scrolling is left to Playwright's actions",
            },
            Word::Known(M::DomSetFileInputFiles) => What::NotExported {
                method,
                why: "the run does not keep which files were chosen",
            },
            Word::Other(_) if foreign => What::NotExported {
                method,
                why: "another producer's action, not a browser step",
            },
            _ => What::Seen,
        },
    )
}

/// `payload.target` read into an [`Aim`].
fn aim(p: &Value) -> Aim {
    let Some(t) = p.get("target").filter(|t| !t.is_null()) else {
        return Aim::Missing;
    };
    if t.get("replayable").and_then(Value::as_bool) == Some(false) {
        return Aim::NotReplayable(s(t, "why").unwrap_or_else(|| "no reason recorded".to_owned()));
    }
    let locator = if let Some(id) = s(t, "testId") {
        Locator::TestId(id)
    } else if let Some(role) = s(t, "role") {
        Locator::Role {
            role,
            name: s(t, "name"),
        }
    } else if let Some(label) = s(t, "label") {
        Locator::Label(label)
    } else if let Some(ph) = s(t, "placeholder") {
        Locator::Placeholder(ph)
    } else if let Some(css) = s(t, "css") {
        Locator::Css(css)
    } else {
        return Aim::Unknown;
    };
    Aim::At {
        locator,
        frame: s(t, "frame"),
    }
}

fn network(r: &StoredRecord) -> What {
    let p = &r.payload;
    let method = s(p, "method").unwrap_or_else(|| "request".to_owned());
    let url = s(p, "url").unwrap_or_default();
    // Same origin as the page: the path says enough.
    let page_origin = r
        .target
        .as_ref()
        .and_then(|t| t.get("url"))
        .and_then(Value::as_str)
        .and_then(origin);
    let shown = match (origin(&url), page_origin) {
        (Some(o), Some(po)) if o == po => url[o.len()..].to_owned(),
        _ => url,
    };
    let outcome = match (p.get("status").and_then(Value::as_u64), s(p, "errorText")) {
        (Some(status), _) => status.to_string(),
        (None, Some(e)) => e,
        (None, None) => "failed".to_owned(),
    };
    What::Failure {
        text: format!("{method} {shown} → {outcome}{}", repeats(r)),
    }
}

fn console(r: &StoredRecord) -> Option<What> {
    let p = &r.payload;
    let level = s(p, "level")?;
    if level == "warning" {
        return None;
    }
    Some(What::Failure {
        text: format!(
            "console {level} \"{}\"{}",
            s(p, "text").unwrap_or_default(),
            repeats(r)
        ),
    })
}

fn repeats(r: &StoredRecord) -> String {
    match r.repeat.as_ref().map(|rep| rep.count) {
        Some(n) if n > 0 => format!(" (and {n} more times)"),
        _ => String::new(),
    }
}

/// The origin of an absolute `http(s)` URL (`scheme://host[:port]`).
pub(crate) fn origin(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    Some(&url[..url.len() - rest.len() + end])
}
