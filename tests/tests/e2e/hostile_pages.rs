//! The screenshot veto against pages that behave like real single-page apps and login forms
//! through `cdp-relay serve` with and without the observer, with
//! Playwright (fill, pressSequentially), Puppeteer (type) and raw CDP.
//!
//! The pages draw typed text large and magenta, and nothing else magenta (`pages.rs`,
//! `hostile_routes`). Every kept picture of a run — the observer's frames, the clients'
//! screenshots — is decoded in Chromium and its magenta pixels counted: a kept picture that
//! shows a field's content has hundreds, one that does not has none. A control picture of the
//! same page with the secrets showing, taken straight from the browser (never through the
//! relay), must count hundreds, so the check can fail. Every byte of the run directory and the
//! relay's stderr is swept for the typed values as well.

use cdp_evidence::{parse_journal, StoredRecord};
use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::pages::hostile_routes;
use cdp_relay_tests::pixels::magenta_pixels;
use cdp_relay_tests::site::Site;
use cdp_relay_tests::{clients_dir, within, Chromium, RelayProcess};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const CLIENTS: [&str; 4] = ["raw", "pw-fill", "pw-type", "pptr-type"];

/// A control picture showing the secrets has at least this many magenta pixels (a 44 px bold
/// glyph alone has hundreds); a kept picture must have none.
const SHOWS_SECRETS: u64 = 300;

/// `cdp-relay serve` in front of `chrome`, recording into a fresh evidence directory.
async fn serve(chrome: &Chromium, observe: bool) -> (RelayProcess, tempfile::TempDir) {
    let evidence = tempfile::tempdir().expect("tempdir");
    let dir = evidence.path().to_string_lossy().into_owned();
    let mut extra = vec!["-vv", "--evidence-dir", &dir];
    if observe {
        extra.push("--observe");
    }
    let relay = RelayProcess::serve(&chrome.http(), &extra).await;
    if observe {
        cdp_relay_tests::observing(&relay.authority(), 1).await;
    }
    (relay, evidence)
}

/// The one run under `evidence`.
fn run_dir(evidence: &Path) -> PathBuf {
    std::fs::read_dir(evidence.join("runs"))
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run")
}

fn records(run_dir: &Path) -> Vec<StoredRecord> {
    let bytes = std::fs::read(run_dir.join("actions.jsonl")).unwrap_or_default();
    let mut r = parse_journal(&bytes).records;
    r.sort_by(|a, b| (&a.started_at, &a.action_id).cmp(&(&b.started_at, &b.action_id)));
    r
}

fn ms(r: &StoredRecord) -> u64 {
    r.started_at
        .as_deref()
        .and_then(cdp_evidence::time::parse_rfc3339_millis)
        .unwrap_or(0)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// Waits until the observer has decided on a frame (taken or withheld) after `since`.
async fn observer_frame_after(run_dir: &Path, since: u64) {
    within("the observer's frame", async {
        loop {
            let done = records(run_dir)
                .iter()
                .any(|r| r.kind == "action" && r.payload["method"] == "frame" && ms(r) >= since);
            if done {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// Runs `hostile.mjs` with `cfg`; at each `{"wait": …}` it prints, waits for the observer's next
/// frame decision (when `observe`), then lets it go on.
async fn drive(cfg: &Value, evidence: &Path, observe: bool) {
    let mut child = tokio::process::Command::new("node")
        .arg("hostile.mjs")
        .arg(cfg.to_string())
        .current_dir(clients_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut finished = false;
    while let Some(line) = within("hostile.mjs", out.next_line())
        .await
        .expect("stdout")
    {
        println!("  {} ms hostile.mjs: {line}", now_ms() % 1_000_000);
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v.get("wait").is_some() {
            if observe {
                // From when the client acted, not from when its line was read: under load the
                // observer may decide on the frame before (a wait from the read timed out).
                let since = v["since"].as_u64().unwrap_or_else(now_ms);
                observer_frame_after(&run_dir(evidence), since).await;
            }
            stdin.write_all(b"go\n").await.expect("stdin");
        } else if v.get("scenario").is_some() {
            finished = true;
        }
    }
    let status = within("hostile.mjs exit", child.wait_with_output())
        .await
        .expect("exit");
    print!("{}", String::from_utf8_lossy(&status.stderr));
    assert!(
        finished && status.status.success(),
        "hostile.mjs {cfg} failed:\n{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// Every picture the run kept, with the record that names it.
fn kept_pictures(run_dir: &Path, records: &[StoredRecord]) -> Vec<(String, Vec<u8>)> {
    records
        .iter()
        .flat_map(|r| r.artifacts.iter().map(move |a| (r, a)))
        .map(|(r, a)| {
            let bytes = std::fs::read(run_dir.join(a)).expect("artifact");
            (
                format!(
                    "{} at {}",
                    r.payload["method"],
                    r.started_at.as_deref().unwrap_or("-")
                ),
                bytes,
            )
        })
        .collect()
}

/// The kept pictures show no secret, the control does, and no byte of the run or of stderr
/// holds one.
async fn assert_nothing_shows(
    chrome: &Chromium,
    client: &str,
    run_dir: &Path,
    control: &Path,
    stderr: &str,
    secrets: &[&str],
) -> Vec<StoredRecord> {
    let records = records(run_dir);
    let kept = kept_pictures(run_dir, &records);
    let mut images: Vec<Vec<u8>> = kept.iter().map(|(_, b)| b.clone()).collect();
    images.push(std::fs::read(control).expect("the control picture"));
    let counts = magenta_pixels(&format!("127.0.0.1:{}", chrome.port()), &images).await;
    let (control_count, kept_counts) = counts.split_last().expect("counts");
    println!(
        "{client}: {} kept pictures, magenta pixels {kept_counts:?}; control {control_count}; {} stderr lines",
        kept.len(),
        stderr.lines().count()
    );
    assert!(
        *control_count >= SHOWS_SECRETS,
        "{client}: the control picture shows the secrets in {control_count} pixels only: the check could not fail"
    );
    for ((what, _), n) in kept.iter().zip(kept_counts) {
        assert_eq!(
            *n, 0,
            "{client}: a kept picture shows typed text ({n} magenta pixels): {what}"
        );
    }
    for (path, bytes) in all_files(run_dir) {
        for s in secrets {
            assert!(!leaks(&bytes, s), "{client}: a typed secret in {path}");
        }
    }
    for s in secrets {
        let line = cdp_relay_tests::files::log_leak(stderr, s);
        assert!(
            line.is_none(),
            "{client}: a typed secret in stderr: {line:?}"
        );
    }
    records
}

fn screenshots(records: &[StoredRecord]) -> Vec<&StoredRecord> {
    records
        .iter()
        .filter(|r| r.kind == "action" && r.payload["method"] == "Page.captureScreenshot")
        .collect()
}

/// Item 1: after a password typed and revealed and a card number typed, a client's navigation to
/// `#receipt`, to a 204, to a download, and pushState then back replaces no document: every
/// frame and screenshot afterwards is withheld, until a fresh page.
async fn navigations_keep_the_veto(observe: bool) {
    let site = Site::start(hostile_routes()).await;
    let chrome = Chromium::start().await;
    for client in CLIENTS {
        let (relay, evidence) = serve(&chrome, observe).await;
        let password = format!("Pw{}-h0st1le!", client.replace('-', ""));
        let card = "4111111111119731";
        let control = evidence.path().join("control.png");
        let cfg = json!({
            "endpoint": relay.endpoint,
            "direct": chrome.http(),
            "client": client,
            "site": site.origin,
            "scenario": "nav",
            "secrets": {"password": password, "card": card},
            "control": control,
        });
        drive(&cfg, evidence.path(), observe).await;
        println!("  {} ms stopping the relay", now_ms() % 1_000_000);
        let stderr = relay.stop().await;
        println!("  {} ms stopped", now_ms() % 1_000_000);
        let run = run_dir(evidence.path());
        let records =
            assert_nothing_shows(&chrome, client, &run, &control, &stderr, &[&password, card])
                .await;
        let shots = screenshots(&records);
        assert_eq!(shots.len(), 5, "{client}: {shots:#?}");
        for s in &shots[..4] {
            assert_eq!(
                s.payload["detail"]["screenshotWithheld"],
                "typing into a sensitive or unidentified field since the last navigation",
                "{client}: {s:#?}"
            );
        }
        assert_eq!(
            shots[4].artifacts.len(),
            1,
            "{client}: kept after a fresh page: {:#?}",
            shots[4]
        );
        if observe {
            // The observer tried frames of the typed-into document and withheld them.
            let withheld = records
                .iter()
                .filter(|r| {
                    r.payload["method"] == "frame"
                        && r.payload["detail"]["screenshotWithheld"].is_string()
                })
                .count();
            assert!(
                withheld >= 1,
                "{client}: no frame was even tried: {records:#?}"
            );
        }
    }
}

#[tokio::test]
async fn navigations_that_replace_no_document_keep_frames_withheld() {
    Box::pin(navigations_keep_the_veto(true)).await;
}

#[tokio::test]
async fn without_the_observer_a_screenshot_after_a_hash_navigation_is_withheld() {
    Box::pin(navigations_keep_the_veto(false)).await;
}

/// Items 3, 4, 5: six one-digit boxes with `autocomplete=one-time-code` on the first only; boxes
/// named only `aria-label="Digit N"`; a password in `<input type=text name=password>`; a card
/// number in `<input name=card inputmode=numeric>` labelled "Card number"; a field that turns into
/// a password field after three characters and is then revealed. Each is recorded as the
/// sensitive kind it is, never read back, and no kept frame shows it.
#[tokio::test]
async fn fields_the_veto_did_not_know_are_sensitive() {
    Box::pin(async {
        let site = Site::start(hostile_routes()).await;
        let chrome = Chromium::start().await;
        for client in CLIENTS {
            let (relay, evidence) = serve(&chrome, true).await;
            let control = evidence.path().join("control.png");
            let fields = json!([
                {"name": "otp", "selector": "#o1", "secret": "739418", "keys": true, "kind": "one-time-code"},
                {"name": "digits", "selector": "#o1", "secret": "582064", "keys": true, "kind": "one-time-code"},
                {"name": "textpw", "selector": "#f1", "secret": "Tx7-passw0rd-h0st", "kind": "password"},
                {"name": "card", "selector": "#f1", "secret": "5500005555555559", "kind": "payment", "control": true},
                {"name": "flip", "selector": "#f1", "secret": "Fl1pw0rdZq", "reveal": "#show", "kind": "password"},
            ]);
            let cfg = json!({
                "endpoint": relay.endpoint,
                "direct": chrome.http(),
                "client": client,
                "site": site.origin,
                "scenario": "fields",
                "fields": fields,
                "control": control,
            });
            drive(&cfg, evidence.path(), true).await;
            let stderr = relay.stop().await;
            let run = run_dir(evidence.path());
            let secrets: Vec<String> = fields
                .as_array()
                .expect("fields")
                .iter()
                .map(|f| f["secret"].as_str().unwrap_or_default().to_owned())
                .collect();
            let secret_refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
            let records =
                assert_nothing_shows(&chrome, client, &run, &control, &stderr, &secret_refs).await;
            let typed: Vec<&StoredRecord> = records
                .iter()
                .filter(|r| r.kind == "action" && r.payload["method"] == "type")
                .collect();
            let kinds: Vec<&Value> = typed.iter().map(|t| &t.payload["input"]["inputType"]).collect();
            let want: Vec<&Value> = fields.as_array().expect("fields").iter().map(|f| &f["kind"]).collect();
            assert_eq!(kinds, want, "{client}: {:#?}", typed.iter().map(|t| &t.payload).collect::<Vec<_>>());
            for t in &typed {
                assert_eq!(t.payload["verification"]["reason"], "sensitive-field", "{client}: {}", t.payload);
            }
            // A fresh page afterwards is pictured again.
            let shots = screenshots(&records);
            assert_eq!(shots.last().map(|s| s.artifacts.len()), Some(1), "{client}: {shots:#?}");
        }
    })
    .await;
}
