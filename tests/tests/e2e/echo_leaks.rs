//! A page that fights back (issue: typed secrets in echoes). It echoes what is typed, keystroke by
//! keystroke, into console errors and warnings; logs credentials right after the words that name
//! them (`code`, `password`, `Bearer`, `access_token`) were typed; and dumps HTML with CSRF tokens.
//! Driven with Playwright `fill` and `type` and Puppeteer `type`, then every byte of the run
//! directory is searched: no typed literal (nor any prefix of it of four characters or more) and
//! no planted value may be there.

use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::http::request_with_body;
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{run_node_client, within, Chromium, RelayProcess};
use serde_json::json;
use std::collections::HashMap;

const FILLED: &str = "Qx9FillSecretAAA1";
const TYPED: &str = "Zw4TypeSecretBBB2";
const PUPPETEER: &str = "Kj2PuppetSecretCCC3";
const PLANTED: [&str; 8] = [
    "OAUTHLEAK999",
    "PWLEAK777",
    "TOKENLEAK555",
    "BEARERLEAK333",
    "CSRFDJANGO0a1b2c3d4e5f",
    "CSRFRAILS9z8y7x6w5v4u",
    "CSRFSPRING5e6f7g8h9i0j",
    "CSRFASPNET1k2l3m4n5o6p",
];

fn routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert(
        "/echo",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Echo</title>
<input id="a"><input id="b">
<script>
for (const id of ['a', 'b']) {
  document.getElementById(id).addEventListener('input', (e) => {
    console.error('live ' + e.target.value);
    console.warn(JSON.stringify({ field: id, value: e.target.value }));
  });
}
</script>"#,
        ),
    );
    r.insert(
        "/leaks",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Search</title>
<input id="search"><button id="leak">go</button>
<script>
document.getElementById('leak').addEventListener('click', () => {
  console.error('redirected to /cb?code=OAUTHLEAK999&state=x');
  console.error('form password=PWLEAK777');
  console.error(JSON.stringify({ access_token: 'TOKENLEAK555' }));
  console.error('Authorization: Bearer BEARERLEAK333');
  window.leaked = true;
});
</script>"#,
        ),
    );
    r.insert(
        "/csrf",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Forms</title>
<meta name="csrf-token" content="CSRFRAILS9z8y7x6w5v4u">
<form><input type=hidden name=csrfmiddlewaretoken value=CSRFDJANGO0a1b2c3d4e5f></form>
<form><input type="hidden" value="CSRFSPRING5e6f7g8h9i0j" name="_csrf"></form>
<form><input name='__RequestVerificationToken' type='hidden' value='CSRFASPNET1k2l3m4n5o6p'></form>
<script>console.error(document.documentElement.outerHTML); window.dumped = true;</script>"#,
        ),
    );
    r
}

#[tokio::test]
async fn a_page_that_echoes_what_is_typed_leaks_nothing() {
    within("echo leaks", async {
        let site = Site::start(routes()).await;
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().expect("tempdir");
        let relay = RelayProcess::serve(
            &chrome.http(),
            &["--evidence-dir", &evidence.path().to_string_lossy()],
        )
        .await;

        // A secret too short to mean anything is refused, with a reason, never echoed.
        let short = request_with_body(
            &relay.authority(),
            "PUT",
            "/relay/v1/secrets/SHORT",
            &[],
            b"a",
        )
        .await;
        assert_eq!(short.status, 400, "{}", short.text());
        assert!(short.text().contains("too short"), "{}", short.text());
        let ok = request_with_body(
            &relay.authority(),
            "PUT",
            "/relay/v1/secrets/LONG_ENOUGH",
            &[],
            b"Another-Secret-9",
        )
        .await;
        assert_eq!(ok.status, 204, "{}", ok.text());

        let cfg = json!({
            "endpoint": relay.endpoint,
            "site": site.origin,
            "fill": FILLED,
            "type": TYPED,
            "puppeteer": PUPPETEER,
            "words": ["code", "password", "Bearer", "access_token"],
        });
        let run = run_node_client("echo.mjs", &cfg.to_string()).await;
        assert!(run.ok, "echo.mjs failed:\n{}", run.stderr);
        let stderr = relay.stop().await;

        let files = all_files(evidence.path());
        let journal: String = files
            .iter()
            .filter(|(p, _)| p.ends_with("actions.jsonl"))
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect();
        // The echoes were recorded (masked), so the test saw what it means to test.
        assert!(journal.matches("live ${TYPED_").count() >= 10, "{journal}");
        assert!(journal.contains("redirected to /cb"), "{journal}");
        for typed in [FILLED, TYPED, PUPPETEER] {
            for len in 4..=typed.len() {
                let prefix = &typed[..len];
                for (path, bytes) in &files {
                    assert!(!leaks(bytes, prefix), "typed prefix {prefix:?} in {path}");
                }
                assert!(
                    !stderr.contains(prefix),
                    "typed prefix {prefix:?} in stderr"
                );
            }
        }
        for planted in PLANTED {
            for (path, bytes) in &files {
                assert!(!leaks(bytes, planted), "{planted} in {path}");
            }
        }
    })
    .await;
}
