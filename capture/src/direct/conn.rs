//! The direct reader's own CDP connection: the shared client (`cdp/client.rs`) on one websocket
//! to the browser endpoint, dialled upstream directly (never through the relay's listener).
//!
//! What the direct reader relies on from it: every command has a timeout; events come as the
//! browser's text, stamped with when they arrived (the page model orders what the page reported
//! against the client's keystrokes by these times); an event the browser sent before a reply is
//! queued before that reply reaches its caller (`catch_up`'s round trip); and it never blocks
//! on a flood: past the queue's bounds events are dropped, counted in the pipeline's dropped
//! evidence ([`Overflow::Drop`]). It never logs a message's contents (commands can carry typed
//! text on their way back into the page it was typed into).

use super::BrowserEndpoint;
use crate::cdp::client::{self, Client, Config, Overflow};
pub(crate) use crate::cdp::client::{Event as Incoming, Events};
use serde_json::Value;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// Why a command got no result.
#[derive(Debug, Clone)]
pub(crate) enum CallError {
    /// No answer within the command's timeout (or too many commands waiting).
    Timeout,
    /// The connection closed (or was never there).
    Closed,
    /// The browser answered with an error; the message is raw (sanitize before keeping it).
    Refused(String),
}

impl From<client::CallError> for CallError {
    fn from(e: client::CallError) -> Self {
        match e {
            client::CallError::Timeout | client::CallError::Busy => CallError::Timeout,
            client::CallError::Closed => CallError::Closed,
            client::CallError::Refused(m) => CallError::Refused(m),
        }
    }
}

impl CallError {
    /// A short reason for a record's note or error text (raw: sanitize before keeping it).
    pub(crate) fn reason(&self) -> String {
        match self {
            CallError::Timeout => "the browser did not answer in time".into(),
            CallError::Closed => "the observer's browser connection closed".into(),
            CallError::Refused(m) => format!("the browser refused: {m}"),
        }
    }
}

/// A cloneable handle to send commands on the observer's connection.
#[derive(Clone)]
pub(crate) struct Cdp(Client);

impl Cdp {
    /// Connects to the browser's websocket (its path asked anew each time); events arrive on
    /// the returned [`Events`] until the connection ends. Events past the queue's bounds are
    /// counted in `dropped`.
    pub(crate) async fn connect(
        browser: &dyn BrowserEndpoint,
        dropped: Arc<AtomicU64>,
    ) -> Result<(Cdp, Events), String> {
        let path = browser.websocket_path().await?;
        let config = Config {
            dial: Some(browser.dial()),
            overflow: Overflow::Drop,
            dropped: Some(dropped),
            ..Config::default()
        };
        let url = format!("ws://{}{path}", browser.host());
        let (client, events) = client::connect(&url, config)
            .await
            .map_err(|e| format!("the browser's websocket: {e}"))?;
        Ok((Cdp(client), events))
    }

    /// Sends `method` (on `session`, or the browser session) and waits at most `timeout` for its
    /// result.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        Ok(self.0.call(method, params, session, timeout).await?)
    }
}
