//! Issue 38, item 2, end to end: a page writes registered secrets and typed text into URLs the
//! way pages do — `encodeURIComponent` (raw `!'()~`, `%20`), `URLSearchParams` (`+`), raw in a
//! path (`@:,;=&+$`), escapes in mixed-case hex — fetches them (404s: network failures), logs
//! them (console errors), puts them in its title, and navigates to a path that holds them.
//!
//! - Through `cdp-relay serve`, driven by Playwright (`login.mjs`: two fills and a submit): every
//!   byte of the run directory (journal, `report.html`, `summary.md`), the spec `cdp-relay
//!   export` writes and the relay's stderr is searched for each value in plain, JSON-escaped and
//!   every URL spelling below, and for its heads and tails of four non-whitespace characters or
//!   more in those spellings: no hit. The journal shows the values masked where the page put
//!   them, so the test saw what it means to test.
//! - Through `cdp-relay mcp` with @playwright/mcp: the gateway's note and `_meta` on the calls
//!   that typed and submitted name the failed requests and console errors with the values
//!   masked, and hold none of the spellings; then the run is swept the same way.

use cdp_relay_tests::files::{all_files, Scratch};
use cdp_relay_tests::mcp::{element, playwright_mcp, runs_in, text_of, McpGateway};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{export_spec, run_node_client, within, Chromium, RelayProcess};
use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Registered as `ISSUE_SECRET`: the issue's own (`/api/use/Zq7!Mk%40gevbFp` leaked whole).
const SECRET: &str = "Zq7!Mk@gevbFp";
/// Registered as `PATH_SECRET`: what a browser leaves raw in a path, and what it escapes.
const PATH_SECRET: &str = "p@th:1,2;x=y&z+$Q";
/// Typed into the address field: spaces and `encodeURIComponent`'s raw characters
/// (`…reet%2042` leaked everything after the first encoded space).
const TYPED: &str = "12 Main Street 42 (Apt 7!) ~Ann's";
/// Typed into the password field (the page never writes it anywhere).
const PASSWORD: &str = "Kx9(!)~pw-Qz4";

/// What `encodeURIComponent` leaves raw.
fn component_raw(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_.!~*'()".contains(c)
}

/// Which characters a URL writer leaves raw.
type Raw = fn(char) -> bool;

/// The URL writers the sweep spells each value as.
const WRITERS: [(&str, Raw); 5] = [
    ("encodeURIComponent", component_raw),
    ("encodeURI", |c| {
        component_raw(c) || ";,/?:@&=+$#".contains(c)
    }),
    ("path", |c| {
        c.is_ascii_graphic() && !"\"#<>?^`{}|".contains(c)
    }),
    ("query", |c| c.is_ascii_graphic() && !"\"#<>'".contains(c)),
    ("form", |c| c.is_ascii_alphanumeric() || "*-._".contains(c)),
];

/// `c`'s UTF-8 bytes as `%XX`, hex in upper or lower case.
fn escape(c: char, lower: bool) -> String {
    let mut utf8 = [0u8; 4];
    c.encode_utf8(&mut utf8)
        .bytes()
        .map(|b| {
            if lower {
                format!("%{b:02x}")
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `value` as `writer` spells it, one piece per character; `case` picks each escape's hex case
/// (0: upper, 1: lower, 2: alternating, as the page's `mixed` does).
fn pieces(value: &str, raw: Raw, form: bool, case: u8) -> Vec<String> {
    let mut escapes = 0;
    value
        .chars()
        .map(|c| {
            if raw(c) {
                c.to_string()
            } else if form && c == ' ' {
                "+".to_owned()
            } else {
                escapes += 1;
                escape(c, case == 1 || (case == 2 && escapes % 2 == 0))
            }
        })
        .collect()
}

/// `encodeURIComponent(value)`.
fn encode_uri_component(value: &str) -> String {
    pieces(value, component_raw, false, 0).concat()
}

/// Everything the sweep looks for, named: each value in plain and JSON-escaped, in every
/// writer's spelling with every hex case, and those spellings' heads and tails that carry four
/// non-whitespace characters of the value or more.
fn needles() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, value) in [
        ("ISSUE_SECRET", SECRET),
        ("PATH_SECRET", PATH_SECRET),
        ("typed address", TYPED),
        ("typed password", PASSWORD),
    ] {
        out.push((format!("{name} plain"), value.to_owned()));
        let json = serde_json::to_string(value).expect("serializes");
        out.push((format!("{name} JSON"), json[1..json.len() - 1].to_owned()));
        let chars: Vec<char> = value.chars().collect();
        let solid = |cs: &[char]| cs.iter().filter(|c| !c.is_whitespace()).count() >= 4;
        for (writer, raw) in WRITERS {
            for case in 0..3 {
                let p = pieces(value, raw, writer == "form", case);
                out.push((format!("{name} {writer} case {case}"), p.concat()));
                for k in 1..p.len() {
                    if solid(&chars[..k]) {
                        out.push((format!("{name} {writer} head {k}"), p[..k].concat()));
                    }
                    if solid(&chars[k..]) {
                        out.push((format!("{name} {writer} tail {k}"), p[k..].concat()));
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out.dedup_by(|a, b| a.1 == b.1);
    out
}

/// The sweep looks for what the issue saw leak, and what this page writes.
#[test]
fn the_sweep_looks_for_the_spellings_the_page_writes() {
    let needles = needles();
    let all: Vec<&str> = needles.iter().map(|(_, n)| n.as_str()).collect();
    for want in [
        "Zq7!Mk%40gevbFp",
        "Zq7!Mk@gevbFp",
        "p%40th%3a1%2C2%3bx%3Dy%26z%2B%24Q",
        "12%20Main%20Street%2042%20(Apt%207!)%20~Ann's",
        "12+Main+Street+42+%28Apt+7%21%29+%7EAnn%27s",
        // The issue's tail: everything after the first encoded space.
        "Main%20Street%2042%20(Apt%207!)%20~Ann's",
        "Kx9(!)~pw-Qz4",
    ] {
        assert!(all.contains(&want), "{want} not swept for");
    }
    assert_eq!(
        welcome_path(),
        "/welcome/12%20Main%20Street%2042%20(Apt%207!)%20~Ann's/p@th:1,2;x=y&z+$Q/Zq7!Mk%40gevbFp"
    );
    let mut hits = Vec::new();
    hits_in(
        "a leak",
        "GET /api/typed/12%20Main%20Street%2042 404",
        &needles,
        &mut hits,
    );
    assert!(!hits.is_empty(), "a typed head of four characters is a hit");
}

/// Every needle found in `hay`, named by `place`.
fn hits_in(place: &str, hay: &str, needles: &[(String, String)], out: &mut Vec<String>) {
    for (name, needle) in needles {
        if hay.contains(needle.as_str()) {
            out.push(format!("{name} ({needle:?}) in {place}"));
        }
    }
}

/// The page's own copy of the values: it knows the secrets, as a page that uses them does.
fn script() -> String {
    let secret = serde_json::to_string(SECRET).expect("serializes");
    let path_secret = serde_json::to_string(PATH_SECRET).expect("serializes");
    format!(
        r#"const SECRET = {secret}, PATH_SECRET = {path_secret};
// Escapes in alternating hex case, as some writers produce.
const mixed = (s) => {{ let i = 0; return s.replace(/%[0-9A-F]{{2}}/g, (m) => (i++ % 2 ? m.toLowerCase() : m)); }};
const user = document.getElementById('user');
user.addEventListener('input', () => {{
  const q = '/api/find?q=' + encodeURIComponent(user.value);
  const form = '/api/find2?' + new URLSearchParams({{ q: user.value }});
  fetch(q);
  fetch(form);
  console.error('searching ' + q + ' and ' + form);
}});
document.getElementById('submit').addEventListener('click', async () => {{
  const v = user.value;
  const urls = [
    '/api/use/' + encodeURIComponent(SECRET),
    '/api/path/' + PATH_SECRET,
    '/api/mixed/' + mixed(encodeURIComponent(PATH_SECRET)),
    '/api/typed/' + mixed(encodeURIComponent(v)) + '?t=' + encodeURIComponent(v),
  ];
  await Promise.all(urls.map((u) => fetch(u)));
  console.error('used ' + urls.join(' '));
  location.href = '/welcome/' + encodeURIComponent(v) + '/' + PATH_SECRET + '/' +
    encodeURIComponent(SECRET) + '?' + new URLSearchParams({{ q: v }});
}});"#
    )
}

/// The path the page navigates to (Chromium keeps it as written: every character in it is
/// one its path canonicalization leaves alone).
fn welcome_path() -> String {
    format!(
        "/welcome/{}/{PATH_SECRET}/{}",
        encode_uri_component(TYPED),
        encode_uri_component(SECRET)
    )
}

fn routes() -> HashMap<&'static str, Route> {
    let login = format!(
        r#"<!doctype html><title>Address</title>
<label for="user">Address</label><input id="user">
<label for="password">Password</label><input id="password" type="password">
<button id="submit">Submit</button>
<script>{}</script>"#,
        script()
    );
    let welcome = r#"<!doctype html><title>Welcome</title><body><p>welcome</p><script>
document.title = 'Welcome to ' + location.pathname;
console.error('landed at ' + location.href);
fetch('/api/after' + location.pathname).then(() => { document.body.dataset.loaded = 'yes'; });
</script>"#;
    let mut r = HashMap::new();
    r.insert("/login", Route::ok("text/html", login));
    // The site's routes are `&'static str`: one per test process is enough.
    let path: &'static str = Box::leak(welcome_path().into_boxed_str());
    r.insert(path, Route::ok("text/html", welcome));
    r
}

/// The one run under `root`.
fn run_dir(root: &Path) -> PathBuf {
    let runs = runs_in(root);
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// The journal's records as JSON text, one per line.
fn journal(run: &Path) -> String {
    std::fs::read_to_string(run.join("actions.jsonl")).expect("journal")
}

/// Every needle in every file of `run`, in its exported spec and in `stderr`.
fn sweep(run: &Path, stderr: &str, needles: &[(String, String)]) -> Vec<String> {
    let mut hits = Vec::new();
    let files = all_files(run);
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for file in ["actions.jsonl", "report.html", "summary.md"] {
        assert!(
            names.iter().any(|n| n.ends_with(file)),
            "no {file}: {names:?}"
        );
    }
    for (path, bytes) in &files {
        hits_in(path, &String::from_utf8_lossy(bytes), needles, &mut hits);
    }
    hits_in(
        "the exported spec",
        &export_spec(run, &[]),
        needles,
        &mut hits,
    );
    hits_in("stderr", stderr, needles, &mut hits);
    hits
}

/// What the journal must show, masked: the values where the page put them.
fn assert_masked_where_written(journal: &str) {
    for want in [
        "/api/use/${ISSUE_SECRET}",
        "/api/path/${PATH_SECRET}",
        "/api/mixed/${PATH_SECRET}",
        "/api/typed/${TYPED_1}",
        "searching /api/find?q=${TYPED_1} and /api/find2?q=${TYPED_1}",
        "/welcome/${TYPED_1}/${PATH_SECRET}/${ISSUE_SECRET}",
    ] {
        assert!(
            journal.contains(want),
            "no {want:?} in the journal:\n{journal}"
        );
    }
}

#[tokio::test]
async fn values_in_every_url_spelling_never_reach_the_run_the_report_or_the_spec() {
    within("url spellings through serve", async {
        let site = Site::start(routes()).await;
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().expect("tempdir");
        let dir = evidence.path().to_string_lossy().into_owned();
        let upstream = chrome.http();
        let relay = RelayProcess::spawn(
            &[
                "-vv",
                "serve",
                "--upstream",
                &upstream,
                "--listen",
                "127.0.0.1:0",
                "--evidence-dir",
                &dir,
                "--secret-env",
                "ISSUE_SECRET",
                "--secret-env",
                "PATH_SECRET",
            ],
            &[
                ("ISSUE_SECRET", std::ffi::OsStr::new(SECRET)),
                ("PATH_SECRET", std::ffi::OsStr::new(PATH_SECRET)),
            ],
        )
        .await;
        let cfg = json!({
            "endpoint": relay.endpoint,
            "site": site.origin,
            "user": TYPED,
            "password": PASSWORD,
        });
        let run = run_node_client("login.mjs", &cfg.to_string()).await;
        assert!(run.ok, "login.mjs failed:\n{}", run.stderr);
        let stderr = relay.stop().await;

        let run = run_dir(evidence.path());
        assert_masked_where_written(&journal(&run));
        let hits = sweep(&run, &stderr, &needles());
        assert!(hits.is_empty(), "values found: {hits:#?}");
    })
    .await;
}

/// The gateway's appended item and `_meta` facts of a result (both or neither).
fn feedback(r: &CallToolResult) -> (String, Value) {
    let text = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .find(|t| t.starts_with("cdp-relay evidence for this call:"))
        .unwrap_or_default();
    let meta = serde_json::to_value(r).expect("result")["_meta"]["cdp-relay/evidence"].clone();
    (text, meta)
}

#[tokio::test]
async fn the_gateway_s_note_and_meta_name_failures_with_the_values_masked() {
    within("url spellings through the gateway", async {
        let site = Site::start(routes()).await;
        let output = tempfile::tempdir().expect("output dir");
        let mut args = vec!["--".to_owned()];
        args.extend(playwright_mcp(output.path()));
        let scratch = Scratch::new();
        let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
        for (name, value) in [("ISSUE_SECRET", SECRET), ("PATH_SECRET", PATH_SECRET)] {
            let r = gw
                .call(
                    "evidence_register_secret",
                    json!({"name": name, "value": value}),
                )
                .await;
            assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
        }
        let nav = gw
            .call(
                "browser_navigate",
                json!({"url": format!("{}/login", site.origin)}),
            )
            .await;
        assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
        let snapshot = text_of(&gw.call("browser_snapshot", json!({})).await);
        let (user, submit) = (
            element(&snapshot, "textbox \"Address\""),
            element(&snapshot, "button \"Submit\""),
        );
        let typed = gw
            .call(
                "browser_type",
                json!({"element": "Address field", "target": user, "text": TYPED}),
            )
            .await;
        assert_ne!(typed.is_error, Some(true), "{}", text_of(&typed));
        let clicked = gw
            .call(
                "browser_click",
                json!({"element": "Submit button", "target": submit}),
            )
            .await;
        assert_ne!(clicked.is_error, Some(true), "{}", text_of(&clicked));
        // The landing page is where it was sent, with the values in its path.
        let landed = gw
            .call("browser_wait_for", json!({"text": "welcome"}))
            .await;
        assert_ne!(landed.is_error, Some(true), "{}", text_of(&landed));

        let needles = needles();
        let mut hits = Vec::new();
        let mut told = String::new();
        for (call, r) in [("browser_type", &typed), ("browser_click", &clicked)] {
            let (text, meta) = feedback(r);
            hits_in(&format!("{call}'s note"), &text, &needles, &mut hits);
            hits_in(
                &format!("{call}'s _meta"),
                &meta.to_string(),
                &needles,
                &mut hits,
            );
            told.push_str(&format!("{text}\n{meta}\n"));
        }
        // The failures are told, masked: the note says what it means to say.
        for want in [
            "searching /api/find?q=${TYPED_1} and /api/find2?q=${TYPED_1}",
            "/api/use/${ISSUE_SECRET}",
            "/api/mixed/${PATH_SECRET}",
        ] {
            assert!(
                told.contains(want),
                "no {want:?} in what the agent was told:\n{told}"
            );
        }
        let closed = gw.close().await;
        assert_eq!(closed.code, Some(0), "{}", closed.stderr);
        let run = run_dir(closed.evidence.path());
        assert_masked_where_written(&journal(&run));
        hits.extend(sweep(&run, &closed.stderr, &needles));
        assert!(hits.is_empty(), "values found: {hits:#?}");
        drop(closed);
        scratch.assert_clean();
    })
    .await;
}
