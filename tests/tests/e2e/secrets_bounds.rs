//! The secrets API is bounded: a secret over `MAX_SECRET_BYTES` gets a one-line
//! 413, the secret after `MAX_SECRETS` a one-line 409, neither echoes the literal; registering
//! many secrets leaves the relay's memory flat and every registered literal masked in the run.

use cdp_relay_tests::files::{all_files, leaks};
use cdp_relay_tests::http::request_with_body;
use cdp_relay_tests::site::{Route, Site};
use cdp_relay_tests::{rss_kib, within, Chromium, RelayProcess};
use cdp_sanitize::{MAX_SECRETS, MAX_SECRET_BYTES};
use std::collections::HashMap;

/// A unique secret of `len` bytes, `i` spelled into its start.
fn secret(i: usize, len: usize) -> String {
    let mut s = format!("S3cr3t-{i:05}-");
    let fill = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut x = i.wrapping_mul(2_654_435_761) | 1;
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push(char::from(fill[x % fill.len()]));
    }
    s
}

#[tokio::test]
async fn secrets_are_bounded_in_size_and_number() {
    within("secrets bounds", async {
        let chrome = Chromium::start().await;
        let evidence = tempfile::tempdir().expect("tempdir");
        let relay = RelayProcess::serve(
            &chrome.http(),
            &[
                "--evidence-dir",
                &evidence.path().to_string_lossy(),
                "--observe",
            ],
        )
        .await;
        let auth = relay.authority();
        let put = |name: String, body: String| {
            let auth = auth.clone();
            async move {
                request_with_body(
                    &auth,
                    "PUT",
                    &format!("/relay/v1/secrets/{name}"),
                    &[],
                    body.as_bytes(),
                )
                .await
            }
        };

        // One byte too many: refused before it is read whole, with the limit, on one line.
        let big = secret(0, MAX_SECRET_BYTES + 1);
        let r = put("BIG".into(), big.clone()).await;
        assert_eq!(r.status, 413, "{}", r.text());
        let msg = r.text();
        assert_eq!(msg.trim_end().lines().count(), 1, "{msg}");
        assert!(msg.contains(&MAX_SECRET_BYTES.to_string()), "{msg}");
        assert!(!msg.contains(&big[..32]), "{msg}");

        let rss_before = rss_kib(relay.pid());
        let mut literals = Vec::new();
        for i in 1..=MAX_SECRETS {
            // Every size up to the limit, the limit itself included.
            let len = if i == MAX_SECRETS {
                MAX_SECRET_BYTES
            } else {
                64 + i * 31
            };
            let literal = secret(i, len);
            let r = put(format!("S{i}"), literal.clone()).await;
            assert_eq!(r.status, 204, "secret {i}: {}", r.text());
            literals.push(literal);
        }
        let rss_after = rss_kib(relay.pid());
        let over = secret(MAX_SECRETS + 1, 64);
        let r = put("ONE_MORE".into(), over.clone()).await;
        assert_eq!(r.status, 409, "{}", r.text());
        let msg = r.text();
        assert_eq!(msg.trim_end().lines().count(), 1, "{msg}");
        assert!(
            msg.contains("ONE_MORE") && msg.contains(&MAX_SECRETS.to_string()),
            "{msg}"
        );
        assert!(!msg.contains(&over[..16]), "{msg}");
        // Registering the same literal again is not a new secret: still accepted.
        assert_eq!(put("S1".into(), literals[0].clone()).await.status, 204);
        // 256 secrets (about 1.2 MiB of literals, four spellings each) cost a few MiB, not the
        // hundreds a rebuilt automaton did.
        assert!(
            rss_after < rss_before + 48 * 1024,
            "RSS grew from {rss_before} KiB to {rss_after} KiB"
        );

        // Every registered literal is masked in what the run records: a page logs them all.
        let script: String = literals
            .iter()
            .step_by(17)
            .map(|l| format!("console.error('leak {l}');"))
            .collect();
        let site = Site::start(HashMap::from([(
            "/log",
            Route::ok(
                "text/html",
                format!("<!doctype html><script>{script}</script>"),
            ),
        )]))
        .await;
        let created = request_with_body(
            &auth,
            "PUT",
            &format!("/json/new?{}/log", site.origin),
            &[],
            b"",
        )
        .await;
        assert_eq!(created.status, 200, "{}", created.text());
        // The observer records the page's console (it replays what was logged before it
        // attached); wait until every line is in the journal.
        let logged = literals.iter().step_by(17).count();
        loop {
            let journal: String = all_files(evidence.path())
                .iter()
                .filter(|(p, _)| p.ends_with("actions.jsonl"))
                .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
                .collect();
            if journal.matches("leak ${S").count() >= logged {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let stderr = relay.stop().await;
        let files = all_files(evidence.path());
        for (i, literal) in literals.iter().enumerate() {
            for (path, bytes) in &files {
                assert!(!leaks(bytes, literal), "secret S{} in {path}", i + 1);
            }
            assert!(
                !stderr.contains(literal.as_str()),
                "secret S{} in stderr",
                i + 1
            );
        }
        assert!(!stderr.contains(&big[..32]) && !stderr.contains(&over[..16]));
    })
    .await;
}
