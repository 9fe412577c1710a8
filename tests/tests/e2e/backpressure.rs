//! Backpressure, not buffering: a client that stops reading stalls the browser's writes through
//! TCP, and the relay's memory stays bounded while it does. Then every message still arrives.

use cdp_relay_tests::cdp::connect;
use cdp_relay_tests::fake::{FakeUpstream, HttpMode, Script};
use cdp_relay_tests::{rss_kib, within, RelayProcess};
use futures_util::StreamExt;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

const MESSAGE: usize = 1024 * 1024;

#[tokio::test]
async fn slow_reader_slows_the_writer_and_memory_stays_bounded() {
    within("backpressure", async {
        let fake = FakeUpstream::start(HttpMode::DevTools, Script::Flood(MESSAGE)).await;
        let relay = RelayProcess::serve(&fake.http(), &[]).await;
        let pid = relay.child.id().expect("pid");
        let baseline = rss_kib(pid);
        let mut ws = connect(
            &format!("ws://{}/devtools/page/FLOOD", relay.authority()),
            &[],
        )
        .await
        .expect("connect");

        // The flood stalls once socket buffers and the one in-flight message are full. "Stalled"
        // means no progress over several observations; if the relay buffered instead, the flood
        // would keep going until memory ran out and this loop would time out.
        let limit = 96 * MESSAGE as u64;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut last = u64::MAX;
        let mut unchanged = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        while unchanged < 10 {
            tick.tick().await;
            let now = fake.flooded.load(Ordering::Relaxed);
            assert!(
                now < limit,
                "the browser kept writing ({} MiB) to a client that reads nothing",
                now >> 20
            );
            assert!(
                tokio::time::Instant::now() < deadline,
                "the flood never stalled ({} MiB written)",
                now >> 20
            );
            if now == last {
                unchanged += 1;
            } else {
                unchanged = 0;
                last = now;
            }
        }
        let stalled_at = last;
        let rss = rss_kib(pid);
        assert!(
            stalled_at < limit,
            "the browser kept writing {} MiB to a client that reads nothing",
            stalled_at >> 20
        );
        assert!(
            rss < baseline + 64 * 1024,
            "relay memory grew from {baseline} KiB to {rss} KiB while stalled"
        );

        // Reading resumes the flow; everything written so far arrives intact.
        let mut received = 0u64;
        while received < stalled_at + 4 * MESSAGE as u64 {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    assert_eq!(t.len(), MESSAGE);
                    received += t.len() as u64;
                }
                other => panic!("flood interrupted: {other:?}"),
            }
        }
        assert!(fake.flooded.load(Ordering::Relaxed) > stalled_at);
        eprintln!(
            "stalled after {} MiB written; relay RSS {} KiB (baseline {} KiB)",
            stalled_at >> 20,
            rss,
            baseline
        );
    })
    .await;
}
