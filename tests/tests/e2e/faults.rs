//! Fault injection with a scripted fake upstream, for what a real Chromium will not do on demand:
//! vanish without a close frame, send an oversized message, answer garbage, use custom close
//! codes, or keep writing to a client that does not read.

use cdp_relay_tests::cdp::{connect, Ws};
use cdp_relay_tests::fake::{FakeUpstream, HttpMode, Script, Seen};
use cdp_relay_tests::http::get;
use cdp_relay_tests::{within, RelayFixture};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

async fn open(relay: &RelayFixture) -> Ws {
    connect(
        &format!("ws://{}/devtools/page/FAKE", relay.authority()),
        &[],
    )
    .await
    .expect("connect through relay")
}

/// Reads until a close frame (returned) or the end of the socket (`None`).
async fn close_of(ws: &mut Ws) -> Option<CloseFrame> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Close(f))) => return f,
            Some(Ok(_)) => {}
            _ => return None,
        }
    }
}

async fn next_seen(fake: &mut FakeUpstream) -> Seen {
    fake.seen.recv().await.expect("fake upstream event")
}

#[tokio::test]
async fn text_and_binary_keep_their_type_and_bytes() {
    within("echo", async {
        let mut fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
        let relay = RelayFixture::start(&fake.http()).await;
        let mut ws = open(&relay).await;
        let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let text = "{\"id\":1,\"method\":\"X\",\"params\":{\"s\":\"é🙂\\u0000\"}}";
        ws.send(Message::text(text)).await.expect("send text");
        ws.send(Message::binary(binary.clone()))
            .await
            .expect("send binary");
        assert!(matches!(next_seen(&mut fake).await, Seen::Upgrade(_)));
        match next_seen(&mut fake).await {
            Seen::Message(Message::Text(t)) => assert_eq!(t.as_str(), text),
            other => panic!("upstream saw {other:?}"),
        }
        match next_seen(&mut fake).await {
            Seen::Message(Message::Binary(b)) => assert_eq!(&b[..], &binary[..]),
            other => panic!("upstream saw {other:?}"),
        }
        match ws.next().await {
            Some(Ok(Message::Text(t))) => assert_eq!(t.as_str(), text),
            other => panic!("client got {other:?}"),
        }
        match ws.next().await {
            Some(Ok(Message::Binary(b))) => assert_eq!(&b[..], &binary[..]),
            other => panic!("client got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn upgrade_request_upstream_is_clean() {
    within("upstream request", async {
        let mut fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
        let relay = RelayFixture::start_with(&fake.http(), |c| {
            c.policy.origins.any = true;
        })
        .await;
        let url = format!("ws://{}/devtools/page/FAKE?x=1", relay.authority());
        let _ws = connect(&url, &[("Origin", "http://app.example")])
            .await
            .expect("connect");
        let Seen::Upgrade(head) = next_seen(&mut fake).await else {
            panic!("expected the upgrade request")
        };
        let first = head.lines().next().unwrap_or_default();
        assert_eq!(first, "GET /devtools/page/FAKE?x=1 HTTP/1.1");
        let port = fake.addr.rsplit(':').next().unwrap_or_default();
        assert!(
            head.contains(&format!("host: 127.0.0.1:{port}\r\n"))
                || head.contains(&format!("Host: 127.0.0.1:{port}\r\n")),
            "{head}"
        );
        assert!(
            !head.to_ascii_lowercase().contains("origin:"),
            "Origin forwarded: {head}"
        );
    })
    .await;
}

#[tokio::test]
async fn close_codes_and_reasons_cross_both_ways() {
    within("close codes", async {
        // Client → browser.
        let mut fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
        let relay = RelayFixture::start(&fake.http()).await;
        let mut ws = open(&relay).await;
        let frame = CloseFrame {
            code: 4001.into(),
            reason: "client says bye".into(),
        };
        ws.send(Message::Close(Some(frame))).await.expect("close");
        assert!(matches!(next_seen(&mut fake).await, Seen::Upgrade(_)));
        match next_seen(&mut fake).await {
            Seen::Close(Some(f)) => {
                assert_eq!(u16::from(f.code), 4001);
                assert_eq!(f.reason.as_str(), "client says bye");
            }
            other => panic!("upstream saw {other:?}"),
        }
        let echoed = close_of(&mut ws).await.expect("close reply");
        assert_eq!(u16::from(echoed.code), 4001);

        // Browser → client.
        let fake = FakeUpstream::start(
            HttpMode::DevTools,
            Script::CloseWith(4002, "browser says bye"),
        )
        .await;
        let relay = RelayFixture::start(&fake.http()).await;
        let mut ws = open(&relay).await;
        ws.send(Message::text("{}")).await.expect("send");
        let f = close_of(&mut ws).await.expect("close frame");
        assert_eq!(u16::from(f.code), 4002);
        assert_eq!(f.reason.as_str(), "browser says bye");
    })
    .await;
}

#[tokio::test]
async fn upstream_vanishing_without_close_gives_1011() {
    within("vanish", async {
        let fake = FakeUpstream::start(HttpMode::DevTools, Script::VanishAfterFirstMessage).await;
        let relay = RelayFixture::start(&fake.http()).await;
        let mut ws = open(&relay).await;
        let sent = std::time::Instant::now();
        ws.send(Message::text("{\"id\":1}")).await.expect("send");
        let f = close_of(&mut ws)
            .await
            .expect("a close frame, not a dropped socket");
        let waited = sent.elapsed();
        assert!(
            waited < std::time::Duration::from_secs(3),
            "1011 took {waited:?}: not prompt"
        );
        assert_eq!(u16::from(f.code), 1011);
        assert!(f.reason.contains("lost"), "{f:?}");
    })
    .await;
}

#[tokio::test]
async fn oversized_messages_close_with_1009_both_ways() {
    within("oversized", async {
        // From the browser.
        let fake = FakeUpstream::start(HttpMode::DevTools, Script::SendBytes(300_000)).await;
        let relay = RelayFixture::start_with(&fake.http(), |c| c.max_message_size = 100_000).await;
        let mut ws = open(&relay).await;
        ws.send(Message::text("{}")).await.expect("send");
        let f = close_of(&mut ws).await.expect("close frame");
        assert_eq!(u16::from(f.code), 1009);

        // From the client; the relay stays up for the next client.
        let mut fake = FakeUpstream::start(HttpMode::DevTools, Script::Echo).await;
        let relay = RelayFixture::start_with(&fake.http(), |c| c.max_message_size = 100_000).await;
        let mut ws = open(&relay).await;
        let _ = ws.send(Message::text("z".repeat(200_000))).await;
        let f = close_of(&mut ws).await.expect("close frame");
        assert_eq!(u16::from(f.code), 1009);
        assert!(matches!(next_seen(&mut fake).await, Seen::Upgrade(_)));
        match next_seen(&mut fake).await {
            Seen::Close(Some(f)) => assert_eq!(u16::from(f.code), 1009),
            other => panic!("the oversized message must not reach the browser: {other:?}"),
        }
        let mut again = open(&relay).await;
        again.send(Message::text("ok")).await.expect("send");
        match again.next().await {
            Some(Ok(Message::Text(t))) => assert_eq!(t.as_str(), "ok"),
            other => panic!("{other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn garbage_upstream_http_is_a_502() {
    within("garbage", async {
        let fake = FakeUpstream::start(HttpMode::Garbage, Script::Echo).await;
        let relay = RelayFixture::start(&fake.http()).await;
        let a = get(&relay.authority(), "/json/version").await;
        assert_eq!(a.status, 502, "{}", a.text());
        assert_eq!(a.text().trim().lines().count(), 1);
        let a = get(&relay.authority(), "/json/list/").await;
        assert_eq!(a.status, 502);
    })
    .await;
}
