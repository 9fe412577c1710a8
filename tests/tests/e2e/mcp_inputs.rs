//! Recorded inputs on the agent's path (issue 39), with both real browser MCP servers
//! (chrome-devtools-mcp, @playwright/mcp from `tests/clients`) behind `cdp-relay mcp` and a real
//! Chromium. A loopback sign-in page echoes what it is given everywhere it can: a text field,
//! the title, an aria-label, a console message, a request's query and body, the response, a
//! `.value` read back by the server's evaluate tool, HTML read back, base64 in data attributes.
//! The agent signs in with `${PASSWORD}` (from `--var-file`) and `${ACCOUNT_ID}` (from
//! `CDP_RELAY_VAR_ACCOUNT_ID`), and names a memo it types itself with `recordAs: MEMO`. Then:
//!
//! - every byte the agent received (a tap on its client's transport) holds none of the three
//!   values in any spelling (exact, JSON, Playwright's JS string, form and percent encodings,
//!   the browser's re-encoding, HTML, base64), and each echo was read back as `${NAME}` (so the
//!   sweep is not empty by accident);
//! - the run directory, report.html, summary.md, the exported spec and the gateway's stderr hold
//!   none either; the run names the typing steps `PASSWORD`, `ACCOUNT_ID` and `MEMO`, each with
//!   its verdict (the text landed);
//! - the site's server side got the real values;
//! - a missing variable, a placeholder inside a longer text: error results naming it, nothing
//!   typed; `recordAs` appears in the typing tools' schemas and never reaches the server;
//! - a screenshot while the account id is shown in a text field is withheld, one while only
//!   the password was typed (a masked field) is not, one after a navigation is not;
//! - no process the gateway started (the server, the browser) has a `CDP_RELAY_VAR_` variable,
//!   a value or the var-file's path in its environment or command line.

use base64::Engine as _;
use cdp_relay_tests::files::{all_files, leaks, Scratch};
use cdp_relay_tests::mcp::{
    chrome_devtools_mcp, element, journal, playwright_mcp, text_of, McpGateway,
};
use cdp_relay_tests::within;
use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PASSWORD: &str = "Pw&<7\"Zq!x9'K d";
const ACCOUNT: &str = "AC 5589&Ry+Tq~?";
const MEMO: &str = "Memo-Planted-7731";
/// The var-file's line for the password (double quotes: it holds a `'`).
const VAR_FILE: &str = "# sign-in\nPASSWORD=\"Pw&<7\\\"Zq!x9'K d\"\n";

const PAGE: &str = r#"<!doctype html><title>Sign in</title>
<form id="f">
<label for="acct">Account</label><input id="acct" autocomplete="off">
<label for="pw">Password</label><input id="pw" type="password">
<label for="memo">Memo</label><input id="memo" autocomplete="off">
<button type="submit">Sign in</button>
</form>
<input id="echo" aria-label="Echo" readonly>
<button id="out" type="button">Sign out</button>
<div id="b64"></div><p id="html"></p>
<script>
document.getElementById('f').addEventListener('submit', async (e) => {
  e.preventDefault();
  const a = acct.value, p = pw.value, m = memo.value;
  const q = '?account=' + encodeURIComponent(a) + '&password=' + encodeURIComponent(p);
  const r = await fetch('/api/signin' + q, {method: 'POST',
    body: new URLSearchParams({account: a, password: p, memo: m})});
  await r.json();
  document.title = 'Signed in ' + a + ' ' + p + ' ' + m;
  echo.value = a + ' / ' + p + ' / ' + m;
  out.setAttribute('aria-label', 'Sign out ' + a + ' ' + p);
  console.log('signed in ' + a + ' ' + p + ' ' + m);
  b64.dataset.account = btoa(a);
  b64.dataset.password = btoa(p);
  html.textContent = a + ' ' + p;
  document.body.dataset.done = '1';
});
</script>"#;

// ---------------------------------------------------------------------------------------------
// The sign-in site: a page, an API that records what it got and echoes it, a second page.

/// What the API got: (raw query, raw body) per sign-in.
type Got = Arc<Mutex<Vec<(String, String)>>>;

struct SignIn {
    origin: String,
    got: Got,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SignIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SignIn {
    async fn start() -> SignIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("addr"));
        let got: Got = Arc::default();
        let seen = got.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(answer(tcp, seen.clone()));
            }
        });
        SignIn { origin, got, task }
    }
}

async fn answer(mut tcp: tokio::net::TcpStream, got: Got) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())
                .flatten()
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let (status, kind, text) = match path {
        "/signin" => (200, "text/html", PAGE.to_owned()),
        "/home" => (
            200,
            "text/html",
            "<!doctype html><title>Home</title><p>Welcome".to_owned(),
        ),
        "/api/signin" => {
            got.lock()
                .expect("lock")
                .push((query.to_owned(), body.clone()));
            let form = decode_form(&body);
            let echo = json!({"ok": true, "account": form.get("account"), "password": form.get("password")});
            (200, "application/json", echo.to_string())
        }
        _ => (404, "text/plain", "not found".to_owned()),
    };
    let resp = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = tcp.write_all(resp.as_bytes()).await;
    let _ = tcp.shutdown().await;
}

/// `a=b&c=d` (form-encoded) as a map.
fn decode_form(s: &str) -> HashMap<String, String> {
    s.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (percent_decode(k), percent_decode(v)))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).expect("hex"));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).expect("utf-8")
}

// ---------------------------------------------------------------------------------------------
// Every spelling of a value, written here independently of the gateway's own list.

fn pct(s: &str, keep: impl Fn(u8) -> bool, plus: bool) -> String {
    s.bytes()
        .map(|b| match b {
            b' ' if plus => "+".to_owned(),
            b if keep(b) => char::from(b).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn json_inside(s: &str) -> String {
    let j = serde_json::to_string(s).expect("json");
    j[1..j.len() - 1].to_owned()
}

fn html(s: &str, chars: &[(char, &str)]) -> String {
    s.chars()
        .map(|c| {
            chars
                .iter()
                .find(|(x, _)| *x == c)
                .map_or_else(|| c.to_string(), |(_, e)| (*e).to_owned())
        })
        .collect()
}

/// The value as it can come back: what no byte the agent reads, and no file, may hold.
fn encodings(v: &str) -> Vec<String> {
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let form = |b: u8| alnum(b) || b"*-._".contains(&b);
    let component = |b: u8| alnum(b) || b"-_.!~*'()".contains(&b);
    let component_then_browser = pct(&pct(v, component, false), |b| b != b'\'', false);
    let b64 = base64::engine::general_purpose::STANDARD.encode(v);
    let b64url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    let mut all = vec![
        v.to_owned(),
        json_inside(v),
        json_inside(v).replace("\\\"", "\"").replace('\'', "\\'"),
        pct(v, form, true),
        pct(v, form, false),
        pct(v, component, false),
        component_then_browser,
        html(v, &[('&', "&amp;"), ('<', "&lt;"), ('>', "&gt;")]),
        html(
            v,
            &[
                ('&', "&amp;"),
                ('<', "&lt;"),
                ('>', "&gt;"),
                ('"', "&quot;"),
            ],
        ),
        html(v, &[('&', "&amp;"), ('"', "&quot;")]),
        b64.trim_end_matches('=').to_owned(),
        b64url,
    ];
    let escaped: Vec<String> = all.iter().map(|s| json_inside(s)).collect();
    all.extend(escaped);
    all.sort();
    all.dedup();
    all
}

/// Every spelling of every value found in `bytes`, named by `place`.
fn hits(place: &str, bytes: &[u8], out: &mut Vec<String>) {
    for (name, v) in [
        ("PASSWORD", PASSWORD),
        ("ACCOUNT_ID", ACCOUNT),
        ("MEMO", MEMO),
    ] {
        for e in encodings(v) {
            if leaks(bytes, &e) {
                out.push(format!("{name} as {e:?} in {place}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The two servers' tools.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Server {
    ChromeDevtools,
    Playwright,
}

impl Server {
    fn navigate(self, url: &str) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("navigate_page", json!({"type": "url", "url": url})),
            Server::Playwright => ("browser_navigate", json!({"url": url})),
        }
    }

    fn snapshot(self) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("take_snapshot", json!({})),
            Server::Playwright => ("browser_snapshot", json!({})),
        }
    }

    fn screenshot(self) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("take_screenshot", json!({})),
            Server::Playwright => ("browser_take_screenshot", json!({})),
        }
    }

    /// One field: chrome-devtools-mcp's `fill`, @playwright/mcp's `browser_type`.
    fn fill(
        self,
        target: &str,
        label: &str,
        text: &str,
        record_as: Option<&str>,
    ) -> (&'static str, Value) {
        let mut v = match self {
            Server::ChromeDevtools => json!({"uid": target, "value": text}),
            Server::Playwright => {
                json!({"element": format!("{label} field"), "target": target, "text": text})
            }
        };
        if let Some(name) = record_as {
            v["recordAs"] = json!(name);
        }
        (self.fill_tool(), v)
    }

    fn fill_tool(self) -> &'static str {
        match self {
            Server::ChromeDevtools => "fill",
            Server::Playwright => "browser_type",
        }
    }

    /// A form of one field: `fill_form`, `browser_fill_form` (a placeholder one level down).
    fn fill_form(self, target: &str, label: &str, text: &str) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => (
                "fill_form",
                json!({"elements": [{"uid": target, "value": text}]}),
            ),
            Server::Playwright => (
                "browser_fill_form",
                json!({"fields": [{"name": label, "type": "textbox", "target": target, "value": text}]}),
            ),
        }
    }

    fn form_tool(self) -> &'static str {
        self.fill_form("", "", "").0
    }

    fn click(self, target: &str, label: &str) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("click", json!({"uid": target})),
            Server::Playwright => (
                "browser_click",
                json!({"element": format!("{label} button"), "target": target}),
            ),
        }
    }

    fn evaluate(self, function: &str) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("evaluate_script", json!({"function": function})),
            Server::Playwright => ("browser_evaluate", json!({"function": function})),
        }
    }

    fn console(self) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("list_console_messages", json!({})),
            Server::Playwright => ("browser_console_messages", json!({})),
        }
    }

    fn requests(self) -> (&'static str, Value) {
        match self {
            Server::ChromeDevtools => ("list_network_requests", json!({})),
            Server::Playwright => ("browser_network_requests", json!({})),
        }
    }

    /// The calls that read the details (headers, bodies) of the request listed on `line`.
    fn request(self, line: &str) -> Vec<(&'static str, Value)> {
        match self {
            Server::ChromeDevtools => {
                let id: u64 = line
                    .split("reqid=")
                    .nth(1)
                    .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("no reqid in {line}"));
                vec![("get_network_request", json!({"reqid": id}))]
            }
            Server::Playwright => {
                let index: u64 = line
                    .trim()
                    .split('.')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("no index in {line}"));
                ["request-body", "response-body"]
                    .iter()
                    .map(|part| {
                        (
                            "browser_network_request",
                            json!({"index": index, "part": part}),
                        )
                    })
                    .collect()
            }
        }
    }
}

async fn ok(gw: &McpGateway, (name, args): (&str, Value)) -> CallToolResult {
    let r = gw.call(name, args.clone()).await;
    assert_ne!(r.is_error, Some(true), "{name} {args}: {}", text_of(&r));
    r
}

fn has_image(r: &CallToolResult) -> bool {
    r.content
        .iter()
        .any(|c| matches!(c, rmcp::model::ContentBlock::Image(_)))
}

/// The gateway's typing lines of a result: every one says `verdict` (or that the verdict comes
/// later; the journal's check below then holds it to the same).
fn assert_typing_heard(r: &CallToolResult, what: &str, verdict: &str) {
    let text = text_of(r);
    assert!(
        text.contains("cdp-relay evidence for this call"),
        "{what}: no typing line: {text}"
    );
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("- typing, "))
        .collect();
    assert!(!lines.is_empty(), "{what}: {text}");
    for l in lines {
        assert!(
            l.contains(verdict) || l.contains("not verified yet"),
            "{what}: {l}"
        );
    }
}

/// The processes below `pid` (children, their children, …).
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| {
            let p: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((p, ppid))
        })
        .collect();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out.remove(0);
    out
}

/// What each echo reads back as, through the agent's own tools.
async fn read_echoes(gw: &McpGateway, server: Server) {
    let snapshot = text_of(&ok(gw, server.snapshot()).await);
    for want in [
        "Signed in ${ACCOUNT_ID} ${PASSWORD} ${MEMO}",
        "Sign out ${ACCOUNT_ID} ${PASSWORD}",
    ] {
        assert!(
            snapshot.contains(want),
            "{want} not in the snapshot:\n{snapshot}"
        );
    }
    let console = text_of(&ok(gw, server.console()).await);
    assert!(
        console.contains("signed in ${ACCOUNT_ID} ${PASSWORD} ${MEMO}"),
        "{console}"
    );
    let list = text_of(&ok(gw, server.requests()).await);
    let line = list
        .lines()
        .find(|l| l.contains("/api/signin"))
        .unwrap_or_else(|| panic!("no sign-in request in:\n{list}"));
    assert!(
        line.contains("account=${ACCOUNT_ID}&password=${PASSWORD}"),
        "{line}"
    );
    let mut details = String::new();
    for call in server.request(line) {
        details.push_str(&text_of(&ok(gw, call).await));
    }
    assert!(
        details.contains("account=${ACCOUNT_ID}&password=${PASSWORD}&memo=${MEMO}"),
        "the request body: {details}"
    );
    assert!(
        details.contains("${PASSWORD}\""),
        "the response body: {details}"
    );
    for (function, want) in [
        (
            "() => document.getElementById('echo').value",
            "${ACCOUNT_ID} / ${PASSWORD} / ${MEMO}",
        ),
        (
            "() => document.getElementById('b64').dataset.password",
            "${PASSWORD}",
        ),
        (
            "() => document.getElementById('b64').dataset.account",
            "${ACCOUNT_ID}",
        ),
        (
            "() => document.getElementById('html').innerHTML",
            "${ACCOUNT_ID} ${PASSWORD}",
        ),
        (
            "() => document.getElementById('out').outerHTML",
            "aria-label=\\\"Sign out ${ACCOUNT_ID} ${PASSWORD}\\\"",
        ),
    ] {
        let got = text_of(&ok(gw, server.evaluate(function)).await);
        let unescaped = got.replace("\\\"", "\"");
        assert!(
            got.contains(want) || unescaped.contains(&want.replace("\\\"", "\"")),
            "{function}: {got}"
        );
    }
}

async fn session(server: Server) {
    let site = SignIn::start().await;
    let scratch = Scratch::new();
    let output = tempfile::tempdir().expect("output dir");
    let vars = tempfile::tempdir().expect("vars dir");
    let var_file = vars.path().join("signin.env");
    std::fs::write(&var_file, VAR_FILE).expect("var file");
    let mut args = vec![
        "--var-file".to_owned(),
        var_file.display().to_string(),
        "--".to_owned(),
    ];
    args.extend(match server {
        Server::ChromeDevtools => chrome_devtools_mcp(),
        Server::Playwright => playwright_mcp(output.path()),
    });
    let gw = McpGateway::spawn(
        &args,
        &[
            ("TMPDIR", scratch.path().as_os_str()),
            ("CDP_RELAY_VAR_ACCOUNT_ID", std::ffi::OsStr::new(ACCOUNT)),
        ],
    )
    .await;

    // The agent hears which names exist: lengths, never values.
    let info = gw.client().peer_info().expect("initialize result").clone();
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("${PASSWORD} (15 characters)"),
        "{instructions}"
    );
    assert!(
        instructions.contains("${ACCOUNT_ID} (15 characters)"),
        "{instructions}"
    );
    let tools = within("tools/list", gw.client().list_all_tools())
        .await
        .expect("tools");
    let schema = |name: &str| {
        let t = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no {name}"));
        Value::Object((*t.input_schema).clone())
    };
    assert_eq!(
        schema(server.fill_tool())["properties"]["recordAs"]["type"],
        "string"
    );
    let form = schema(server.form_tool());
    let item = &form["properties"][match server {
        Server::ChromeDevtools => "elements",
        Server::Playwright => "fields",
    }]["items"];
    assert!(item["properties"]["recordAs"].is_object(), "{form}");
    let listed = ok(&gw, ("evidence_list_variables", json!({}))).await;
    let listed = listed.structured_content.clone().expect("structured");
    assert_eq!(listed["variables"][0]["name"], "ACCOUNT_ID");
    assert_eq!(listed["variables"][0]["source"], "environment");
    assert_eq!(listed["variables"][1]["name"], "PASSWORD");
    assert_eq!(listed["variables"][1]["source"], "var-file");
    assert_eq!(listed["variables"][1]["chars"], 15);

    ok(&gw, server.navigate(&format!("{}/signin", site.origin))).await;
    let snap = text_of(&ok(&gw, server.snapshot()).await);
    let acct = element(&snap, "textbox \"Account\"");
    let pw = element(&snap, "textbox \"Password\"");
    let memo = element(&snap, "textbox \"Memo\"");
    let submit = element(&snap, "button \"Sign in\"");
    assert!(
        has_image(&ok(&gw, server.screenshot()).await),
        "a screenshot before typing"
    );

    // Refused: nothing is typed.
    let missing = gw
        .call(
            server.fill_tool(),
            server.fill(&acct, "Account", "${NOPE}", None).1,
        )
        .await;
    assert_eq!(missing.is_error, Some(true));
    assert!(
        text_of(&missing).contains("variable NOPE has no value"),
        "{}",
        text_of(&missing)
    );
    let longer = gw
        .call(
            server.fill_tool(),
            server.fill(&acct, "Account", "user ${ACCOUNT_ID}", None).1,
        )
        .await;
    assert_eq!(longer.is_error, Some(true));
    assert!(
        text_of(&longer).contains("part of a longer text"),
        "{}",
        text_of(&longer)
    );
    let empty = text_of(&ok(&gw, server.evaluate("() => 'length ' + acct.value.length")).await);
    assert!(empty.contains("length 0"), "nothing typed: {empty}");

    // The password: a masked field, so pictures keep coming.
    let r = ok(&gw, server.fill(&pw, "Password", "${PASSWORD}", None)).await;
    // A password is never read back: its verdict says so.
    assert_typing_heard(&r, "the password", ": not verified: not read back");
    assert!(
        has_image(&ok(&gw, server.screenshot()).await),
        "the password field masks it"
    );
    // The account id in a text field: pictures would show it.
    let r = ok(&gw, server.fill_form(&acct, "Account", "${ACCOUNT_ID}")).await;
    assert_typing_heard(&r, "the account id", ": landed");
    let shot = ok(&gw, server.screenshot()).await;
    assert!(!has_image(&shot), "withheld while the account id shows");
    assert!(
        text_of(&shot).contains("cdp-relay withheld this image"),
        "{}",
        text_of(&shot)
    );
    // A literal the agent holds, named.
    let r = ok(&gw, server.fill(&memo, "Memo", MEMO, Some("MEMO"))).await;
    assert_typing_heard(&r, "the memo", ": landed");

    ok(&gw, server.click(&submit, "Sign in")).await;
    within("the sign-in", async {
        loop {
            let r = ok(
                &gw,
                server.evaluate(
                    "() => document.body.dataset.done === '1' ? 'SIGNED-IN-DONE' : 'waiting'",
                ),
            )
            .await;
            if text_of(&r).contains("SIGNED-IN-DONE") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
    read_echoes(&gw, server).await;
    let listed = ok(&gw, ("evidence_list_variables", json!({}))).await;
    let listed = listed.structured_content.clone().expect("structured");
    assert_eq!(
        listed["variables"][1]["typedInto"],
        json!(["password"]),
        "{listed}"
    );
    assert_eq!(
        listed["variables"][0]["typedInto"],
        json!(["text"]),
        "{listed}"
    );
    assert_eq!(listed["recorded"][0]["name"], "MEMO", "{listed}");
    assert_eq!(listed["recorded"][0]["chars"], MEMO.len(), "{listed}");

    // A fresh document: pictures again.
    ok(&gw, server.navigate(&format!("{}/home", site.origin))).await;
    assert!(
        has_image(&ok(&gw, server.screenshot()).await),
        "after a navigation"
    );

    // Nothing the gateway started inherited the variables or learned the file.
    let procs = descendants(gw.pid());
    assert!(procs.len() >= 2, "the server and the browser: {procs:?}");
    let path = var_file.display().to_string();
    for p in &procs {
        for part in ["environ", "cmdline"] {
            let Ok(bytes) = std::fs::read(format!("/proc/{p}/{part}")) else {
                continue;
            };
            for needle in ["CDP_RELAY_VAR_", PASSWORD, ACCOUNT, path.as_str()] {
                assert!(!leaks(&bytes, needle), "{needle:?} in /proc/{p}/{part}");
            }
        }
    }

    let closed = gw.close().await;
    // The page's server side got the real values.
    let got = site.got.lock().expect("lock").clone();
    assert_eq!(got.len(), 1, "one sign-in");
    let (query, body) = &got[0];
    let (query, body) = (decode_form(query), decode_form(body));
    assert_eq!(query["account"], ACCOUNT);
    assert_eq!(query["password"], PASSWORD);
    assert_eq!(body["password"], PASSWORD);
    assert_eq!(body["memo"], MEMO);

    // The sweep.
    let mut found = Vec::new();
    hits("what the agent received", &closed.received, &mut found);
    for line in closed
        .received
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
    {
        let v: Value = serde_json::from_slice(line).expect("a JSON-RPC line");
        hits(
            "a message's decoded strings",
            strings(&v).as_bytes(),
            &mut found,
        );
    }
    hits("the gateway's stderr", closed.stderr.as_bytes(), &mut found);
    for (name, bytes) in all_files(closed.evidence.path()) {
        hits(&name, &bytes, &mut found);
    }
    let run = closed.runs().pop().expect("a run");
    let spec = cdp_relay_tests::export_spec(&run, &[]);
    hits("the exported spec", spec.as_bytes(), &mut found);
    assert!(found.is_empty(), "{found:#?}");
    assert!(!closed.received.is_empty());

    // The run names the inputs, with their verdicts; the refused call is an error naming NOPE.
    let records = journal(&run);
    for (name, verified) in [
        ("PASSWORD", json!("indeterminate")),
        ("ACCOUNT_ID", json!(true)),
        ("MEMO", json!(true)),
    ] {
        let steps: Vec<&cdp_evidence::StoredRecord> = records
            .iter()
            .filter(|r| r.kind == "action" && r.payload["method"] == "type")
            .filter(|r| r.payload["input"]["variable"] == name)
            .collect();
        assert!(!steps.is_empty(), "no typing step named {name}");
        for s in steps {
            assert_eq!(
                s.payload["verification"]["verified"], verified,
                "{name}: {}",
                s.payload
            );
        }
        assert!(spec.contains(name), "{name} not in the spec:\n{spec}");
    }
    assert!(
        records.iter().any(|r| r.status.as_deref() == Some("error")
            && r.error
                .as_deref()
                .is_some_and(|e| e.contains("variable NOPE has no value"))),
        "the refused call's record: {:?}",
        records
            .iter()
            .filter_map(|r| r.error.as_deref())
            .collect::<Vec<_>>()
    );
    scratch.assert_clean();
}

/// Every string of a JSON value, joined.
fn strings(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(strings).collect::<Vec<_>>().join("\n"),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}\n{}", strings(v)))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[tokio::test]
async fn chrome_devtools_mcp_signs_in_with_values_the_agent_never_sees() {
    within(
        "chrome-devtools-mcp recorded inputs",
        session(Server::ChromeDevtools),
    )
    .await;
}

#[tokio::test]
async fn playwright_mcp_signs_in_with_values_the_agent_never_sees() {
    within(
        "@playwright/mcp recorded inputs",
        session(Server::Playwright),
    )
    .await;
}

#[test]
fn the_sweep_knows_every_spelling() {
    let all = encodings(PASSWORD);
    for e in [
        "Pw&<7\\\"Zq!x9'K d",
        "Pw&<7\"Zq!x9\\'K d",
        "Pw%26%3C7%22Zq%21x9%27K+d",
        "Pw%26%3C7%22Zq!x9%27K%20d",
        "Pw&amp;&lt;7&quot;Zq!x9'K d",
        "UHcmPDciWnEheDknSyBk",
    ] {
        assert!(all.iter().any(|x| x == e), "{e} missing");
    }
    assert!(encodings(ACCOUNT)
        .iter()
        .any(|x| x == "QUMgNTU4OSZSeStUcX4_"));
    assert_eq!(percent_decode("a%26b+c"), "a&b c");
}
