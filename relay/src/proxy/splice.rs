//! The hot path: moves websocket messages between a client and the browser.
//!
//! Never parses a payload, never waits on evidence. Each direction reads a message, hands it to
//! the peer socket, offers a refcounted copy to the tap, and flushes once nothing more is
//! immediately readable, so bursts are batched and a lone message goes out at once. One message
//! in flight per direction: a slow reader slows its writer through TCP, memory stays bounded.

use crate::pipeline::tap::{Direction, Payload, SessionEnd, Tap};
use crate::stats::Stats;
use futures_util::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

/// After one side has ended, how long the other gets to finish its close handshake.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Why one direction stopped.
#[derive(Debug, Clone, PartialEq)]
enum PumpEnd {
    /// The source sent a close frame, which was forwarded.
    Closed,
    /// The source vanished without a close frame.
    Lost,
    /// The source sent a message over the size limit.
    TooBig,
    /// Writing to the destination failed: it is gone.
    PeerGone,
}

/// Identity of one spliced session, for the tap and the log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionId(pub(crate) u64);

/// Splices `client` and `upstream` until either side ends or `shutdown` fires.
pub(crate) async fn splice<C, U>(
    id: SessionId,
    client: WebSocketStream<C>,
    upstream: WebSocketStream<U>,
    tap: &Tap,
    stats: &Stats,
    shutdown: &CancellationToken,
) -> SessionEnd
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let (mut c_tx, mut c_rx) = client.split();
    let (mut u_tx, mut u_rx) = upstream.split();
    let end = {
        let to_browser = pump(&mut c_rx, &mut u_tx, id, Direction::ToBrowser, tap, stats);
        let to_client = pump(&mut u_rx, &mut c_tx, id, Direction::ToClient, tap, stats);
        tokio::pin!(to_browser, to_client);
        tokio::select! {
            e = &mut to_browser => {
                let end = match e {
                    PumpEnd::TooBig => SessionEnd::TooBig,
                    PumpEnd::PeerGone => SessionEnd::BrowserLost,
                    PumpEnd::Closed | PumpEnd::Lost => SessionEnd::ClientClosed,
                };
                if end == SessionEnd::ClientClosed {
                    // The browser answers a forwarded close; let that answer reach the client.
                    let _ = tokio::time::timeout(CLOSE_GRACE, &mut to_client).await;
                }
                end
            }
            e = &mut to_client => {
                let end = match e {
                    PumpEnd::TooBig => SessionEnd::TooBig,
                    PumpEnd::PeerGone => SessionEnd::ClientClosed,
                    PumpEnd::Closed => SessionEnd::BrowserClosed,
                    PumpEnd::Lost => SessionEnd::BrowserLost,
                };
                if matches!(e, PumpEnd::Closed | PumpEnd::Lost) {
                    let _ = tokio::time::timeout(CLOSE_GRACE, &mut to_browser).await;
                }
                end
            }
            _ = shutdown.cancelled() => SessionEnd::Shutdown,
        }
    };
    // Endings the pumps could not tell both sides about themselves.
    let (to_client, to_browser) = match end {
        SessionEnd::Shutdown => (Some(going_away()), Some(going_away())),
        SessionEnd::TooBig => (Some(too_big()), Some(too_big())),
        SessionEnd::ProtocolError => (None, None),
        SessionEnd::BrowserLost => (Some(browser_lost()), None),
        SessionEnd::ClientClosed | SessionEnd::BrowserClosed => (None, None),
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        if let Some(m) = to_client {
            let _ = c_tx.send(m).await;
        }
        if let Some(m) = to_browser {
            let _ = u_tx.send(m).await;
        }
    })
    .await;
    end
}

/// Moves messages from `src` to `dst` until the source ends.
async fn pump<S, K>(
    src: &mut S,
    dst: &mut K,
    id: SessionId,
    dir: Direction,
    tap: &Tap,
    stats: &Stats,
) -> PumpEnd
where
    S: Stream<Item = Result<Message, WsError>> + Unpin,
    K: Sink<Message, Error = WsError> + Unpin,
{
    loop {
        let mut next = src.next().await;
        loop {
            match forward(next, dst, id, dir, tap, stats).await {
                Step::Continue => {}
                Step::End(PumpEnd::Closed) => {
                    // Reading on lets tungstenite write its automatic close reply to the source.
                    let drain = async { while let Some(Ok(_)) = src.next().await {} };
                    let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
                    return PumpEnd::Closed;
                }
                Step::End(end) => return end,
            }
            // Batch whatever is already buffered; flush as soon as the source would wait.
            match src.next().now_or_never() {
                Some(item) => next = item,
                None => break,
            }
        }
        if dst.flush().await.is_err() {
            return PumpEnd::PeerGone;
        }
    }
}

enum Step {
    Continue,
    End(PumpEnd),
}

async fn forward<K>(
    item: Option<Result<Message, WsError>>,
    dst: &mut K,
    id: SessionId,
    dir: Direction,
    tap: &Tap,
    stats: &Stats,
) -> Step
where
    K: Sink<Message, Error = WsError> + Unpin,
{
    let msg = match item {
        Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => m,
        // Each hop answers its own pings (tungstenite queues the pong); nothing to forward.
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => return Step::Continue,
        Some(Ok(Message::Close(frame))) => {
            tracing::debug!(session = id.0, ?dir, "close frame forwarded");
            let _ = dst.send(Message::Close(frame)).await;
            return Step::End(PumpEnd::Closed);
        }
        Some(Err(WsError::Capacity(_))) => {
            tracing::warn!(
                session = id.0,
                ?dir,
                "a websocket message exceeded --max-message-size; closing the session with 1009"
            );
            let _ = dst.send(too_big()).await;
            return Step::End(PumpEnd::TooBig);
        }
        Some(Err(e)) => {
            tracing::debug!(session = id.0, ?dir, error = %e, "source ended without a close frame");
            return lost(dst, dir).await;
        }
        None => return lost(dst, dir).await,
    };
    let payload = match &msg {
        Message::Text(t) => Payload::text(bytes::Bytes::from(t.clone())),
        Message::Binary(b) => Payload::binary(b.clone()),
        _ => return Step::Continue,
    };
    if dst.feed(msg).await.is_err() {
        return Step::End(PumpEnd::PeerGone);
    }
    stats.message(dir, payload.len());
    if tap.is_enabled() {
        tap.offer(id.0, dir, payload);
    }
    Step::Continue
}

/// The source vanished. A client whose browser vanished gets 1011 promptly; a browser whose client
/// vanished just sees its socket close, as it would without the relay.
async fn lost<K>(dst: &mut K, dir: Direction) -> Step
where
    K: Sink<Message, Error = WsError> + Unpin,
{
    if dir == Direction::ToClient {
        let _ = dst.send(browser_lost()).await;
    } else {
        let _ = dst.close().await;
    }
    Step::End(PumpEnd::Lost)
}

fn going_away() -> Message {
    close(CloseCode::Away, "cdp-relay is shutting down")
}

fn browser_lost() -> Message {
    close(
        CloseCode::Error,
        "cdp-relay: the browser connection was lost",
    )
}

fn close(code: CloseCode, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

fn too_big() -> Message {
    close(
        CloseCode::Size,
        "cdp-relay: message exceeds --max-message-size",
    )
}
