//! `cdp-relay export` end to end: the demo's run, an agent's run through the MCP gateway
//! (chrome-devtools-mcp, a `fill_form` of three fields), and Playwright's run over a shop of
//! every kind of step (a `<select>`, a file input, a double click, a hover menu, a generated id,
//! an open shadow root, a frame two levels down, a name with hidden text, typing) become
//! Playwright specs that `@playwright/test` (with Debian's Chromium) runs green against a fresh
//! site, through a relay that records the replay as a run of its own with the same steps and
//! input types, each named input registered there under its name; the shop's server sees the
//! replay do exactly what the run did, and every locator in the spec resolves, with Playwright,
//! to the one element the run acted on. No spec holds what was typed, not even what a page echoed
//! of it into a name; a step that cannot be replayed fails the test there, saying why (or with
//! `--allow-gaps` marks it fixme); and without one of its variables the replay fails at the step
//! that needs it, naming the variable.

use cdp_relay_tests::files::{leaks, Scratch};
use cdp_relay_tests::http::request_with_body;
use cdp_relay_tests::mcp::{
    chrome_devtools_mcp, element, playwright_mcp, resource_text, text_of, McpGateway, SIGN_IN_FORM,
};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::target_pages::{shop, shop_routes, LogSite};
use cdp_relay_tests::{
    clients_dir, collect_stderr, demo_run, export_spec, only_run, relay_binary, run_node_client,
    within, Chromium, RelayFixture, RelayProcess,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

// The demo's planted inputs: the same literals as in cli/src/demo/mod.rs.
const USERNAME: &str = "alex.morgan@ledgerly.test";
const PASSWORD: &str = "demo-Passw0rd!";
const OTP: &str = "824913";
const SEARCH: &str = "overdue invoices";

/// The value the demo typed into a field of this input type.
fn typed_value(input_type: &str) -> &'static str {
    match input_type {
        "email" => USERNAME,
        "password" => PASSWORD,
        "one-time-code" => OTP,
        "search" => SEARCH,
        other => panic!("the demo types into no {other} field"),
    }
}

/// A demo kept open after its script: its site keeps serving (the closest thing to the demo
/// site on its own). Killed on drop; [`KeptDemo::stop`] ends it with Ctrl-C.
struct KeptDemo {
    child: tokio::process::Child,
    stderr: Arc<std::sync::Mutex<String>>,
    origin: String,
}

impl KeptDemo {
    async fn start(evidence: &Path) -> KeptDemo {
        let mut child = tokio::process::Command::new(relay_binary())
            .args(["demo", "--keep-open", "--evidence-dir"])
            .arg(evidence)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn cdp-relay demo --keep-open");
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        let seen = Arc::new(tokio::sync::Notify::new());
        collect_stderr(
            child.stderr.take().expect("stderr"),
            stderr.clone(),
            Some(seen.clone()),
        );
        let origin = within("the kept-open demo", async {
            loop {
                let notified = seen.notified();
                {
                    let text = stderr.lock().expect("stderr").clone();
                    if text.contains("the browser stays open") {
                        let at = text.find("signing in to http://").expect("site origin") + 14;
                        let url = text[at..].split_whitespace().next().expect("url");
                        break url.trim_end_matches("/login").to_owned();
                    }
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("the kept-open demo exited ({status}):\n{text}");
                    }
                }
                notified.await;
            }
        })
        .await;
        KeptDemo {
            child,
            stderr,
            origin,
        }
    }

    async fn stop(mut self) {
        let pid = self.child.id().expect("running") as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("SIGINT");
        let status = within("the kept-open demo to exit", self.child.wait())
            .await
            .expect("wait");
        let text = self.stderr.lock().expect("stderr").clone();
        assert!(status.success(), "the kept-open demo failed:\n{text}");
    }
}

/// The spec's variables for typed inputs, from its header: input type → variable name.
fn input_variables(spec: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in spec.lines().take_while(|l| l.starts_with("//")) {
        let Some((left, right)) = line.split_once(" characters typed into ") else {
            continue;
        };
        let name = left.trim_start_matches("//").split_whitespace().next();
        let kind = right
            .trim_start_matches("an ")
            .trim_start_matches("a ")
            .split(" field")
            .next();
        if let (Some(name), Some(kind)) = (name, kind) {
            out.insert(kind.to_owned(), name.to_owned());
        }
    }
    out
}

/// The steps of a run a replay must repeat: navigations, clicks, typing (with its input type),
/// key presses and pages opened, in the format's order.
fn steps(run_dir: &Path) -> Vec<String> {
    let journal = std::fs::read_to_string(run_dir.join("actions.jsonl")).expect("journal");
    let mut records: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .filter(|r: &Value| r["kind"] == "action" && r["source"] == "relay")
        .collect();
    records.sort_by(|a, b| {
        (a["startedAt"].as_str(), a["actionId"].as_str())
            .cmp(&(b["startedAt"].as_str(), b["actionId"].as_str()))
    });
    records
        .iter()
        .filter_map(|r| {
            let p = &r["payload"];
            match p["method"].as_str()? {
                m @ ("Page.navigate" | "click" | "press" | "Target.createTarget") => {
                    Some(m.to_owned())
                }
                "type" => Some(format!(
                    "type {}",
                    p["input"]["inputType"].as_str().unwrap_or("?")
                )),
                _ => None,
            }
        })
        .collect()
}

/// Writes `spec` as `replay.spec.ts` into `work` beside a Playwright config (Debian's
/// Chromium, no browser download) and the clients' `node_modules`.
fn prepare(work: &Path, spec: &str) {
    std::fs::write(work.join("replay.spec.ts"), spec).expect("spec");
    std::os::unix::fs::symlink(
        clients_dir().join("node_modules"),
        work.join("node_modules"),
    )
    .expect("node_modules link");
    std::fs::write(
        work.join("playwright.config.ts"),
        "export default {\n  testDir: '.',\n  outputDir: './test-results',\n  workers: 1,\n  timeout: 100_000,\n  \
         reporter: 'line',\n  use: { launchOptions: { executablePath: '/usr/bin/chromium' } },\n};\n",
    )
    .expect("config");
}

/// `cdp-relay launch` recording into `evidence`.
async fn launch(evidence: &Path) -> RelayProcess {
    RelayProcess::spawn(
        &[
            "launch",
            "--listen",
            "127.0.0.1:0",
            "--evidence-dir",
            &evidence.to_string_lossy(),
        ],
        &[],
    )
    .await
}

/// Runs `@playwright/test` on the spec in `work` with `env`; returns (success, output).
async fn playwright(work: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let cli = clients_dir()
        .join("node_modules")
        .join("@playwright")
        .join("test")
        .join("cli.js");
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(cli)
        .args(["test", "--config", "playwright.config.ts"])
        .current_dir(work)
        .env_remove("CDP_RELAY_ENDPOINT")
        .env_remove("BASE_URL")
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = within("npx playwright test", cmd.output())
        .await
        .expect("run node (is Node.js installed?)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn the_demos_run_replays_green_through_the_relay_and_fails_without_a_variable() {
    let evidence = tempfile::tempdir().expect("evidence dir");
    let run_dir = demo_run(evidence.path()).await;

    // The export, twice: the same bytes.
    let work = tempfile::tempdir().expect("work dir");
    let spec_path = work.path().join("exported.ts");
    let export = |out: &Path| {
        let status = std::process::Command::new(relay_binary())
            .arg("export")
            .arg(&run_dir)
            .arg("--out")
            .arg(out)
            .output()
            .expect("run cdp-relay export");
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
    };
    export(&spec_path);
    export(&work.path().join("again.ts"));
    let spec = std::fs::read_to_string(&spec_path).expect("spec");
    assert_eq!(
        spec,
        std::fs::read_to_string(work.path().join("again.ts")).expect("again")
    );
    std::fs::remove_file(work.path().join("again.ts")).expect("rm");
    std::fs::remove_file(&spec_path).expect("rm");
    for planted in [USERNAME, PASSWORD, OTP, SEARCH] {
        assert!(
            !leaks(spec.as_bytes(), planted),
            "the spec holds a typed value:\n{spec}"
        );
    }
    let variables = input_variables(&spec);
    assert_eq!(
        variables.keys().map(String::as_str).collect::<Vec<_>>(),
        ["email", "one-time-code", "password", "search"],
        "{spec}"
    );
    assert!(
        !spec.contains("not replayable"),
        "every step of the demo is replayable:\n{spec}"
    );

    // A fresh site, a relay in front of a fresh Chromium, and the replay through it.
    let site = KeptDemo::start(&evidence.path().join("site")).await;
    prepare(work.path(), &spec);
    let replay_evidence = tempfile::tempdir().expect("replay evidence");
    let relay = launch(replay_evidence.path()).await;
    let mut env: Vec<(&str, &str)> = variables
        .iter()
        .map(|(kind, name)| (name.as_str(), typed_value(kind)))
        .collect();
    env.push(("BASE_URL", &site.origin));
    let endpoint = relay.endpoint.clone();
    let mut through_relay = env.clone();
    through_relay.push(("CDP_RELAY_ENDPOINT", &endpoint));
    let (ok, output) = playwright(work.path(), &through_relay).await;
    assert!(ok, "the replay failed:\n{output}\n{spec}");
    relay.stop().await;

    // The replay's own run: the same steps and input types. The test's page is one it opened
    // (the demo's first page was already there).
    let mut replayed = steps(&only_run(replay_evidence.path()));
    assert_eq!(
        replayed.first().map(String::as_str),
        Some("Target.createTarget")
    );
    replayed.remove(0);
    assert_eq!(replayed, steps(&run_dir), "{spec}");

    // Without the password: the replay fails at the password's step, naming the variable.
    let password = &variables["password"];
    let without: Vec<(&str, &str)> = env.iter().filter(|(k, _)| k != password).copied().collect();
    let (ok, output) = playwright(work.path(), &without).await;
    assert!(!ok, "the replay passed without {password}:\n{output}");
    assert!(
        output.contains(&format!(
            "missing environment variable {password} (the password"
        )),
        "{output}"
    );
    let name = password.trim_start_matches("CDP_RELAY_VAR_");
    let fill_line = spec
        .lines()
        .position(|l| l.contains(".fill(") && l.contains(&format!("typed('{name}'")))
        .expect("the password's fill")
        + 1;
    assert!(
        output.contains(&format!("replay.spec.ts:{fill_line}:")),
        "the replay did not fail at line {fill_line}:\n{output}"
    );
    site.stop().await;
}

// What the agent types through the gateway (planted: no export may hold them).
const AGENT_USER: &str = "ada.replay@example.test";
const AGENT_PASSWORD: &str = "Repl4y-Gateway-Passw0rd";
const AGENT_OTP: &str = "615284";

fn login_site() -> HashMap<&'static str, Route> {
    let script = r#"<script>
document.getElementById('f').addEventListener('submit', (e) => {
  e.preventDefault();
  const ok = document.getElementById('user').value.length > 0
    && document.getElementById('password').value.length > 0
    && document.getElementById('otp').value.length > 0;
  location.href = ok ? '/welcome' : '/refused';
});
</script>"#;
    let login = format!("<!doctype html><title>Sign in</title>\n{SIGN_IN_FORM}\n{script}");
    let mut r = HashMap::new();
    r.insert("/login", Route::ok("text/html", login));
    r.insert(
        "/welcome",
        Route::ok(
            "text/html",
            "<!doctype html><title>Welcome</title><h1>Welcome back</h1>",
        ),
    );
    r.insert(
        "/refused",
        Route::ok("text/html", "<!doctype html><title>Refused</title>"),
    );
    r
}

/// The MCP server the gateway wraps, and how an agent signs in with its tools.
#[derive(Clone, Copy, Debug)]
enum Server {
    ChromeDevtools,
    Playwright,
}

#[tokio::test]
async fn a_chrome_devtools_mcp_runs_fill_form_exports_to_three_fills_that_replay_green() {
    gateway_run_replays(Server::ChromeDevtools).await;
}

#[tokio::test]
async fn a_playwright_mcp_runs_fill_form_exports_to_three_fills_that_replay_green() {
    gateway_run_replays(Server::Playwright).await;
}

async fn gateway_run_replays(server: Server) {
    let site = Site::start(login_site()).await;
    let scratch = Scratch::new();
    let output = tempfile::tempdir().expect("output dir");
    let mut args = vec!["--".to_owned()];
    args.extend(match server {
        Server::ChromeDevtools => chrome_devtools_mcp(),
        Server::Playwright => playwright_mcp(output.path()),
    });
    let gw = McpGateway::spawn(&args, &[("TMPDIR", scratch.path().as_os_str())]).await;
    gw.call(
        "evidence_register_secret",
        json!({"name": "ACCOUNT_PASSWORD", "value": AGENT_PASSWORD}),
    )
    .await;
    let url = format!("{}/login", site.origin);
    let (navigate, snapshot, fill, click, wait) = match server {
        Server::ChromeDevtools => (
            "navigate_page",
            "take_snapshot",
            "fill_form",
            "click",
            "wait_for",
        ),
        Server::Playwright => (
            "browser_navigate",
            "browser_snapshot",
            "browser_fill_form",
            "browser_click",
            "browser_wait_for",
        ),
    };
    let nav = gw
        .call(
            navigate,
            match server {
                Server::ChromeDevtools => json!({"type": "url", "url": url}),
                Server::Playwright => json!({"url": url}),
            },
        )
        .await;
    assert_ne!(nav.is_error, Some(true), "{}", text_of(&nav));
    let snapshot = text_of(&gw.call(snapshot, json!({})).await);
    let (email, password, otp, sign_in) = (
        element(&snapshot, "textbox \"Email\""),
        element(&snapshot, "textbox \"Password\""),
        element(&snapshot, "textbox \"One-time code\""),
        element(&snapshot, "button \"Sign in\""),
    );
    let fields = match server {
        Server::ChromeDevtools => json!({"elements": [
            {"uid": email, "value": AGENT_USER},
            {"uid": password, "value": AGENT_PASSWORD},
            {"uid": otp, "value": AGENT_OTP}
        ]}),
        Server::Playwright => json!({"fields": [
            {"name": "Email", "type": "textbox", "target": email, "value": AGENT_USER},
            {"name": "Password", "type": "textbox", "target": password, "value": AGENT_PASSWORD},
            {"name": "One-time code", "type": "textbox", "target": otp, "value": AGENT_OTP}
        ]}),
    };
    let filled = gw.call(fill, fields).await;
    assert_ne!(filled.is_error, Some(true), "{}", text_of(&filled));
    let clicked = gw
        .call(
            click,
            match server {
                Server::ChromeDevtools => json!({"uid": sign_in}),
                Server::Playwright => json!({"element": "Sign in button", "target": sign_in}),
            },
        )
        .await;
    assert_ne!(clicked.is_error, Some(true), "{}", text_of(&clicked));
    let welcome = gw
        .call(
            wait,
            match server {
                Server::ChromeDevtools => json!({"text": ["Welcome back"]}),
                Server::Playwright => json!({"text": "Welcome back"}),
            },
        )
        .await;
    assert_ne!(welcome.is_error, Some(true), "{}", text_of(&welcome));

    // The tool's spec and the resource's: the same test.
    let exported = gw.call("evidence_export_test", json!({})).await;
    assert_ne!(exported.is_error, Some(true), "{}", text_of(&exported));
    let spec = text_of(&exported);
    let resource = resource_text(
        &gw.read("evidence://runs/current/replay.spec.ts")
            .await
            .expect("the replay resource"),
    );
    assert_eq!(spec, resource);
    let closed = gw.close().await;
    let run_dir = closed.runs().remove(0);
    for planted in [AGENT_USER, AGENT_PASSWORD, AGENT_OTP] {
        assert!(!leaks(spec.as_bytes(), planted), "{spec}");
    }
    let fills: Vec<&str> = spec.lines().filter(|l| l.contains(".fill(")).collect();
    assert_eq!(fills.len(), 3, "three fields, three fills:\n{spec}");
    assert!(
        fills[1].contains("typed('ACCOUNT_PASSWORD', 'the password typed at step"),
        "the registered secret's name:\n{spec}"
    );
    assert!(spec.contains(&format!("// agent: {fill} (")), "{spec}");

    // Replayed through a relay: green, with the same steps and input types.
    let work = tempfile::tempdir().expect("work dir");
    prepare(work.path(), &spec);
    let replay_evidence = tempfile::tempdir().expect("replay evidence");
    let relay = launch(replay_evidence.path()).await;
    let variables = input_variables(&spec);
    let value = |kind: &str| match kind {
        "email" => AGENT_USER,
        "password" => AGENT_PASSWORD,
        "one-time-code" => AGENT_OTP,
        other => panic!("no {other} field on the page"),
    };
    let endpoint = relay.endpoint.clone();
    let mut env: Vec<(&str, &str)> = variables
        .iter()
        .map(|(kind, name)| (name.as_str(), value(kind)))
        .collect();
    env.push(("BASE_URL", &site.origin));
    env.push(("CDP_RELAY_ENDPOINT", &endpoint));
    let (ok, output) = playwright(work.path(), &env).await;
    assert!(ok, "the replay failed:\n{output}\n{spec}");
    relay.stop().await;
    // The test's page is one it opened; the agent's may have been there already.
    let opened = |mut steps: Vec<String>| {
        if steps.first().map(String::as_str) == Some("Target.createTarget") {
            steps.remove(0);
        }
        steps
    };
    let replayed = steps(&only_run(replay_evidence.path()));
    assert_eq!(
        replayed.first().map(String::as_str),
        Some("Target.createTarget")
    );
    assert_eq!(opened(replayed), opened(steps(&run_dir)), "{spec}");
    scratch.assert_clean();
}

#[tokio::test]
async fn echoed_typing_never_reaches_the_spec_and_its_steps_stay_comments() {
    use cdp_relay_tests::target_pages::typed;
    let (_dir, run_dir) = super::targets::record_targets_run().await;

    let spec = export_spec(&run_dir, &[]);
    for literal in typed::ALL {
        for len in 4..=literal.len() {
            assert!(
                !leaks(spec.as_bytes(), &literal[..len]),
                "typed prefix {:?} in the spec:\n{spec}",
                &literal[..len]
            );
        }
    }
    // The button named after the echo, the heading, and the field whose label held it.
    let echoing: Vec<&str> = spec
        .lines()
        .filter(|l| l.contains("not replayable: the element's name contains typed text"))
        .collect();
    assert_eq!(echoing.len(), 3, "{spec}");
    assert!(
        spec.contains(&format!(
            "await page.getByLabel('Password', {{ exact: true }}).fill(await typed('{}', 'the password typed at step",
            typed::PASSWORD_NAME
        )),
        "{spec}"
    );
}

/// Playwright (`fidelity.mjs`, `scenario`) through a recording relay with its own observer over
/// the shop, the coupon registered by name: the evidence directory (kept while held) and the run.
async fn record_shop(
    site: &LogSite,
    scenario: &str,
    receipt: &Path,
) -> (tempfile::TempDir, PathBuf) {
    let chrome = Chromium::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = cdp_relay::EvidenceSettings {
        root: dir.path().to_path_buf(),
        observe: true,
        ..cdp_relay::EvidenceSettings::default()
    };
    let relay = RelayFixture::start_recording(&chrome.http(), settings).await;
    let put = request_with_body(
        &relay.authority(),
        "PUT",
        &format!("/relay/v1/secrets/{}", shop::COUPON_NAME),
        &[],
        shop::COUPON.as_bytes(),
    )
    .await;
    assert_eq!(put.status, 204, "{}", put.text());
    let cfg = json!({
        "endpoint": relay.endpoint(),
        "site": site.origin,
        "scenario": scenario,
        "colour": shop::COLOUR,
        "file": receipt,
        "coupon": shop::COUPON,
    });
    let run = run_node_client("fidelity.mjs", &cfg.to_string()).await;
    assert!(run.ok, "fidelity.mjs failed:\n{}", run.stderr);
    let summary = relay.stop().await.expect("pipeline summary");
    (dir, summary.run_dir)
}

/// The locator expressions of the spec's steps, in order: what each action is called on (a
/// hover's as `{expr, hover: true}`).
fn locator_expressions(spec: &str) -> Vec<Value> {
    const ACTIONS: [&str; 6] = [
        ".click(",
        ".dblclick(",
        ".hover(",
        ".fill(",
        ".selectOption(",
        ".setInputFiles(",
    ];
    spec.lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("await page.")?;
            let at = ACTIONS.iter().filter_map(|a| l.rfind(a)).max()?;
            let expr = format!("page.{}", &l[..at]);
            Some(if l[at..].starts_with(".hover(") {
                json!({"expr": expr, "hover": true})
            } else {
                Value::String(expr)
            })
        })
        .collect()
}

/// What the shop's server hears when every step is done as Playwright did it.
const SHOP_LOG: [&str; 11] = [
    "select=Blue",
    "file=Zr7-private-receipt.txt&size=23",
    "click=counter",
    "click=counter",
    "dblclick=counter",
    "menu=pricing",
    "tile=1",
    "twin=shadow",
    "deep=1",
    "save=1",
    "apply=21",
];

#[tokio::test]
async fn every_kind_of_step_replays_as_recorded_and_the_server_sees_the_same() {
    let site = LogSite::start(shop_routes()).await;
    let files = tempfile::tempdir().expect("files");
    let receipt = files.path().join("Zr7-private-receipt.txt");
    std::fs::write(&receipt, shop::RECEIPT).expect("receipt");
    let (_evidence, run_dir) = record_shop(&site, "shop", &receipt).await;
    assert_eq!(site.log(), SHOP_LOG, "the recording itself");

    let spec = export_spec(&run_dir, &[]);
    assert!(!spec.contains("not replayable"), "{spec}");
    for planted in [shop::COUPON, "Zr7-private-receipt", shop::RECEIPT] {
        assert!(
            !leaks(spec.as_bytes(), planted),
            "{planted} in the spec:\n{spec}"
        );
    }
    for line in [
        "await page.getByRole('combobox', { name: 'Colour', exact: true }).selectOption({ label: 'Blue' });",
        "await page.getByLabel('Receipt', { exact: true }).setInputFiles(files('FILE_1', 'the file chosen at step ",
        "await page.getByTestId('counter').dblclick();",
        "await page.getByRole('button', { name: 'Products', exact: true }).hover();",
        "await page.getByRole('link', { name: 'Pricing', exact: true }).click();",
        "await page.getByText('Quarterly tile', { exact: true }).click();",
        "await page.locator('#widget-inner > button').click();",
        "await page.locator('#outer').contentFrame().locator('iframe').contentFrame().getByRole('button', { name: 'Deep', exact: true }).click();",
        "await page.getByRole('button', { name: 'Save', exact: true }).click();",
        "await page.getByRole('textbox', { name: 'Coupon', exact: true }).fill(await typed('COUPON_CODE', 'the text typed at step ",
    ] {
        assert!(spec.contains(line), "{line} not in:\n{spec}");
    }

    // Every locator the spec acts on, resolved by Playwright on a fresh shop: one element each,
    // the one the run acted on (the test's marks).
    let exprs = locator_expressions(&spec);
    let chrome = Chromium::start().await;
    let endpoint = format!("http://127.0.0.1:{}", chrome.port());
    let resolved =
        super::targets::resolve(&endpoint, &format!("{}/shop", site.origin), &exprs).await;
    let found: Vec<(u64, Option<String>)> = resolved;
    let expected = [
        "colour", "receipt", "counter", "products", "pricing", "tile", "shadow", "deep", "save",
        "coupon", "apply",
    ];
    assert_eq!(
        found,
        expected
            .iter()
            .map(|c| (1, Some((*c).to_owned())))
            .collect::<Vec<_>>(),
        "{exprs:#?}"
    );
    drop(chrome);

    // Replayed through a relay: green, and the server hears exactly what it heard.
    site.clear();
    let work = tempfile::tempdir().expect("work dir");
    prepare(work.path(), &spec);
    let replay_evidence = tempfile::tempdir().expect("replay evidence");
    let relay = launch(replay_evidence.path()).await;
    let endpoint = relay.endpoint.clone();
    let receipt_path = receipt.to_string_lossy().into_owned();
    let env = [
        ("BASE_URL", site.origin.as_str()),
        ("CDP_RELAY_VAR_COUPON_CODE", shop::COUPON),
        ("CDP_RELAY_VAR_FILE_1", receipt_path.as_str()),
        ("CDP_RELAY_ENDPOINT", endpoint.as_str()),
    ];
    let (ok, output) = playwright(work.path(), &env).await;
    assert!(ok, "the replay failed:\n{output}\n{spec}");
    relay.stop().await;
    assert_eq!(
        site.log(),
        SHOP_LOG,
        "the replay did something else:\n{spec}"
    );

    // The replay's own run names the coupon's variable (registered there before the fill) and
    // holds its value nowhere.
    let replay_run = only_run(replay_evidence.path());
    let journal = std::fs::read_to_string(replay_run.join("actions.jsonl")).expect("journal");
    let typing: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("record"))
        .filter(|r| r["payload"]["method"] == "type")
        .collect();
    assert_eq!(typing.len(), 1, "{journal}");
    assert_eq!(typing[0]["payload"]["input"]["variable"], shop::COUPON_NAME);
    for (path, bytes) in cdp_relay_tests::files::all_files(&replay_run) {
        assert!(!leaks(&bytes, shop::COUPON), "the coupon in {path}");
    }
}

#[tokio::test]
async fn a_step_that_cannot_be_replayed_fails_the_test_there_unless_gaps_are_allowed() {
    let site = LogSite::start(shop_routes()).await;
    let files = tempfile::tempdir().expect("files");
    let receipt = files.path().join("unused.txt");
    let (_evidence, run_dir) = record_shop(&site, "gaps", &receipt).await;
    assert_eq!(site.log(), ["first=1", "plain=1", "card=1", "after=1"]);

    let spec = export_spec(&run_dir, &[]);
    let no_locator = "no test id, role and name, label, placeholder, text or short CSS path picks out the element alone";
    let generated = "no test id, role and name, label, placeholder or text picks out the element alone, and its id or class looks generated";
    let gaps: Vec<&str> = spec
        .lines()
        .filter(|l| l.contains(": not replayable: "))
        .collect();
    assert_eq!(gaps.len(), 2, "{spec}");
    assert!(gaps[0].contains(no_locator), "{spec}");
    assert!(gaps[1].contains(generated), "{spec}");
    let gap_line = spec
        .lines()
        .position(|l| l.trim_start().starts_with("gap('step "))
        .expect("the first gap's call")
        + 1;
    assert!(spec.lines().nth(gap_line - 1).unwrap().contains(no_locator));

    // Without --allow-gaps: the test fails at the first gap, saying why; nothing after it ran.
    site.clear();
    let work = tempfile::tempdir().expect("work dir");
    prepare(work.path(), &spec);
    let env = [("BASE_URL", site.origin.as_str())];
    let (ok, output) = playwright(work.path(), &env).await;
    assert!(
        !ok,
        "the replay passed over a step it could not take:\n{output}"
    );
    assert!(
        output.contains("Error: not replayable: step ") && output.contains(no_locator),
        "{output}"
    );
    assert!(
        output.contains(&format!("replay.spec.ts:{gap_line}:")),
        "the replay did not fail at line {gap_line}:\n{output}\n{spec}"
    );
    assert_eq!(site.log(), ["first=1"]);

    // With --allow-gaps: fixme at the first gap (skipped, not passed), nothing after it ran.
    site.clear();
    let spec = export_spec(&run_dir, &["--allow-gaps"]);
    let fixme = spec
        .lines()
        .find(|l| l.trim_start().starts_with("test.fixme(true, 'step "))
        .expect("a fixme");
    assert!(
        fixme.contains(&format!("cannot be replayed: {no_locator}")),
        "{spec}"
    );
    let work = tempfile::tempdir().expect("work dir");
    prepare(work.path(), &spec);
    let (ok, output) = playwright(work.path(), &env).await;
    assert!(ok, "a fixme replay is not a failure:\n{output}");
    assert!(output.contains("1 skipped"), "{output}");
    assert!(!output.contains("1 passed"), "{output}");
    assert_eq!(site.log(), ["first=1"]);
}
