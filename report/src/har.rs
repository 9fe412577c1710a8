//! `cdp-relay export --format har`: the requests the run kept (the failed ones: the journal
//! records no other) as a HAR 1.2 log that Chrome DevTools' Network panel imports, reduced as
//! the journal is — origin and path, no query, no headers, no cookies, no bodies — with a
//! `_cdpRelay` object on each entry naming the step (and the agent's tool call) it happened
//! during. The same entries are the network log of the Playwright trace ([`crate::trace`]).
//!
//! Every object the HAR 1.2 spec requires is present with its type (empty arrays for headers,
//! cookies and the query, `-1` for sizes and timings not known); extensions are `_`-prefixed
//! as the spec asks (`_resourceType` and `response._error` as Chrome writes them).

use crate::text::line;
use crate::timeline::{FailWhat, Failure, Timeline, What};
use crate::whole;
use crate::ReportError;
use serde::Serialize;
use std::path::Path;

/// The file name the HAR has as an MCP resource and by default.
pub const HAR_FILE: &str = "run.har";

/// One HAR export, in memory.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HarExport {
    /// The whole file (JSON).
    pub text: String,
    /// What went into it.
    pub figures: HarFigures,
}

/// Figures of one HAR export.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HarFigures {
    /// Entries (requests).
    pub entries: usize,
    /// Pages (tabs) the entries belong to.
    pub pages: usize,
    /// The run was still being recorded: what was written after this export is not in it.
    pub still_recording: bool,
    /// Journal lines that are not records.
    pub records_unreadable: usize,
}

#[derive(Debug, Serialize)]
struct Har {
    log: Log,
}

#[derive(Debug, Serialize)]
struct Log {
    version: &'static str,
    creator: Creator,
    pages: Vec<HarPage>,
    entries: Vec<Entry>,
    comment: String,
}

#[derive(Debug, Serialize)]
struct Creator {
    name: &'static str,
    version: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HarPage {
    started_date_time: String,
    id: String,
    title: String,
    page_timings: PageTimings,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PageTimings {
    on_content_load: i64,
    on_load: i64,
}

/// A HAR entry (also a `resource-snapshot` of the Playwright trace, with its two extra fields).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pageref: Option<String>,
    started_date_time: String,
    time: f64,
    request: Request,
    response: Response,
    cache: Empty,
    timings: Timings,
    #[serde(rename = "_resourceType", skip_serializing_if = "Option::is_none")]
    resource_type: Option<String>,
    /// The trace's clock for this request (Playwright's `_monotonicTime`); not in a HAR.
    #[serde(rename = "_monotonicTime", skip_serializing_if = "Option::is_none")]
    pub monotonic_time: Option<f64>,
    #[serde(rename = "_cdpRelay")]
    cdp_relay: Extension,
}

#[derive(Debug, Default, Serialize)]
struct Empty {}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    http_version: &'static str,
    cookies: [(); 0],
    headers: [(); 0],
    query_string: [(); 0],
    headers_size: i64,
    body_size: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    status: i64,
    status_text: &'static str,
    http_version: &'static str,
    cookies: [(); 0],
    headers: [(); 0],
    content: Content,
    #[serde(rename = "redirectURL")]
    redirect_url: &'static str,
    headers_size: i64,
    body_size: i64,
    /// Chrome's name for why a request failed; Playwright's is `_failureText`.
    #[serde(rename = "_error", skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(rename = "_failureText", skip_serializing_if = "Option::is_none")]
    failure_text: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Content {
    size: i64,
    mime_type: &'static str,
}

#[derive(Debug, Serialize)]
struct Timings {
    blocked: i64,
    dns: i64,
    connect: i64,
    send: f64,
    wait: f64,
    receive: f64,
    ssl: i64,
}

/// Where a request happened in the run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Extension {
    /// The failure's number in the report (`F3`).
    failure: usize,
    /// The step it happened during (absent: before the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<usize>,
    /// The agent's tool call that step is (`browser_click`).
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call: Option<String>,
    /// The relay folded this many more identical failures into it.
    #[serde(skip_serializing_if = "Option::is_none")]
    repeated: Option<u64>,
    /// The duration is not in the journal (`time` is 0).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    time_unknown: bool,
}

/// An RFC 3339 UTC time, as HAR's `startedDateTime` wants it.
fn iso(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    cdp_evidence::time::format_rfc3339_millis(t)
}

/// The HAR page id of a tab.
fn page_ref(tab: usize) -> String {
    format!("page@{tab}")
}

/// The entry of a failed request; `None` for a failure that is not one.
pub(crate) fn entry(tl: &Timeline, f: &Failure) -> Option<Entry> {
    let FailWhat::Request {
        method,
        url,
        status,
        resource_type,
        duration_ms,
        error_text,
    } = &f.what
    else {
        return None;
    };
    let step = tl.step_of(f);
    let at = f.at_ms.or(step.at_ms).or(tl.start_ms).unwrap_or(0);
    let wait = duration_ms.unwrap_or(0) as f64;
    let tool_call = match &step.what {
        What::ToolCall(c) => Some(c.name.clone()),
        _ => None,
    };
    Some(Entry {
        pageref: step.page.as_ref().and_then(|p| p.tab).map(page_ref),
        started_date_time: iso(at),
        time: wait,
        request: Request {
            method: method.clone(),
            url: url.clone(),
            http_version: "",
            cookies: [],
            headers: [],
            query_string: [],
            headers_size: -1,
            body_size: -1,
        },
        response: Response {
            // No response: 0, as Chrome writes a request that failed before one.
            status: status.map_or(0, i64::from),
            status_text: "",
            http_version: "",
            cookies: [],
            headers: [],
            content: Content {
                size: -1,
                mime_type: "x-unknown",
            },
            redirect_url: "",
            headers_size: -1,
            body_size: -1,
            error: error_text.clone(),
            failure_text: error_text.clone(),
        },
        cache: Empty {},
        timings: Timings {
            blocked: -1,
            dns: -1,
            connect: -1,
            send: 0.0,
            wait,
            receive: 0.0,
            ssl: -1,
        },
        resource_type: resource_type.as_deref().map(str::to_ascii_lowercase),
        monotonic_time: None,
        cdp_relay: Extension {
            failure: f.id,
            step: step.number,
            tool_call,
            repeated: f.repeat.map(|r| r.count),
            time_unknown: duration_ms.is_none(),
        },
    })
}

/// Exports the run in `run_dir` as a HAR 1.2 log. Reads the run only (confined, as the report
/// does); writes nothing.
pub fn export(run_dir: &Path) -> Result<HarExport, ReportError> {
    let w = whole::load(run_dir)?;
    let tl = &w.timeline;
    let entries: Vec<Entry> = tl.failures.iter().filter_map(|f| entry(tl, f)).collect();
    let pages = pages(tl);
    let figures = HarFigures {
        entries: entries.len(),
        pages: pages.len(),
        still_recording: w.still_recording,
        records_unreadable: w.unreadable,
    };
    let har = Har {
        log: Log {
            version: "1.2",
            creator: Creator {
                name: "cdp-relay",
                version: env!("CARGO_PKG_VERSION"),
            },
            pages,
            entries,
            comment: comment(&w.run_id, w.still_recording),
        },
    };
    // Serializing plain structs of strings and numbers cannot fail.
    let text = serde_json::to_string_pretty(&har).unwrap_or_default();
    Ok(HarExport { text, figures })
}

fn comment(run_id: &str, still_recording: bool) -> String {
    let mut c = format!(
        "cdp-relay run {run_id}: the requests the run kept (failed ones), origin and path only; \
         no headers, cookies, query or bodies"
    );
    if still_recording {
        c.push_str("; the run was still being recorded when this was exported");
    }
    c
}

/// One HAR page per tab an entry names, titled by the page its first request happened on.
fn pages(tl: &Timeline) -> Vec<HarPage> {
    let mut out: Vec<HarPage> = Vec::new();
    for f in &tl.failures {
        if !matches!(f.what, FailWhat::Request { .. }) {
            continue;
        }
        let step = tl.step_of(f);
        let Some(page) = &step.page else { continue };
        let Some(tab) = page.tab else { continue };
        let id = page_ref(tab);
        if out.iter().any(|p| p.id == id) {
            continue;
        }
        let title = page
            .title
            .clone()
            .or_else(|| page.url.clone())
            .unwrap_or_else(|| format!("tab {tab}"));
        out.push(HarPage {
            started_date_time: iso(step.at_ms.or(tl.start_ms).unwrap_or(0)),
            id,
            title: line(&title, 200),
            page_timings: PageTimings {
                on_content_load: -1,
                on_load: -1,
            },
        });
    }
    out
}
