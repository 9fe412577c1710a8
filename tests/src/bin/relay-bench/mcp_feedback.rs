//! What the gateway's feedback (the evidence appended to a tool result) costs the agent: the
//! real chrome-devtools-mcp and @playwright/mcp, each wrapped by two `cdp-relay mcp`s at once —
//! feedback on (the default) and `--no-feedback` — on a local page, rounds alternating between
//! the two with the order rotated. Timed from the agent's side (an rmcp client), three kinds
//! of call:
//!
//! * a call that types: `fill` / `browser_type` of 20 characters into a plain text field (with
//!   feedback it waits, at most `--feedback-wait`, for the typing's verdict);
//! * a call that does not type: a click on a button that does nothing;
//! * a call whose click makes a request fail: `fetch` of a URL answering 500, a new path each
//!   time (the evidence folds a failure that repeats after its first ten: those are counted,
//!   not told to the call).
//!
//! Besides the times, what the feedback path's results said (verdicts that arrived in time,
//! failures named), so a fast row cannot hide feedback that never came.

use crate::stats::{percentile, rotation};
use cdp_relay_tests::mcp::{chrome_devtools_mcp, element, playwright_mcp, text_of, McpGateway};
use cdp_relay_tests::site::{Route, Site};
use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

/// Two texts of 20 characters, alternated so each fill replaces the field's value (a fill of
/// the value the field already holds types nothing through chrome-devtools-mcp).
const TEXTS: [&str; 2] = ["twenty chars of text", "another twenty chars"];

/// The first line of the gateway's own content item.
const FEEDBACK_HEAD: &str = "cdp-relay evidence for this call:";

/// The `_meta` key carrying the same facts.
const META_KEY: &str = "cdp-relay/evidence";

/// The two paths, in table order.
const PATHS: [&str; 2] = ["`--no-feedback`", "feedback (default)"];

/// The kinds of call, in table order.
const KINDS: [&str; 3] = [
    "types 20 chars",
    "does not type (click)",
    "click, request fails (500)",
];

const PAGE: &str = "<!doctype html><title>Feedback bench</title>\
<label>Name <input id=name type=text></label>\
<button id=noop type=button>Nothing</button>\
<button id=save type=button onclick=\"fetch('/api/save/' + (++saves), {method: 'POST'})\">Save</button>\
<script>let saves = 0;</script>";

/// Untimed calls of each kind per path before the rounds.
const WARM: usize = 3;

#[derive(Clone, Copy, Debug)]
pub enum Server {
    DevTools,
    Playwright,
}

impl Server {
    pub fn name(self) -> &'static str {
        match self {
            Server::DevTools => "chrome-devtools-mcp 1.11.0",
            Server::Playwright => "@playwright/mcp 0.0.83",
        }
    }

    pub fn command(self, scratch: &std::path::Path) -> Vec<String> {
        match self {
            Server::DevTools => chrome_devtools_mcp(),
            Server::Playwright => playwright_mcp(scratch),
        }
    }

    pub fn navigate(self, url: &str) -> (&'static str, Value) {
        match self {
            Server::DevTools => ("navigate_page", json!({"type": "url", "url": url})),
            Server::Playwright => ("browser_navigate", json!({"url": url})),
        }
    }

    pub fn snapshot(self) -> &'static str {
        match self {
            Server::DevTools => "take_snapshot",
            Server::Playwright => "browser_snapshot",
        }
    }

    fn type_into(self, field: &str, text: &str) -> (&'static str, Value) {
        match self {
            Server::DevTools => ("fill", json!({"uid": field, "value": text})),
            Server::Playwright => (
                "browser_type",
                json!({"element": "Name textbox", "target": field, "text": text}),
            ),
        }
    }

    fn click(self, target: &str, what: &str) -> (&'static str, Value) {
        match self {
            Server::DevTools => ("click", json!({"uid": target})),
            Server::Playwright => ("browser_click", json!({"element": what, "target": target})),
        }
    }
}

/// One gateway on the bench page, with the page's elements as its server names them.
struct Wrapped {
    gw: McpGateway,
    field: String,
    noop: String,
    save: String,
    /// Typing calls made so far, warm-up included: each types the other text than the last.
    typed: std::cell::Cell<usize>,
    /// The server's temporary files (its TMPDIR, @playwright/mcp's output).
    _scratch: tempfile::TempDir,
}

impl Wrapped {
    async fn start(server: Server, extra: &[&str], feedback: bool, url: &str) -> Wrapped {
        let scratch = tempfile::tempdir().expect("scratch dir");
        let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        if !feedback {
            args.push("--no-feedback".into());
        }
        args.push("--".into());
        args.extend(server.command(scratch.path()));
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
        let (tool, nav) = server.navigate(url);
        let r = gw.call(tool, nav).await;
        assert_ne!(r.is_error, Some(true), "{tool}: {}", text_of(&r));
        let snapshot = text_of(&gw.call(server.snapshot(), json!({})).await);
        Wrapped {
            field: element(&snapshot, "textbox \"Name\""),
            noop: element(&snapshot, "button \"Nothing\""),
            save: element(&snapshot, "button \"Save\""),
            typed: std::cell::Cell::new(0),
            gw,
            _scratch: scratch,
        }
    }

    /// A call of kind `kind` (index into [`KINDS`]). Typing alternates by the calls made on this
    /// gateway, not by a round's count: warm-up and timed calls follow on from each other.
    fn call_of(&self, server: Server, kind: usize) -> (&'static str, Value) {
        match kind {
            0 => {
                let n = self.typed.get();
                self.typed.set(n + 1);
                server.type_into(&self.field, TEXTS[n % 2])
            }
            1 => server.click(&self.noop, "Nothing button"),
            _ => server.click(&self.save, "Save button"),
        }
    }
}

/// What the results of one path and kind carried.
#[derive(Default)]
struct Said {
    calls: usize,
    /// Results with the gateway's item or `_meta` key.
    appended: usize,
    /// Results with `isError: true`.
    errors: usize,
    /// This call's typing steps by verdict: `true`, `false`, `"indeterminate"`, `null` (none
    /// in time).
    verdicts: HashMap<String, usize>,
    /// Earlier calls' typing steps told in this result (owed to them), by verdict.
    earlier: HashMap<String, usize>,
    /// Results whose item carried nothing but earlier calls' typing.
    only_earlier: usize,
    /// Results naming a failed request with status 500.
    failure_named: usize,
}

impl Said {
    fn note(&mut self, r: &CallToolResult) {
        self.calls += 1;
        if r.is_error == Some(true) {
            self.errors += 1;
        }
        let head = r
            .content
            .last()
            .and_then(|c| c.as_text())
            .is_some_and(|t| t.text.starts_with(FEEDBACK_HEAD));
        let v = serde_json::to_value(r).unwrap_or(Value::Null);
        let meta = &v["_meta"][META_KEY];
        if head || !meta.is_null() {
            self.appended += 1;
        }
        let steps = meta["typing"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let failures = meta["failures"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for step in steps {
            let verdict = match &step["verified"] {
                Value::Bool(b) => b.to_string(),
                Value::String(s) => s.clone(),
                _ => "null".into(),
            };
            let into = if step["earlier"] == true {
                &mut self.earlier
            } else {
                &mut self.verdicts
            };
            *into.entry(verdict).or_default() += 1;
        }
        if !steps.is_empty() && failures.is_empty() && steps.iter().all(|s| s["earlier"] == true) {
            self.only_earlier += 1;
        }
        let named = failures
            .iter()
            .any(|f| f["kind"] == "network" && f["status"] == 500);
        if named {
            self.failure_named += 1;
        }
    }
}

/// Samples (ms) and what the results said, per path and kind, for one server.
struct Measured {
    ms: [[Vec<f64>; 3]; 2],
    said: [[Said; 3]; 2],
}

async fn measure(server: Server, rounds: usize, calls: usize, extra: &[&str]) -> Measured {
    let mut routes = HashMap::new();
    routes.insert("/", Route::ok("text/html", PAGE));
    // Each click's request has a path of its own, so no failure is a repeat.
    for n in 1..=WARM + rounds * calls {
        let path: &'static str = Box::leak(format!("/api/save/{n}").into_boxed_str());
        routes.insert(
            path,
            Route::ok("application/json", "{\"error\":\"bench\"}").status(500),
        );
    }
    let site = Site::start(routes).await;
    let url = format!("{}/", site.origin);
    let paths = [
        Wrapped::start(server, extra, false, &url).await,
        Wrapped::start(server, extra, true, &url).await,
    ];
    let mut m = Measured {
        ms: Default::default(),
        said: Default::default(),
    };
    // Warm both paths (the servers' first calls load code), untimed.
    for w in &paths {
        for _ in 0..WARM {
            for kind in 0..KINDS.len() {
                let (tool, args) = w.call_of(server, kind);
                w.gw.call(tool, args).await;
            }
        }
    }
    for r in 0..rounds {
        for p in rotation(r, 2) {
            let w = &paths[p];
            for _ in 0..calls {
                for kind in 0..KINDS.len() {
                    let (tool, args) = w.call_of(server, kind);
                    let t = Instant::now();
                    let res = w.gw.call(tool, args).await;
                    m.ms[p][kind].push(t.elapsed().as_secs_f64() * 1e3);
                    m.said[p][kind].note(&res);
                }
            }
        }
        eprintln!(
            "mcp-feedback: {} round {}/{rounds} done",
            server.name(),
            r + 1
        );
    }
    for w in paths {
        let _ = w.gw.close().await;
    }
    m
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn verdicts(verdicts: &HashMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = verdicts.iter().collect();
    v.sort();
    if v.is_empty() {
        return "none".into();
    }
    v.iter()
        .map(|(k, n)| format!("`{k}` {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs the comparison; returns its table as Markdown.
pub async fn run(rounds: usize, calls: usize, extra: &[&str]) -> String {
    let servers = [Server::DevTools, Server::Playwright];
    let mut results = Vec::new();
    let started = Instant::now();
    let load_before = load_average();
    for server in servers {
        results.push((server, measure(server, rounds, calls, extra).await));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{rounds} rounds × {calls} calls of each kind per path and server ({} s in all; load average {load_before} before, {} after); times in ms from the agent's side.\n",
        started.elapsed().as_secs(),
        load_average()
    );
    let _ = writeln!(
        out,
        "| server | call | p50 {} | p50 {} | added p50 | p99 {} | p99 {} | added p99 |",
        PATHS[0], PATHS[1], PATHS[0], PATHS[1]
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
    for (server, m) in &results {
        for (kind, name) in KINDS.iter().enumerate() {
            let (off, on) = (&m.ms[0][kind], &m.ms[1][kind]);
            let _ = writeln!(
                out,
                "| {} | {name} | {:.1} | {:.1} | {:+.1} | {:.1} | {:.1} | {:+.1} |",
                server.name(),
                percentile(off, 0.5),
                percentile(on, 0.5),
                percentile(on, 0.5) - percentile(off, 0.5),
                percentile(off, 0.99),
                percentile(on, 0.99),
                percentile(on, 0.99) - percentile(off, 0.99),
            );
        }
    }
    let _ = writeln!(out, "\nWhat the results said:\n");
    for (server, m) in &results {
        let [off, on] = &m.said;
        let appended_off: usize = off.iter().map(|s| s.appended).sum();
        let errors: usize = on.iter().chain(off.iter()).map(|s| s.errors).sum();
        let mut earlier = HashMap::new();
        for s in on.iter() {
            for (k, n) in &s.earlier {
                *earlier.entry(k.clone()).or_default() += n;
            }
        }
        let _ = writeln!(
            out,
            "- {}: the typing calls' own verdicts: {} (of {} calls); earlier calls' verdicts told in a later result: {}; no-op clicks with an item appended: {}/{} ({} of them only an earlier call's verdict); failing clicks naming the 500: {}/{}; results with an item or key under `--no-feedback`: {appended_off}; `isError` results: {errors}.",
            server.name(),
            verdicts(&on[0].verdicts),
            on[0].calls,
            verdicts(&earlier),
            on[1].appended,
            on[1].calls,
            on[1].only_earlier,
            on[2].failure_named,
            on[2].calls,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_result_said_is_read_from_the_item_and_the_meta_key() {
        let mut said = Said::default();
        let plain: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "Clicked"}],
            "_meta": {"theirs": 1}
        }))
        .unwrap();
        said.note(&plain);
        let typed: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "Filled"},
                {"type": "text", "text": format!("{FEEDBACK_HEAD}\n- typing, 20 chars (text field): landed")}
            ],
            "_meta": {META_KEY: {
                "call": "a1",
                "typing": [{"chars": 20, "inputType": "text", "verified": true, "reason": "landed"},
                           {"chars": 8, "inputType": "text", "verified": null},
                           {"chars": 6, "inputType": "text", "verified": "indeterminate"},
                           {"chars": 1, "inputType": "text", "verified": false, "earlier": true}],
                "failures": [{"kind": "network", "method": "POST", "url": "http://127.0.0.1:1/api/save", "status": 500}],
                "more": {"typing": 0, "failures": 0}
            }}
        }))
        .unwrap();
        said.note(&typed);
        let owed: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": FEEDBACK_HEAD}],
            "_meta": {META_KEY: {"typing": [{"verified": true, "earlier": true}], "failures": []}}
        }))
        .unwrap();
        said.note(&owed);
        assert_eq!((said.calls, said.appended, said.errors), (3, 2, 0));
        assert_eq!((said.failure_named, said.only_earlier), (1, 1));
        assert_eq!(
            verdicts(&said.verdicts),
            "`indeterminate` 1, `null` 1, `true` 1"
        );
        assert_eq!(verdicts(&said.earlier), "`false` 1, `true` 1");
    }
}
