//! Stable targets and named inputs: a click's or typing step's `payload.target` (the element's
//! locator, as Playwright's code generator would pick it, taken by the relay's page agent) and a
//! typing step's `payload.input.variable` (a registered secret's name, else `TYPED_<n>`).
//!
//! Playwright clicks and fills through the relay (with its own observer) on a page with one
//! element per locator kind, and on a page that echoes the typed text into a button's name, a
//! label and a heading: the echoing steps are not replayable, and no file of the run holds a
//! typed literal. The agent's choice of locator (order, uniqueness across shadow roots, frames
//! two levels down, hidden text, generated ids, retargeting) is checked on its own, in a page,
//! case by case, and every locator it picks is resolved by Playwright itself, written as the
//! export writes it: it finds exactly one element, the one the agent described.

use cdp_evidence::{parse_journal, StoredLocator, StoredRecord};
use cdp_relay::EvidenceSettings;
use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::http::request_with_body;
use cdp_relay_tests::site::Site;
use cdp_relay_tests::target_pages::{target_routes, typed};
use cdp_relay_tests::{run_node_client, within, Chromium, RelayFixture};
use serde_json::{json, Value};

/// The page agent's source, as the relay installs it.
const AGENT_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../capture/src/direct/agent.js"
);

/// The records of `method` in the format's order (`startedAt`, then `actionId`).
fn steps<'a>(records: &'a [StoredRecord], method: &str) -> Vec<&'a StoredRecord> {
    let mut out: Vec<&StoredRecord> = records
        .iter()
        .filter(|r| r.kind == "action" && r.payload["method"] == method)
        .collect();
    out.sort_by(|a, b| (&a.started_at, &a.action_id).cmp(&(&b.started_at, &b.action_id)));
    out
}

/// Playwright (`targets.mjs`) through a recording relay with its own observer over the target
/// pages, the password registered by name: the evidence directory (kept while held) and the run.
pub(crate) async fn record_targets_run() -> (tempfile::TempDir, std::path::PathBuf) {
    let site = Site::start(target_routes()).await;
    let chrome = Chromium::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = EvidenceSettings {
        root: dir.path().to_path_buf(),
        observe: true,
        ..EvidenceSettings::default()
    };
    let relay = RelayFixture::start_recording(&chrome.http(), settings).await;
    let put = request_with_body(
        &relay.authority(),
        "PUT",
        &format!("/relay/v1/secrets/{}", typed::PASSWORD_NAME),
        &[],
        typed::PASSWORD.as_bytes(),
    )
    .await;
    assert_eq!(put.status, 204, "{}", put.text());

    let cfg = json!({
        "endpoint": relay.endpoint(),
        "site": site.origin,
        "email": typed::EMAIL,
        "password": typed::PASSWORD,
        "message": typed::MESSAGE,
        "nick": typed::NICK,
        "echoed": typed::ECHOED,
        "second": typed::SECOND,
    });
    let run = run_node_client("targets.mjs", &cfg.to_string()).await;
    assert!(run.ok, "targets.mjs failed:\n{}", run.stderr);
    let summary = relay.stop().await.expect("pipeline summary");
    (dir, summary.run_dir)
}

#[tokio::test]
async fn clicks_and_fills_record_their_locators_and_echoes_never_come_back_through_one() {
    within("targets", async {
        let (_dir, run_dir) = record_targets_run().await;
        let bytes = std::fs::read(run_dir.join("actions.jsonl")).expect("journal");
        let journal = parse_journal(&bytes);
        assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
        let records = journal.records;

        let not_replayable =
            json!({"replayable": false, "why": "the element's name contains typed text"});
        let clicks: Vec<Value> = steps(&records, "click")
            .iter()
            .map(|r| r.payload["target"].clone())
            .collect();
        assert_eq!(
            clicks,
            [
                json!({"testId": "save"}),
                json!({"role": "button", "name": "Sign in", "exact": true}),
                json!({"text": "Tile", "exact": true}),
                json!({"role": "button", "name": "Inside", "exact": true, "frames": ["#inner"]}),
                // The button's name, then the heading, held the echoed text.
                not_replayable.clone(),
                not_replayable.clone(),
            ],
            "{records:#?}"
        );
        let typing = steps(&records, "type");
        let targets: Vec<Value> = typing.iter().map(|r| r.payload["target"].clone()).collect();
        assert_eq!(
            targets,
            [
                json!({"role": "textbox", "name": "Email", "exact": true}),
                json!({"label": "Password", "exact": true}),
                json!({"placeholder": "Your message", "exact": true}),
                json!({"css": "input[name=\"nickname\"]"}),
                // Taken as typing started: before the page echoed it anywhere.
                json!({"role": "textbox", "name": "Your name", "exact": true}),
                // Its label held the text typed before.
                not_replayable,
            ],
            "{records:#?}"
        );
        let variables: Vec<&str> = typing
            .iter()
            .map(|r| r.payload["input"]["variable"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(variables[1], typed::PASSWORD_NAME, "{variables:?}");
        for (i, v) in variables.iter().enumerate() {
            if i != 1 {
                assert!(v.starts_with("TYPED_"), "{variables:?}");
            }
        }
        let mut distinct = variables.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), variables.len(), "{variables:?}");
        // The page's echo was recorded, masked: the test saw what it means to test.
        assert!(
            String::from_utf8_lossy(&bytes).contains("greeted ${TYPED_"),
            "no echo was recorded"
        );

        for literal in typed::ALL {
            for len in 4..=literal.len() {
                let prefix = &literal[..len];
                for (path, bytes) in all_files(&run_dir) {
                    assert!(!leaks(&bytes, prefix), "typed prefix {prefix:?} in {path}");
                }
            }
        }
    })
    .await;
}

/// The agent's locators of `url`'s elements marked `data-case` (any frame, any open shadow
/// root), taken through Playwright on the browser at `endpoint`.
async fn agent_locators(endpoint: &str, url: &str) -> Value {
    let cfg = json!({"mode": "locate", "endpoint": endpoint, "url": url, "agent": AGENT_PATH});
    let run = run_node_client("locators.mjs", &cfg.to_string()).await;
    assert!(run.ok, "locators.mjs locate failed:\n{}", run.stderr);
    run.report.expect("a report")["cases"].clone()
}

/// Each locator expression (or `{expr, hover: true}`, hovered once found) resolved by
/// Playwright, in order, on a fresh load of `url`: (elements found, the `data-case` or
/// `data-aim` of the one found).
pub(crate) async fn resolve(
    endpoint: &str,
    url: &str,
    exprs: &[Value],
) -> Vec<(u64, Option<String>)> {
    let cfg = json!({"mode": "resolve", "endpoint": endpoint, "url": url, "exprs": exprs});
    let run = run_node_client("locators.mjs", &cfg.to_string()).await;
    assert!(run.ok, "locators.mjs resolve failed:\n{}", run.stderr);
    run.report.expect("a report")["resolved"]
        .as_array()
        .expect("resolved")
        .iter()
        .map(|r| {
            (
                r["count"].as_u64().unwrap_or(0),
                r["case"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// The agent's choice, element by element of `/order` (each marked `data-case`), and each choice
/// resolved by Playwright as the export writes it.
#[tokio::test]
async fn the_agent_picks_the_first_locator_that_is_unique_in_codegen_order() {
    within("locator order", async {
        let site = Site::start(target_routes()).await;
        let chrome = Chromium::start().await;
        let endpoint = format!("http://127.0.0.1:{}", chrome.port());
        let url = format!("{}/order", site.origin);
        let cases = agent_locators(&endpoint, &url).await;
        let long = cases["long-name-cut-at-a-word"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            long.chars().count() <= 80 && long.starts_with("one two") && !long.ends_with(' '),
            "{cases:#}"
        );
        assert!(
            "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
                .starts_with(&long),
            "{long}"
        );
        let expected = json!({
            "testid": {"testId": "t1"},
            "role-when-testid-repeats": {"role": "button", "name": "Twin two", "exact": true},
            "exact-when-another-link-holds-the-name": {"role": "link", "name": "Read more", "exact": true},
            "retarget-to-button": {"role": "button", "name": "Icon Delete", "exact": true},
            "textbox-named-by-wrapping-label": {"role": "textbox", "name": "Phone", "exact": true},
            "label-when-no-role": {"label": "Secret word", "exact": true},
            "role-ignores-hidden": {"role": "button", "name": "Hidden", "exact": true},
            "placeholder-when-no-name": {"placeholder": "Search", "exact": true},
            "css-by-name": {"css": "input[name=\"q\"]"},
            "nothing-unique": {"why": "no-locator"},
            // Cut: matched as a substring.
            "long-name-cut-at-a-word": {"role": "button", "name": long},
            "label-stands-for-its-control": {"role": "checkbox", "name": "Remember me", "exact": true},
            "explicit-role": {"role": "button", "name": "Custom action", "exact": true},
            // Another button's name, from its child's aria-label, holds this one's.
            "exact-when-a-childs-label-holds-the-name": {"role": "button", "name": "Close", "exact": true},
            // Text Playwright leaves out of the name (display:none) is left out.
            "name-leaves-hidden-text-out": {"role": "button", "name": "Archive", "exact": true},
            "exact-when-a-longer-name-holds-it": {"role": "button", "name": "Edit", "exact": true},
            // Its id (r-7f3a9c) and class (CSS-module) look generated: never used.
            "text-when-the-id-looks-generated": {"text": "Quarterly tile", "exact": true},
            "nothing-but-a-generated-id": {"why": "generated-id"},
            // A twin outside the shadow root shares the name: Playwright counts both.
            "css-when-a-shadow-twin-shares-the-name": {"css": "#widget-inner > button:nth-of-type(1)"},
            "testid-inside-a-shadow-root": {"testId": "in-shadow"},
            "two-frames-down": {"role": "button", "name": "Deep", "exact": true, "frames": ["#outer", "iframe"]},
        });
        assert_eq!(cases, expected, "{cases:#}");

        // Every locator the agent picked, written as the export writes it, resolved by
        // Playwright: exactly one element, the one the agent described.
        let mut names = Vec::new();
        let mut exprs = Vec::new();
        for (name, locator) in cases.as_object().expect("cases") {
            let stored: StoredLocator = serde_json::from_value(locator.clone()).expect("locator");
            if let Some(expr) = cdp_report::replay::playwright_locator(&stored) {
                names.push(name.clone());
                exprs.push(Value::String(expr));
            }
        }
        assert_eq!(exprs.len(), expected.as_object().unwrap().len() - 2);
        let resolved = resolve(&endpoint, &url, &exprs).await;
        for ((name, expr), (count, found)) in names.iter().zip(&exprs).zip(resolved) {
            assert_eq!(count, 1, "{name}: {expr} finds {count} elements");
            assert_eq!(found.as_deref(), Some(name.as_str()), "{name}: {expr}");
        }
    })
    .await;
}
