//! The gateway's privacy holes, each reproduced as it was seen and
//! swept afterwards, with the real browser MCP servers (chrome-devtools-mcp, @playwright/mcp
//! from `tests/clients`) where the item came from one, and a real Chromium:
//!
//! - a PIN typed key by key (`press_key`, `browser_press_key`) into a password field that
//!   echoes itself: each call's record keeps the key as one typed character, never the key;
//! - a `prompt()` answer (`handle_dialog`, `browser_handle_dialog`) that the page echoes into the
//!   console and the DOM: masked in the journal, `evidence_summary`, the resources, summary.md and
//!   report.html;
//! - arguments whose names say secret or personal data (`licenseKey`, `X-Signing-Key`,
//!   `userName`, `accountId`): lengths only;
//! - the wrapped server's own file tools pointed into the evidence root (the run directory,
//!   `artifacts/`, through `..`, a symlink, a `file://` URL): refused and recorded as errors,
//!   nothing written; results hand out resource URIs, never the root's path;
//! - a hard link planted in `artifacts/`: not served;
//! - `evidence_register_secret` with its arguments swapped, a reserved name and a huge name.

use cdp_evidence::StoredRecord;
use cdp_relay_tests::files::{all_files, leaks, Scratch};
use cdp_relay_tests::mcp::{
    calls, chrome_devtools_mcp, element, journal, playwright_mcp, resource_text, runs_in, text_of,
    McpGateway,
};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::within;
use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// Typed one key per call: letters, digits and one shifted key (`Shift+Q` types `Q`).
const PIN_KEYS: [&str; 6] = ["K", "q", "7", "Shift+Z", "x", "9"];
const PIN: &str = "Kq7Zx9";
const ANSWER: &str = "Pl4nted-Prompt-Answer";
/// chrome-devtools-mcp's other way to answer a prompt: `evaluate_script {dialogAction}`.
const SCRIPT_ANSWER: &str = "Pl4nted-Script-Answer";
const LICENSE: &str = "LIC-Planted-7Hq2Lm";
const SIGNING: &str = "sig_Planted_3nV6yT";
const ENCRYPTION: &str = "enc_Planted_9wE2rT";
const USER_NAME: &str = "ada.planted.user";
const ACCOUNT: &str = "ACCT-PLANTED-55190";

fn planted() -> [&'static str; 8] {
    [
        PIN,
        ANSWER,
        SCRIPT_ANSWER,
        LICENSE,
        SIGNING,
        ENCRYPTION,
        USER_NAME,
        ACCOUNT,
    ]
}

fn site() -> HashMap<&'static str, Route> {
    let page = r#"<!doctype html><title>PIN</title>
<label for="pin">PIN</label><input id="pin" type="password" autocomplete="one-time-code">
<button id="ask">Ask</button>
<p id="out"></p>
<script>
const pin = document.getElementById('pin');
pin.addEventListener('input', () => console.error('pin ' + pin.value));
document.getElementById('ask').addEventListener('click', () => {
  const a = prompt('Answer?');
  console.error('answer ' + a);
  document.getElementById('out').textContent = 'answer ' + a;
});
</script>"#;
    let mut r = HashMap::new();
    r.insert("/pin", Route::ok("text/html", page));
    r
}

/// Opens a prompt while the script runs and echoes its answer.
const SCRIPT_PROMPT: &str =
    "() => { const a = prompt('Again?'); console.error('script ' + a); return 1; }";

/// Every planted value found in `bytes`, named by `place`.
fn hits_in(place: &str, bytes: &[u8], out: &mut Vec<String>) {
    for secret in planted() {
        if leaks(bytes, secret) {
            out.push(format!("{secret} in {place}"));
        }
    }
}

/// Answers the prompt the click on Ask opened (retried while the server has not seen the dialog
/// yet).
async fn answer_prompt(gw: &McpGateway, tool: &str, args: Value) -> CallToolResult {
    within("the prompt opens", async {
        loop {
            let r = gw.call(tool, args.clone()).await;
            if r.is_error != Some(true) {
                return r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await
}

/// A console record of the page whose text starts with `prefix`, once the journal has it.
/// (Polled every 50 ms in the run below `root`, as `McpGateway::journal_until` does.)
async fn echoed(root: &Path, prefix: &str, done: impl Fn(&str) -> bool) -> String {
    let found = |records: &[StoredRecord]| {
        records.iter().any(|r| {
            r.kind == "console"
                && r.payload["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(prefix) && done(t))
        })
    };
    let records = within(prefix, async {
        loop {
            if let Some(run) = runs_in(root).pop() {
                if let Ok(bytes) = std::fs::read(run.join("actions.jsonl")) {
                    let records = cdp_evidence::parse_journal(&bytes).records;
                    if found(&records) {
                        return records;
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    records
        .iter()
        .rev()
        .find_map(|r| {
            let t = r.payload["text"].as_str()?;
            (r.kind == "console" && t.starts_with(prefix) && done(t)).then(|| t.to_owned())
        })
        .unwrap_or_default()
}

/// Calls that must be refused because they name a path inside the evidence root, for a
/// server whose file tool is `tool` with its path argument `arg`.
fn into_the_root(root: &Path, run: &Path, link: &Path, arg: &str) -> Vec<(String, Value)> {
    let root_name = root.file_name().expect("root name").to_string_lossy();
    [
        run.join("notes.txt").display().to_string(),
        run.join("artifacts/000777-frame.png").display().to_string(),
        format!("{}/../{root_name}/runs/notes.txt", root.display()),
        link.join("runs/notes.txt").display().to_string(),
        root.display().to_string().to_uppercase() + "/runs/notes.txt",
    ]
    .into_iter()
    .map(|p| (p.clone(), json!({ arg: p })))
    .collect()
}

/// What both real-server sessions check: the typed keys and the prompt answer as typed text,
/// the path refusals, and the sweep of everything the run left.
struct Session<'a> {
    press: &'a str,
    dialog: &'a str,
    evaluate: &'a str,
    shot: &'a str,
    shot_arg: &'a str,
    /// The evidence root.
    root: &'a Path,
    /// A directory outside the root the server may write to (chrome-devtools-mcp writes only
    /// below its working directory, the test's: none).
    fine_dir: Option<&'a Path>,
}

async fn check_session(gw: McpGateway, s: Session<'_>, scratch: &Scratch) {
    // The page echoed every keystroke; the whole PIN is masked as typed text (its first three
    // characters are not: they are shorter than any protected prefix, by design).
    let pin_echo = echoed(s.root, "pin ", |t| !t.ends_with(" K") && t.len() > 7).await;
    assert!(pin_echo.starts_with("pin ${TYPED_"), "{pin_echo}");

    // The evidence directory is the relay's: the server's own file tools may not write there.
    let root = s.root.canonicalize().expect("root");
    let run = runs_in(s.root).pop().expect("a run");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let link = elsewhere.path().join("link");
    std::os::unix::fs::symlink(&root, &link).expect("symlink");
    for (path, args) in into_the_root(&root, &run, &link, s.shot_arg) {
        let r = gw.call(s.shot, args).await;
        assert_eq!(r.is_error, Some(true), "{path}: {}", text_of(&r));
        let text = text_of(&r);
        assert!(text.contains("evidence directory"), "{text}");
        assert!(
            !text
                .to_lowercase()
                .contains(&root.display().to_string().to_lowercase()),
            "{text}"
        );
    }
    let url = format!("file://{}/runs", root.display());
    assert_eq!(
        gw.call(
            s.evaluate,
            json!({"function": format!("() => fetch('{url}')")})
        )
        .await
        .is_error,
        Some(true),
        "a script that spells the root out"
    );
    assert!(!run.join("notes.txt").exists());
    assert!(!run.join("artifacts/000777-frame.png").exists());
    assert!(!root.join("runs/notes.txt").exists());
    let refused = gw
        .read(&format!(
            "evidence://runs/{}/artifacts/000777-frame.png",
            run.file_name().unwrap().to_string_lossy()
        ))
        .await;
    assert!(refused.is_err(), "nothing planted to serve");
    // A path outside the root is the server's business.
    if let Some(dir) = s.fine_dir {
        let fine = dir.join("fine.png");
        let ok = gw
            .call(s.shot, json!({ s.shot_arg: fine.display().to_string() }))
            .await;
        assert_ne!(ok.is_error, Some(true), "{}", text_of(&ok));
        assert!(fine.is_file(), "the screenshot outside the root was taken");
    }

    // What the agent hears: no typed text, and resource URIs rather than the root's path.
    let summary = gw.call("evidence_summary", json!({})).await;
    let summary_text = format!(
        "{}{}",
        text_of(&summary),
        summary.structured_content.clone().unwrap_or_default()
    );
    assert!(
        !summary_text.contains(&root.display().to_string()),
        "{summary_text}"
    );
    assert!(!summary_text.contains(&s.root.display().to_string()));
    let mut hits = Vec::new();
    hits_in("evidence_summary", summary_text.as_bytes(), &mut hits);
    for file in ["summary.md", "report.html", "actions.jsonl"] {
        let uri = format!("evidence://runs/current/{file}");
        let text = resource_text(&gw.read(&uri).await.expect("resource"));
        hits_in(&uri, text.as_bytes(), &mut hits);
    }

    let closed = gw.close().await;
    assert_eq!(closed.code, Some(0), "{}", closed.stderr);
    let runs = runs_in(s.root);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let records = journal(&runs[0]);

    // The page's echo of the prompt's answer is recorded, masked (a console error is written
    // with the frame taken after it, which may be at the end of the run).
    let answer_echo = records
        .iter()
        .filter(|r| r.kind == "console")
        .filter_map(|r| r.payload["text"].as_str())
        .find(|t| t.starts_with("answer "))
        .expect("the page's echo of the answer");
    assert!(answer_echo.starts_with("answer ${TYPED_"), "{answer_echo}");

    // Each key press: one typed character, never the key itself.
    let presses = calls(&records, s.press);
    assert_eq!(presses.len(), PIN_KEYS.len(), "{presses:?}");
    for p in &presses {
        let key = &p.payload["arguments"][0];
        assert_eq!(key["name"], "key");
        assert_eq!(key["input"]["chars"], 1, "{key}");
        assert!(key.get("value").is_none(), "the key is kept: {key}");
    }
    // The prompt's answer: its length only.
    let answered = calls(&records, s.dialog)
        .into_iter()
        .find(|r| r.status.as_deref() == Some("ok"))
        .expect("the answered dialog");
    assert!(
        answered.payload["arguments"]
            .to_string()
            .contains(&format!("\"chars\":{}", ANSWER.len())),
        "{}",
        answered.payload["arguments"]
    );
    // The refused calls are recorded as errors, with the reason and without the path.
    let refusals: Vec<&StoredRecord> = calls(&records, s.shot)
        .into_iter()
        .filter(|r| r.status.as_deref() == Some("error"))
        .collect();
    assert_eq!(refusals.len(), 5, "{refusals:?}");
    for r in &refusals {
        let e = r.error.as_deref().unwrap_or_default();
        assert!(e.contains("evidence directory"), "{e}");
    }
    // The names that say secret or personal data keep their lengths only.
    let named = calls(&records, s.evaluate)
        .into_iter()
        .find(|r| r.payload["arguments"].to_string().contains("licenseKey"))
        .expect("the evaluate call with named arguments");
    assert!(named.payload["arguments"]
        .to_string()
        .contains("X-Signing-Key"));

    // The sweep: every byte the run left, and the gateway's stderr.
    for (path, bytes) in all_files(&runs[0]) {
        hits_in(&path, &bytes, &mut hits);
    }
    hits_in("the gateway's stderr", closed.stderr.as_bytes(), &mut hits);
    assert!(hits.is_empty(), "planted values found: {hits:#?}");
    let html = std::fs::read_to_string(runs[0].join("report.html")).expect("report.html");
    assert!(
        html.contains(s.press),
        "the key presses are steps of the report"
    );
    drop(closed);
    scratch.assert_clean();
}

/// Arguments with names that say secret or personal data, extra to what the tool takes.
fn named_arguments(function: &str) -> Value {
    json!({
        "function": function,
        "licenseKey": LICENSE,
        "encryptionKey": ENCRYPTION,
        "signingKey": SIGNING,
        "headers": {"X-Signing-Key": SIGNING},
        "userName": USER_NAME,
        "accountId": ACCOUNT
    })
}

#[tokio::test]
async fn chrome_devtools_mcp_keys_prompt_answers_names_and_paths() {
    within("chrome-devtools-mcp privacy", async {
        let site = Site::start(site()).await;
        let scratch = Scratch::new();
        let mut args = vec!["--".to_owned()];
        args.extend(chrome_devtools_mcp());
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
        let root = gw.evidence.path().to_path_buf();
        let nav = gw
            .call(
                "navigate_page",
                json!({"type": "url", "url": format!("{}/pin", site.origin)}),
            )
            .await;
        assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
        let snapshot = text_of(&gw.call("take_snapshot", json!({})).await);
        let pin = element(&snapshot, "textbox \"PIN\"");
        let clicked = gw.call("click", json!({"uid": pin})).await;
        assert_ne!(clicked.is_error, Some(true), "{}", text_of(&clicked));
        for key in PIN_KEYS {
            let r = gw.call("press_key", json!({"key": key})).await;
            assert_ne!(r.is_error, Some(true), "{key}: {}", text_of(&r));
        }
        // chrome-devtools-mcp refuses keys its schema lacks; the call is recorded all the same.
        gw.call("evaluate_script", named_arguments("() => 1")).await;
        let answered = gw
            .call(
                "evaluate_script",
                json!({"function": SCRIPT_PROMPT, "dialogAction": SCRIPT_ANSWER}),
            )
            .await;
        assert_ne!(answered.is_error, Some(true), "{}", text_of(&answered));
        let script_echo = echoed(&root, "script ", |_| true).await;
        assert!(script_echo.starts_with("script ${TYPED_"), "{script_echo}");
        let ask = element(&snapshot, "button \"Ask\"");
        gw.call("click", json!({"uid": ask})).await;
        answer_prompt(
            &gw,
            "handle_dialog",
            json!({"action": "accept", "promptText": ANSWER}),
        )
        .await;
        check_session(
            gw,
            Session {
                press: "press_key",
                dialog: "handle_dialog",
                evaluate: "evaluate_script",
                shot: "take_screenshot",
                shot_arg: "filePath",
                root: &root,
                fine_dir: None,
            },
            &scratch,
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn playwright_mcp_keys_prompt_answers_names_and_paths() {
    within("@playwright/mcp privacy", async {
        let site = Site::start(site()).await;
        let scratch = Scratch::new();
        let output = tempfile::tempdir().expect("output dir");
        let mut args = vec!["--".to_owned()];
        args.extend(playwright_mcp(output.path()));
        // The evidence root inside the server's output directory, where it may write files:
        // as with the default `./evidence` below an agent's working directory.
        let root = output.path().join("evidence");
        let gw = McpGateway::spawn(
            &args,
            &[
                ("TMPDIR", scratch.path().as_os_str()),
                ("CDP_RELAY_EVIDENCE_DIR", root.as_os_str()),
            ],
        )
        .await;
        let nav = gw
            .call(
                "browser_navigate",
                json!({"url": format!("{}/pin", site.origin)}),
            )
            .await;
        assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
        let snapshot = text_of(&gw.call("browser_snapshot", json!({})).await);
        let pin = element(&snapshot, "textbox \"PIN\"");
        let clicked = gw
            .call(
                "browser_click",
                json!({"element": "PIN field", "target": pin}),
            )
            .await;
        assert_ne!(clicked.is_error, Some(true), "{}", text_of(&clicked));
        for key in PIN_KEYS {
            let r = gw.call("browser_press_key", json!({"key": key})).await;
            assert_ne!(r.is_error, Some(true), "{key}: {}", text_of(&r));
        }
        let named = gw
            .call("browser_evaluate", named_arguments("() => 1"))
            .await;
        assert_ne!(named.is_error, Some(true), "{}", text_of(&named));
        let ask = element(&snapshot, "button \"Ask\"");
        gw.call(
            "browser_click",
            json!({"element": "Ask button", "target": ask}),
        )
        .await;
        answer_prompt(
            &gw,
            "browser_handle_dialog",
            json!({"accept": true, "promptText": ANSWER}),
        )
        .await;
        check_session(
            gw,
            Session {
                press: "browser_press_key",
                dialog: "browser_handle_dialog",
                evaluate: "browser_evaluate",
                shot: "browser_take_screenshot",
                shot_arg: "filename",
                root: &root,
                fine_dir: Some(output.path()),
            },
            &scratch,
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn hard_links_are_not_served_and_secret_names_are_bounded_and_never_echoed() {
    within("hard links and secret names", async {
        let scratch = Scratch::new();
        let gw = McpGateway::spawn(&[], &[("TMPDIR", scratch.path().as_os_str())]).await;
        gw.call("evidence_mark_step", json!({"label": "start"}))
            .await;
        gw.journal_until("the run", |r| !r.is_empty()).await;
        let run = gw.runs().pop().expect("a run");

        // A hard link to a file outside the root, planted under an artifact's name.
        let elsewhere =
            tempfile::tempdir_in(gw.evidence.path().parent().expect("parent")).expect("elsewhere");
        let outside = elsewhere.path().join("outside.png");
        std::fs::write(&outside, b"\x89PNG outside the evidence root").expect("outside");
        std::fs::create_dir_all(run.join("artifacts")).expect("artifacts");
        std::fs::hard_link(&outside, run.join("artifacts/000777-frame.png")).expect("hard link");
        let served = gw
            .read("evidence://runs/current/artifacts/000777-frame.png")
            .await;
        assert!(served.is_err(), "a hard link was served: {served:?}");
        // Ours: not part of what the run's sweep looks at.
        std::fs::remove_file(run.join("artifacts/000777-frame.png")).expect("unplant");

        // Swapped arguments: the secret passed as the name.
        const SWAPPED: &str = "Sw4pped-Planted-Secret";
        let r = gw
            .call(
                "evidence_register_secret",
                json!({"name": SWAPPED, "value": "ACCOUNT_PASSWORD"}),
            )
            .await;
        assert_eq!(r.is_error, Some(true));
        let said = text_of(&r);
        assert!(said.contains("invalid secret name"), "{said}");
        assert!(!said.contains(SWAPPED), "{said}");
        // It is protected like typed text: an echo of it is masked.
        gw.call(
            "evidence_mark_step",
            json!({"label": format!("echo {SWAPPED}")}),
        )
        .await;
        // The relay's own names are reserved; a huge name is refused in a short line.
        let r = gw
            .call(
                "evidence_register_secret",
                json!({"name": "TYPED_1", "value": "chosen-by-the-agent"}),
            )
            .await;
        assert_eq!(r.is_error, Some(true));
        assert!(text_of(&r).contains("TYPED_"), "{}", text_of(&r));
        let huge = "N".repeat(100_000);
        let r = gw
            .call(
                "evidence_register_secret",
                json!({"name": huge, "value": "huge-name-literal"}),
            )
            .await;
        assert_eq!(r.is_error, Some(true));
        assert!(text_of(&r).contains("at most 64"), "{}", text_of(&r));
        assert!(text_of(&r).len() < 200);
        // The HTTP API shares the rule.
        let ep = gw.call("relay_endpoint", json!({})).await;
        let cdp = ep.structured_content.expect("structured")["cdpUrl"]
            .as_str()
            .expect("cdpUrl")
            .trim_start_matches("http://")
            .to_owned();
        let put = cdp_relay_tests::http::request_with_body(
            &cdp,
            "PUT",
            "/relay/v1/secrets/TYPED_2",
            &[],
            b"chosen-over-http",
        )
        .await;
        assert_eq!(put.status, 400, "{}", put.text());
        assert!(put.text().contains("relay's own"), "{}", put.text());

        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let records = journal(&closed.runs()[0]);
        let registered = calls(&records, "evidence_register_secret");
        assert_eq!(registered.len(), 3);
        for r in &registered {
            let args = r.payload["arguments"].to_string();
            assert!(
                !args.contains("NNNNNNNN"),
                "a huge name kept: {}",
                &args[..200.min(args.len())]
            );
            assert!(
                r.error.as_deref().is_some_and(|e| e.len() < 200),
                "{:?}",
                r.error
            );
        }
        assert_eq!(
            registered[0].payload["arguments"][0],
            json!({"name": "name", "type": "string", "chars": SWAPPED.len()})
        );
        let marked = records
            .iter()
            .filter_map(|r| r.payload["label"].as_str())
            .find(|l| l.starts_with("echo "))
            .expect("the second step");
        assert!(marked.starts_with("echo ${TYPED_"), "{marked}");
        let mut hits = Vec::new();
        for (path, bytes) in all_files(&closed.runs()[0]) {
            for needle in [SWAPPED, "outside the evidence root", "chosen-over-http"] {
                if leaks(&bytes, needle) {
                    hits.push(format!("{needle} in {path}"));
                }
            }
        }
        if leaks(closed.stderr.as_bytes(), SWAPPED) {
            hits.push("on stderr".into());
        }
        assert!(hits.is_empty(), "{hits:#?}");
        drop(elsewhere);
        drop(closed);
        scratch.assert_clean();
    })
    .await;
}

#[test]
fn secret_env_cannot_take_the_relays_own_names() {
    let out = std::process::Command::new(cdp_relay_tests::relay_binary())
        .args(["sanitize", "--secret-env", "TYPED_1"])
        .env("TYPED_1", "chosen-from-env")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cdp-relay sanitize");
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--secret-env TYPED_1") && stderr.contains("relay's own"),
        "{stderr}"
    );
    assert!(!stderr.contains("chosen-from-env"));
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
