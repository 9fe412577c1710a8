//! The gateway's own tools, prefixed `evidence_` and `relay_` so they cannot be mistaken for the
//! wrapped server's (a server offering one of these names is refused at start):
//!
//! - `evidence_mark_step {label}`: an agent-level step in the journal (the label sanitized);
//! - `evidence_register_secret {name, value}`: a literal masked as `${NAME}` from now on (the
//!   rules of the HTTP API and `--secret-env`: at least 4 characters, a name of at most 64
//!   `[A-Z_][A-Z0-9_]*` not starting with `TYPED_`); the value is never echoed, logged or
//!   recorded, nor is a name that fails (it may be the secret, passed in the wrong argument:
//!   it is registered as typed text instead);
//! - `evidence_summary`: the run, its counts and its failures so far (see `summary.rs`);
//! - `evidence_finalize`: finalize and render now; later calls go to a new run;
//! - `evidence_export_test {runId?}`: the current run (or another) as a Playwright test that
//!   replays it, typed text read from environment variables (`cdp-relay export`);
//! - `relay_endpoint`: the relay's CDP endpoint and browser websocket URL;
//! - `evidence_list_variables`: the `${NAME}` variables the agent can type without holding them
//!   and the `recordAs` names so far — names, lengths, where each came from and the kinds of
//!   field it was typed into, never a value (`inputs.rs`).
//!
//! Every call is recorded like the wrapped server's (arguments reduced by `args.rs`). Results
//! name the run's files by their `evidence://` resource URIs, never by their path: the agent has
//! no business in the evidence directory, and a call of the wrapped server that names a path in
//! it is refused ([`refuse_evidence_paths`]).

use super::args::{self, PathRefusal, REGISTER_SECRET};
use super::journal::{Outcome, GATEWAY_TOOL};
use super::shared::Shared;
use cdp_capture::PipelineHandle;
use cdp_sanitize::SecretError;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub(crate) const MARK_STEP: &str = "evidence_mark_step";
pub(crate) const SUMMARY: &str = "evidence_summary";
pub(crate) const FINALIZE: &str = "evidence_finalize";
pub(crate) const ENDPOINT: &str = "relay_endpoint";
pub(crate) const EXPORT_TEST: &str = "evidence_export_test";
pub(crate) const LIST_VARIABLES: &str = "evidence_list_variables";

/// The names of the gateway's tools.
pub(crate) const NAMES: [&str; 7] = [
    MARK_STEP,
    REGISTER_SECRET,
    SUMMARY,
    FINALIZE,
    ENDPOINT,
    EXPORT_TEST,
    LIST_VARIABLES,
];

fn schema(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// The gateway's tools, as listed to the agent.
pub(crate) fn definitions() -> Vec<Tool> {
    let none = || schema(json!({"type": "object", "properties": {}}));
    vec![
        Tool::new(
            MARK_STEP,
            "Mark an agent-level step in the browser evidence (e.g. \"log in\", \"checkout\"); the report groups what follows under it. The label is sanitized.",
            schema(json!({
                "type": "object",
                "properties": {"label": {"type": "string", "description": "A short name for the step"}},
                "required": ["label"]
            })),
        )
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false)),
        Tool::new(
            REGISTER_SECRET,
            "Register a secret (a password, an API key, a personal value) so the evidence shows it as ${NAME} wherever it appears from now on. The value is never echoed back, logged or recorded.",
            schema(json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Z_][A-Z0-9_]*$", "maxLength": 64, "description": "The placeholder name, e.g. ACCOUNT_PASSWORD (at most 64 characters; names starting with TYPED_ are the relay's own)"},
                    "value": {"type": "string", "minLength": 4, "description": "The literal to mask (at least 4 characters)"}
                },
                "required": ["name", "value"]
            })),
        )
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false)),
        Tool::new(
            SUMMARY,
            "Summarize the browser evidence so far: the run id, the report's resource URI, counts, and each failure recorded (failed requests, console errors) with the tool call it happened during and the resource URI of the frame taken after it. A failure is recorded together with that frame, up to a few seconds after it happened.",
            none(),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new(
            FINALIZE,
            "Finalize the browser evidence now and render its report; returns the resource URIs of report.html and summary.md. Later calls are recorded in a new run.",
            none(),
        )
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false)),
        Tool::new(
            EXPORT_TEST,
            "Write the browser evidence as a Playwright test that replays it: navigations, clicks and fills by locator, key presses, pages opened, and the original run's failures as comments. Typed text is never in it: each typed value is read from an environment variable the header lists. Returns the test file's text.",
            schema(json!({
                "type": "object",
                "properties": {"runId": {"type": "string", "description": "A finalized run's id (default: the current run)"}}
            })),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new(
            LIST_VARIABLES,
            "List the variables you can type without knowing their values: write ${NAME} as the whole value of a typing argument (fill's value, type_text's text, a form field's value) and cdp-relay types the value; results show ${NAME}, never the value. Also lists the names you gave typed text with recordAs. Names, lengths, sources and the kinds of field each was typed into; never a value.",
            none(),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new(
            ENDPOINT,
            "The relay's Chrome DevTools endpoint (http) and the browser's websocket URL through the relay, to hand to another CDP tool (Playwright connectOverCDP, Puppeteer connect).",
            none(),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
    ]
}

fn text_result(v: Value) -> CallToolResult {
    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(v);
    r
}

fn error_result(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

fn str_arg<'a>(args: Option<&'a Map<String, Value>>, name: &str) -> Option<&'a str> {
    args.and_then(|a| a.get(name)).and_then(Value::as_str)
}

const EVIDENCE_OFF: &str =
    "evidence is off for this gateway (--no-evidence, or the evidence directory could not be used)";

/// A tool's result, and the outcome its record keeps.
type Answer = (CallToolResult, Outcome);

/// Runs one of the gateway's tools and records the call: one function per tool.
pub(crate) async fn call(shared: &Shared, params: CallToolRequestParams) -> CallToolResult {
    let name = params.name.as_ref();
    let args = params.arguments.as_ref();
    let recorder = &shared.recorder;
    let call = recorder.begin(GATEWAY_TOOL, name, args);
    let handle = recorder.handle().cloned();
    let (result, outcome) = match (name, handle) {
        (ENDPOINT, _) => endpoint(shared).await,
        (LIST_VARIABLES, h) => list_variables(shared, h).await,
        (_, None) => (error_result(EVIDENCE_OFF), Outcome::error(EVIDENCE_OFF)),
        (MARK_STEP, Some(_)) => mark_step(args),
        (REGISTER_SECRET, Some(h)) => register_secret(shared, &h, args),
        (SUMMARY, Some(h)) => summary(shared, &h).await,
        (EXPORT_TEST, Some(h)) => export_test(shared, &h, args).await,
        (FINALIZE, Some(h)) => return finalize(shared, &h, call).await,
        (other, _) => {
            let e = format!("no such gateway tool: {other}");
            (error_result(&e), Outcome::error(e))
        }
    };
    finish(call, result, outcome).await
}

/// `relay_endpoint`: the relay's CDP endpoint and the browser's websocket URL through it.
async fn endpoint(shared: &Shared) -> Answer {
    let ws = super::child::browser_ws_url(&shared.endpoints.cdp_url)
        .await
        .or_else(|| shared.endpoints.ws_url.clone());
    (
        text_result(json!({"cdpUrl": shared.endpoints.cdp_url, "wsUrl": ws})),
        Outcome::ok(None),
    )
}

/// `evidence_list_variables`: names, lengths, sources, and the kinds of field each was typed
/// into (from the run's journal, when evidence is on).
async fn list_variables(shared: &Shared, h: Option<PipelineHandle>) -> Answer {
    shared.recorder.flush().await;
    let run_dir = h.map(|h| h.status().run_dir);
    // Reading the journal blocks: off the runtime's workers.
    let typed_into = tokio::task::spawn_blocking(move || {
        run_dir
            .and_then(|d| cdp_evidence::RunDir::open(&d).ok())
            .map(|dir| super::inputs::typed_into(&dir))
            .unwrap_or_default()
    })
    .await
    .unwrap_or_default();
    (
        text_result(shared.inputs.list(&typed_into)),
        Outcome::ok(None),
    )
}

/// `evidence_mark_step {label}`: the label goes into the call's record.
fn mark_step(args: Option<&Map<String, Value>>) -> Answer {
    match str_arg(args, "label").filter(|l| !l.trim().is_empty()) {
        Some(label) => (
            text_result(json!({"marked": true})),
            Outcome {
                label: Some(label.to_owned()),
                ..Outcome::ok(None)
            },
        ),
        None => {
            let e = "evidence_mark_step needs a non-empty `label`";
            (error_result(e), Outcome::error(e))
        }
    }
}

/// `evidence_register_secret {name, value}`. The error names the rule broken, never the value,
/// nor a name that fails.
fn register_secret(
    shared: &Shared,
    h: &PipelineHandle,
    args: Option<&Map<String, Value>>,
) -> Answer {
    let (Some(secret_name), Some(value)) = (str_arg(args, "name"), str_arg(args, "value")) else {
        let e = "evidence_register_secret needs `name` and `value` strings";
        return (error_result(e), Outcome::error(e));
    };
    match h.register_secret(secret_name, value) {
        Ok(_) => {
            shared.inputs.registered(Some(h), secret_name, value);
            (
                text_result(json!({"registered": format!("${{{secret_name}}}")})),
                Outcome::ok(None),
            )
        }
        Err(e) => {
            if matches!(
                e,
                SecretError::InvalidName { .. } | SecretError::NameTooLong { .. }
            ) {
                // Most likely the secret itself, passed as the name: protect it as typed text
                // is protected.
                shared.recorder.protect_typed(&[secret_name.to_owned()]);
            }
            let e = format!("not registered: {e}");
            (error_result(&e), Outcome::error(e))
        }
    }
}

/// `evidence_summary`: the run so far (see `summary.rs`).
async fn summary(shared: &Shared, h: &PipelineHandle) -> Answer {
    shared.recorder.flush().await;
    let status = h.status();
    // Reading the journal blocks: off the runtime's workers.
    let summary = tokio::task::spawn_blocking(move || {
        cdp_evidence::RunDir::open(&status.run_dir)
            .map(|dir| super::summary::summarize(&status.run_id, &dir))
    })
    .await;
    match summary {
        Ok(Ok(s)) => (
            text_result(serde_json::to_value(s).unwrap_or_default()),
            Outcome::ok(None),
        ),
        Ok(Err(_)) | Err(_) => {
            let e = "the run directory cannot be read";
            (error_result(e), Outcome::error(e))
        }
    }
}

/// `evidence_export_test {runId?}`: the run (the current one by default) as a Playwright test.
async fn export_test(
    shared: &Shared,
    h: &PipelineHandle,
    args: Option<&Map<String, Value>>,
) -> Answer {
    shared.recorder.flush().await;
    super::resources::settle(h).await;
    let status = h.status();
    let run_dir = match str_arg(args, "runId") {
        None => Ok((status.run_id, status.run_dir)),
        Some(id) => shared
            .store
            .as_ref()
            .filter(|store| shared.run_visible(store, id))
            .and_then(|store| store.run_dir(id).ok())
            .map(|dir| (id.to_owned(), dir))
            .ok_or("no such run in the evidence directory"),
    };
    let exported = match run_dir {
        Ok((run_id, dir)) => tokio::task::spawn_blocking(move || {
            cdp_report::replay::export(&dir, cdp_report::replay::Format::default())
                .map(|e| (run_id, e))
                .map_err(|_| "the run cannot be exported")
        })
        .await
        .unwrap_or(Err("the run cannot be exported")),
        Err(e) => Err(e),
    };
    match exported {
        Ok((run_id, export)) => {
            let f = &export.figures;
            let mut r = CallToolResult::success(vec![ContentBlock::text(export.text.clone())]);
            r.structured_content = Some(json!({
                "runId": run_id,
                "resource": format!("{}/{run_id}/{}", super::resources::PREFIX, cdp_report::replay::SPEC_FILE),
                "steps": f.steps,
                "notReplayable": f.not_replayable,
                "firstNotReplayable": f.first_gap,
                "stillRecording": f.still_recording,
                "variables": f.variables,
            }));
            (r, Outcome::ok(None))
        }
        Err(e) => (error_result(e), Outcome::error(e)),
    }
}

/// `evidence_finalize`: the run finalized and rendered; later calls go to a new run. The
/// call's own record belongs to the run it finalizes, so it ends before the rotation.
async fn finalize(
    shared: &Shared,
    h: &PipelineHandle,
    call: super::journal::Call,
) -> CallToolResult {
    let before = h.status();
    call.end(Outcome::ok(None));
    shared.recorder.flush().await;
    match h.writer().rotate().await {
        Some(_) => {
            let run_id = before.run_id;
            let prefix = super::resources::PREFIX;
            text_result(json!({
                "runId": run_id,
                "reportResource": format!("{prefix}/{run_id}/{}", cdp_report::HTML_FILE),
                "summaryResource": format!("{prefix}/{run_id}/{}", cdp_report::SUMMARY_FILE),
                "nextRunId": h.status().run_id,
            }))
        }
        None => error_result("the run could not be finalized (see the gateway's log)"),
    }
}

/// Refuses a call of the wrapped server whose arguments name a path inside the evidence root
/// (`take_screenshot {filePath: <run>/artifacts/000777-frame.png}` would plant a frame the
/// resources then serve): an error result to the agent, and the call recorded as an error. The
/// path is not repeated. `None` when the call may go on (or evidence is off).
pub(crate) fn refuse_evidence_paths(
    shared: &Shared,
    server: &str,
    params: &CallToolRequestParams,
) -> Option<CallToolResult> {
    let store = shared.store.as_ref()?;
    let args = params.arguments.as_ref();
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
    let e = match args::evidence_path_argument(args, store.root(), &cwd)? {
        PathRefusal::Inside(name) => format!(
            "refused: `{}` names a path inside the evidence directory, which only cdp-relay writes; use a path outside it (read the evidence through the evidence:// resources)",
            shared.clean(&name.chars().take(64).collect::<String>())
        ),
        PathRefusal::TooMany => format!(
            "refused: more than {} strings to check for paths into the evidence directory; split the call",
            args::MAX_PATH_CANDIDATES
        ),
    };
    let call = shared.recorder.begin(server, &params.name, args);
    call.end(Outcome::error(e.clone()));
    Some(error_result(&e))
}

async fn finish(
    call: super::journal::Call,
    result: CallToolResult,
    outcome: Outcome,
) -> CallToolResult {
    let mut outcome = outcome;
    if outcome.result.is_none() {
        outcome.result = Some(super::journal::result_shape(&result));
    }
    call.end(outcome);
    result
}
