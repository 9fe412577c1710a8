//! The client against a tiny websocket peer on port 0 that plays the browser.

use super::*;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

type Peer = WebSocketStream<TcpStream>;

/// Starts a peer running `script` on the first connection; returns its URL.
async fn peer<F, Fut>(script: F) -> String
where
    F: FnOnce(Peer) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let ws = tokio_tungstenite::accept_async(tcp)
            .await
            .expect("handshake");
        script(ws).await;
    });
    format!("ws://{addr}/devtools/browser/test")
}

/// The next command the peer reads: (id, method, sessionId).
async fn command(ws: &mut Peer) -> Option<(u64, String, Option<String>)> {
    loop {
        match ws.next().await? {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).expect("a JSON command");
                let id = v["id"].as_u64().expect("an id");
                let method = v["method"].as_str().expect("a method").to_owned();
                let session = v["sessionId"].as_str().map(str::to_owned);
                return Some((id, method, session));
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

async fn send(ws: &mut Peer, v: Value) {
    ws.send(Message::text(v.to_string()))
        .await
        .expect("peer send");
}

/// Reads on until the client goes (answers its close frame).
async fn drain(mut ws: Peer) {
    while let Some(Ok(_)) = ws.next().await {}
}

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn replies_reach_their_callers_and_events_come_before_later_replies() {
    let url = peer(|mut ws| async move {
        let a = command(&mut ws).await.expect("first");
        let b = command(&mut ws).await.expect("second");
        // Noise that is no CDP message is ignored.
        ws.send(Message::text("not json")).await.expect("send");
        ws.send(Message::binary(vec![1, 2, 3])).await.expect("send");
        send(&mut ws, json!({"id": 4242, "result": {}})).await;
        send(
            &mut ws,
            json!({"method": "Page.loadEventFired", "params": {"timestamp": 1}, "sessionId": "S1"}),
        )
        .await;
        // Answered in the other order, each with what it was asked.
        send(
            &mut ws,
            json!({"id": b.0, "result": {"method": b.1, "session": b.2}}),
        )
        .await;
        send(
            &mut ws,
            json!({"id": a.0, "result": {"method": a.1, "session": a.2}}),
        )
        .await;
        drain(ws).await;
    })
    .await;
    let (client, mut events) = connect(&url, Config::default()).await.expect("connect");
    let (a, b) = tokio::join!(
        client.call("Browser.getVersion", json!({}), None, T),
        client.call(
            "Runtime.evaluate",
            json!({"expression": "1"}),
            Some("S1"),
            T
        ),
    );
    assert_eq!(
        a.expect("a"),
        json!({"method": "Browser.getVersion", "session": null})
    );
    assert_eq!(
        b.expect("b"),
        json!({"method": "Runtime.evaluate", "session": "S1"})
    );
    // The event the peer sent before the replies is queued by the time they arrived.
    let event = events.try_recv().expect("the event, already queued");
    assert_eq!(event.method().as_deref(), Some("Page.loadEventFired"));
    assert_eq!(event.session().as_deref(), Some("S1"));
    assert_eq!(event.params(), json!({"timestamp": 1}));
    assert!(event.at() <= SystemTime::now());
    assert!(
        events.try_recv().is_none(),
        "noise and stray replies are not events"
    );
    assert_eq!(client.pending(), 0);
    assert_eq!(client.close(T).await, None);
    assert!(client.is_closed());
}

#[tokio::test]
async fn a_call_without_an_answer_times_out_and_is_forgotten() {
    let url = peer(|mut ws| async move {
        let (id, _, _) = command(&mut ws).await.expect("command");
        // Too late: the caller has given up; the reply is discarded.
        let _ = command(&mut ws).await;
        send(&mut ws, json!({"id": id, "result": {}})).await;
        drain(ws).await;
    })
    .await;
    let (client, _events) = connect(&url, Config::default()).await.expect("connect");
    let started = std::time::Instant::now();
    let out = client
        .call("Page.navigate", json!({}), None, Duration::from_millis(200))
        .await;
    assert_eq!(out, Err(CallError::Timeout));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(client.pending(), 0, "a timed-out call keeps no entry");
    // A call whose future is dropped forgets its id as well.
    let dropped = tokio::time::timeout(
        Duration::from_millis(50),
        client.call("Page.enable", json!({}), None, T),
    )
    .await;
    assert!(dropped.is_err());
    assert_eq!(client.pending(), 0);
}

#[tokio::test]
async fn an_error_reply_is_refused_with_its_message() {
    let url = peer(|mut ws| async move {
        while let Some((id, _, _)) = command(&mut ws).await {
            send(
                &mut ws,
                json!({"id": id, "error": {"code": -32000, "message": "No node with given id"}}),
            )
            .await;
        }
    })
    .await;
    let (client, _events) = connect(&url, Config::default()).await.expect("connect");
    let out = client
        .call("DOM.focus", json!({"nodeId": 7}), None, T)
        .await;
    assert_eq!(out, Err(CallError::Refused("No node with given id".into())));
    let raw = client
        .call_raw("DOM.focus", json!({"nodeId": 7}), None, T)
        .await
        .expect("the raw reply");
    let v: Value = serde_json::from_str(raw.as_str()).expect("json");
    assert_eq!(v["error"]["code"], -32000);
}

/// A flood of events the user does not read: the queue stays within its bounds, the rest is
/// dropped and counted, and a reply behind the flood still reaches its caller.
#[tokio::test]
async fn an_event_flood_is_dropped_past_the_bound_and_replies_get_through() {
    const N: usize = 5000;
    let url = peer(|mut ws| async move {
        let (id, _, _) = command(&mut ws).await.expect("command");
        let pad = "x".repeat(1000);
        for i in 0..N {
            send(
                &mut ws,
                json!({"method": "Runtime.consoleAPICalled", "params": {"i": i, "pad": pad}}),
            )
            .await;
        }
        send(&mut ws, json!({"id": id, "result": {"done": true}})).await;
        drain(ws).await;
    })
    .await;
    let config = Config {
        event_count: 64,
        event_bytes: 16 * 1024,
        ..Config::default()
    };
    let (client, mut events) = connect(&url, config).await.expect("connect");
    let out = client.call("Runtime.enable", json!({}), None, T).await;
    assert_eq!(out, Ok(json!({"done": true})));
    // Each event is ~1 KiB of text, counted as 2 KiB: 8 fit in 16 KiB.
    let queued = events.len();
    assert_eq!(queued, 8, "the byte bound holds the queue");
    assert_eq!(events.dropped(), (N - queued) as u64);
    // The first ones are kept, in order.
    for i in 0..queued {
        let e = events.try_recv().expect("queued");
        assert_eq!(e.params()["i"], i);
    }
}

/// Under `Overflow::Wait` nothing is lost: the reader waits for the user, who takes events
/// while waiting for the reply behind them.
#[tokio::test]
async fn under_wait_a_flood_arrives_complete_within_the_bound() {
    const N: u64 = 3000;
    let url = peer(|mut ws| async move {
        let (id, _, _) = command(&mut ws).await.expect("command");
        for i in 0..N {
            send(
                &mut ws,
                json!({"method": "Log.entryAdded", "params": {"i": i}}),
            )
            .await;
        }
        send(&mut ws, json!({"id": id, "result": {}})).await;
        drain(ws).await;
    })
    .await;
    let config = Config {
        event_count: 16,
        overflow: Overflow::Wait,
        ..Config::default()
    };
    let (client, mut events) = connect(&url, config).await.expect("connect");
    let mut seen = Vec::new();
    let call = client.call("Log.enable", json!({}), None, T);
    let out = events
        .during(call, |e| seen.push(e.params()["i"].as_u64().expect("i")))
        .await;
    assert_eq!(out, Ok(json!({})));
    assert!(events.len() <= 16);
    while let Some(e) = events.try_recv() {
        seen.push(e.params()["i"].as_u64().expect("i"));
    }
    assert_eq!(seen, (0..N).collect::<Vec<_>>(), "every event, in order");
    assert_eq!(events.dropped(), 0);
}

/// One event larger than the whole byte budget is still taken, into an empty queue; a second
/// one behind it is dropped.
#[tokio::test]
async fn an_event_larger_than_the_budget_is_taken_alone() {
    let url = peer(|mut ws| async move {
        let (id, _, _) = command(&mut ws).await.expect("command");
        let big = "y".repeat(20 * 1024);
        send(
            &mut ws,
            json!({"method": "Big.one", "params": {"big": big}}),
        )
        .await;
        send(
            &mut ws,
            json!({"method": "Big.two", "params": {"big": big}}),
        )
        .await;
        send(&mut ws, json!({"id": id, "result": {}})).await;
        drain(ws).await;
    })
    .await;
    let config = Config {
        event_bytes: 4 * 1024,
        ..Config::default()
    };
    let (client, mut events) = connect(&url, config).await.expect("connect");
    client
        .call("Page.enable", json!({}), None, T)
        .await
        .expect("answered");
    assert_eq!(events.len(), 1);
    assert_eq!(events.dropped(), 1);
    let first = events.try_recv().expect("the first");
    assert_eq!(first.method().as_deref(), Some("Big.one"));
}

#[tokio::test]
async fn the_peer_closing_mid_call_ends_the_call_at_once() {
    let url = peer(|mut ws| async move {
        let _ = command(&mut ws).await.expect("command");
        send(
            &mut ws,
            json!({"method": "Inspector.detached", "params": {}}),
        )
        .await;
        let frame = CloseFrame {
            code: CloseCode::Away,
            reason: "going away".into(),
        };
        ws.close(Some(frame)).await.expect("close");
        drain(ws).await;
    })
    .await;
    let (client, mut events) = connect(&url, Config::default()).await.expect("connect");
    let started = std::time::Instant::now();
    let out = client.call("Page.navigate", json!({}), None, T).await;
    assert_eq!(out, Err(CallError::Closed));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not the timeout"
    );
    let frame = client.closed().await.expect("the peer's close frame");
    assert_eq!(u16::from(frame.code), 1001);
    // What came before the close is still there; then the events end.
    let e = events.recv().await.expect("the event before the close");
    assert_eq!(e.method().as_deref(), Some("Inspector.detached"));
    assert!(events.recv().await.is_none());
    // Later calls fail at once.
    let started = std::time::Instant::now();
    assert_eq!(
        client.call("Page.enable", json!({}), None, T).await,
        Err(CallError::Closed)
    );
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn close_sends_a_close_frame_and_waits_for_the_answer() {
    let (saw, seen) = oneshot::channel();
    let url = peer(|mut ws| async move {
        let mut close = None;
        while let Some(Ok(m)) = ws.next().await {
            if let Message::Close(f) = m {
                close = Some(f);
            }
        }
        let _ = saw.send(close);
    })
    .await;
    let (client, mut events) = connect(&url, Config::default()).await.expect("connect");
    let other = client.clone();
    assert_eq!(
        client.close(T).await,
        None,
        "the server echoes no frame of its own"
    );
    assert!(other.is_closed());
    assert!(events.recv().await.is_none());
    let close = tokio::time::timeout(T, seen).await.expect("in time");
    assert!(matches!(close, Ok(Some(_))), "the peer got a close frame");
}

#[tokio::test]
async fn dropping_every_handle_closes_the_connection() {
    let (saw, seen) = oneshot::channel();
    let url = peer(|mut ws| async move {
        let mut closed = false;
        while let Some(Ok(m)) = ws.next().await {
            closed |= m.is_close();
        }
        let _ = saw.send(closed);
    })
    .await;
    let (client, events) = connect(&url, Config::default()).await.expect("connect");
    drop(client);
    drop(events);
    assert_eq!(
        tokio::time::timeout(T, seen).await.expect("in time"),
        Ok(true)
    );
}

#[tokio::test]
async fn connect_errors_name_no_path() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.expect("accept");
        use tokio::io::AsyncWriteExt;
        let _ = tcp
            .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            .await;
    });
    let url = format!("ws://{addr}/devtools/browser/SECRET-ID");
    let err = connect(&url, Config::default()).await.expect_err("refused");
    assert_eq!(err, ConnectError::Refused(403));
    assert!(!err.to_string().contains("SECRET"));
    assert_eq!(
        connect("not a url", Config::default())
            .await
            .expect_err("bad"),
        ConnectError::BadRequest
    );
}

/// Under `Overflow::Wait`, a user that drops its events does not stall its calls.
#[tokio::test]
async fn under_wait_dropped_events_do_not_stall_calls() {
    let url = peer(|mut ws| async move {
        let (id, _, _) = command(&mut ws).await.expect("command");
        for i in 0..100 {
            send(
                &mut ws,
                json!({"method": "Log.entryAdded", "params": {"i": i}}),
            )
            .await;
        }
        send(&mut ws, json!({"id": id, "result": {}})).await;
        drain(ws).await;
    })
    .await;
    let config = Config {
        event_count: 4,
        overflow: Overflow::Wait,
        ..Config::default()
    };
    let (client, events) = connect(&url, config).await.expect("connect");
    drop(events);
    assert_eq!(
        client.call("Log.enable", json!({}), None, T).await,
        Ok(json!({}))
    );
}
