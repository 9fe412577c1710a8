//! The echo race: a page echoes its field into console errors,
//! warnings and its title on every input event (and on every change of its `value`
//! attribute), with the relay's own observer on, so each echo reaches the relay twice — on the
//! client's connection and on the observer's — racing the keystroke that caused it. Each client
//! types 200+ distinct values, one burst each: Playwright (`fill`, `type`,
//! `pressSequentially`), Puppeteer (`type`), and a raw CDP client (`Input.insertText`,
//! `dispatchKeyEvent` with text and with `char` events, and every spelling the relay used to
//! miss). Then every byte of the run directory and of the relay's stderr is searched: no typed
//! value, nor any prefix of one longer than the documented three characters, may be there.

use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{clients_dir, within, Chromium, RelayProcess};
use serde_json::json;
use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

/// Bursts per client.
const BURSTS: usize = 200;

/// The longest prefix of a typed value the documented limit lets through (a per-keystroke echo
/// before the fourth character).
const LEAKED_PREFIX: usize = 3;

const PAGE: &str = r#"<!doctype html><title>Race</title>
<input id="f" autocomplete="off">
<script>
const f = document.getElementById('f');
const echo = (what, v) => {
  console.error(what + ' ' + v);
  console.warn(JSON.stringify({ field: 'f', value: v }));
  document.title = 'T ' + v;
  f.dataset.last = v;
};
f.addEventListener('input', () => echo('live', f.value));
new MutationObserver(() => {
  const v = f.getAttribute('value');
  if (v) echo('attr', v);
}).observe(f, { attributes: true, attributeFilter: ['value'] });
</script>"#;

/// `BURSTS` distinct values: letters and digits, none a prefix of another, no four characters
/// in common with the page's own words.
fn values(client: &str) -> Vec<String> {
    let seed = client
        .bytes()
        .fold(0x51u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..BURSTS)
        .map(|i| {
            let tail: String = (0..6)
                .map(|_| char::from(b"BCDFGHJKMNPQRSVWXZ"[(next() % 18) as usize]))
                .collect();
            format!("Zq{i:03}{tail}")
        })
        .collect()
}

/// Runs `echo_race.mjs` for one client (its own time bound: 200 bursts take up to ~90 s on a
/// loaded machine; ten times that, a hang detector).
async fn drive(client: &str, endpoint: &str, site: &str, values: &[String]) -> serde_json::Value {
    let cfg = json!({ "endpoint": endpoint, "site": site, "client": client, "values": values });
    let child = tokio::process::Command::new("node")
        .arg("echo_race.mjs")
        .arg(cfg.to_string())
        .current_dir(clients_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node");
    let out = tokio::time::timeout(Duration::from_secs(900), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{client}: echo_race.mjs did not finish in 900 s"))
        .expect("node output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{client}: echo_race.mjs failed:\n{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("a JSON report")
}

async fn race(client: &str) {
    let site = Site::start(HashMap::from([("/race", Route::ok("text/html", PAGE))])).await;
    let chrome = Chromium::start().await;
    let evidence = tempfile::tempdir().expect("tempdir");
    let relay = within(
        "relay start",
        RelayProcess::serve(
            &chrome.http(),
            &[
                "--evidence-dir",
                &evidence.path().to_string_lossy(),
                "--observe",
            ],
        ),
    )
    .await;
    let values = values(client);
    let report = drive(client, &relay.endpoint, &site.origin, &values).await;
    assert_eq!(report["typed"], BURSTS, "{report}");
    let stderr = within("relay stop", relay.stop()).await;

    let files = all_files(evidence.path());
    let journal: String = files
        .iter()
        .filter(|(p, _)| p.ends_with("actions.jsonl"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    // The echoes were recorded, masked: the test saw the race it means to test.
    let masked = journal.matches(" ${TYPED_").count();
    assert!(
        masked >= BURSTS,
        "{client}: only {masked} masked echoes recorded"
    );
    let steps = journal.matches(r#""method":"type""#).count();
    assert!(
        steps >= BURSTS,
        "{client}: only {steps} typing steps recorded"
    );
    assert!(files.iter().any(|(p, _)| p.ends_with("report.html")));
    for value in &values {
        let prefix = &value[..=LEAKED_PREFIX];
        for (path, bytes) in &files {
            assert!(
                !leaks(bytes, prefix),
                "{client}: {prefix:?} (of typed {value:?}) in {path}"
            );
        }
        assert!(!stderr.contains(prefix), "{client}: {prefix:?} in stderr");
    }
    eprintln!("{client}: {report} — {masked} masked echoes, {steps} typing steps");
}

#[tokio::test]
async fn playwright_fill_type_and_press_sequentially() {
    race("playwright").await;
}

#[tokio::test]
async fn puppeteer_type() {
    race("puppeteer").await;
}

#[tokio::test]
async fn raw_cdp_in_every_spelling() {
    race("cdp").await;
}
