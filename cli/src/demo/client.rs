//! The demo's CDP client: what an agent's browser tool does, in a few hundred lines, over the
//! workspace's one CDP client (`cdp_capture::client`).
//!
//! It finds the browser websocket through the relay's `/json/version` (as Playwright and
//! Puppeteer do), opens it, and drives pages over flattened sessions. Calls are sequential;
//! every event that arrives is kept in a log that [`Cdp::wait_for`] searches, so the script
//! waits on what the browser says, never on a clock. Every wait is bounded by [`STEP_TIMEOUT`]
//! and fails naming what it waited for. The log keeps the last [`LOG_CAP`] events (a page that
//! floods cannot grow it); the client reads no faster than the log takes events
//! ([`Overflow::Wait`]).
//!
//! Session and target ids are capabilities: they stay in memory and never reach a log line or
//! an error message.

use anyhow::Context as _;
use cdp_capture::client::{self, CallError, Client, Config, ConnectError, Events, Overflow};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::Duration;

/// The longest any one step (a command's answer, a page load, an event) may take.
pub(super) const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// Events the log keeps; older ones are forgotten.
const LOG_CAP: usize = 4096;

/// A browser event, as received.
#[derive(Debug)]
pub(super) struct Event {
    /// The flattened session it belongs to (`None` for the browser session).
    pub(super) session: Option<String>,
    /// `Domain.event`.
    pub(super) method: String,
    /// Its parameters.
    pub(super) params: Value,
}

impl Event {
    /// True for `method` on `tab`.
    pub(super) fn is(&self, tab: &Tab, method: &str) -> bool {
        self.method == method && self.session.as_deref() == Some(tab.session.as_str())
    }
}

/// A position in the event log: waits look only at events after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark(usize);

/// A page the client is attached to.
#[derive(Debug)]
pub(super) struct Tab {
    session: String,
}

/// The last [`LOG_CAP`] events; positions count every event ever logged.
#[derive(Default)]
struct Log {
    events: VecDeque<Event>,
    /// The position of `events[0]`.
    first: usize,
}

impl Log {
    fn end(&self) -> usize {
        self.first + self.events.len()
    }

    fn keep(&mut self, event: client::Event) {
        let Some(method) = event.method() else {
            return;
        };
        self.events.push_back(Event {
            session: event.session(),
            method,
            params: event.params(),
        });
        if self.events.len() > LOG_CAP {
            self.events.pop_front();
            self.first += 1;
        }
    }

    /// The first event at or after `from` that `matches`, by position.
    fn find(&self, from: usize, matches: &impl Fn(&Event) -> bool) -> Option<usize> {
        let skip = from.saturating_sub(self.first);
        self.events
            .iter()
            .skip(skip)
            .position(matches)
            .map(|i| self.first + skip + i)
    }
}

/// One websocket to the browser endpoint.
pub(super) struct Cdp {
    client: Client,
    events: Events,
    log: Log,
}

impl Cdp {
    /// Connects to the browser endpoint the relay at `endpoint` (`http://127.0.0.1:PORT`)
    /// advertises.
    pub(super) async fn connect(endpoint: &str) -> anyhow::Result<Cdp> {
        let authority = endpoint.trim_start_matches("http://");
        let url = within("the relay's /json/version", browser_url(endpoint)).await??;
        let config = Config {
            connect_timeout: STEP_TIMEOUT,
            overflow: Overflow::Wait,
            ..Config::default()
        };
        // The URL holds the browser's id: the errors name what failed without it.
        let (client, events) = client::connect(&url, config).await.map_err(|e| match e {
            ConnectError::Unreachable(_) => {
                anyhow::anyhow!("cannot connect to the relay at {authority}: {e}")
            }
            _ => anyhow::anyhow!("the relay refused the browser websocket: {e}"),
        })?;
        Ok(Cdp {
            client,
            events,
            log: Log::default(),
        })
    }

    /// Sends `method` on `tab` (or the browser session) and returns its `result`; events that
    /// arrive meanwhile are logged.
    pub(super) async fn call(
        &mut self,
        tab: Option<&Tab>,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Value> {
        let session = tab.map(|t| t.session.as_str());
        let answer = self.client.call(method, params, session, STEP_TIMEOUT);
        let log = &mut self.log;
        match self.events.during(answer, |e| log.keep(e)).await {
            Ok(result) => Ok(result),
            Err(CallError::Refused(message)) => {
                anyhow::bail!("the browser refused {method}: {message}")
            }
            Err(CallError::Timeout) => anyhow::bail!(
                "waited {}s for the answer to {method}",
                STEP_TIMEOUT.as_secs()
            ),
            Err(e) => anyhow::bail!("no answer to {method}: {e}"),
        }
    }

    /// The current end of the event log.
    pub(super) fn mark(&self) -> Mark {
        Mark(self.log.end())
    }

    /// The first event after `since` that `matches`, reading more if it has not come yet.
    pub(super) async fn wait_for(
        &mut self,
        since: Mark,
        what: &str,
        matches: impl Fn(&Event) -> bool,
    ) -> anyhow::Result<&Event> {
        let (log, events) = (&mut self.log, &mut self.events);
        let found = within(what, async {
            let mut next = since.0;
            loop {
                if let Some(at) = log.find(next, &matches) {
                    return Ok::<_, anyhow::Error>(at);
                }
                next = log.end();
                let event = events
                    .recv()
                    .await
                    .context("the relay closed the browser connection")?;
                log.keep(event);
            }
        })
        .await??;
        Ok(&self.log.events[found - self.log.first])
    }

    /// Attaches to target `target_id` with a flattened session and enables what an automation
    /// library enables: page lifecycle, network and console events.
    pub(super) async fn attach(&mut self, target_id: &str) -> anyhow::Result<Tab> {
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .context("Target.attachToTarget answered without a session")?
            .to_owned();
        let tab = Tab { session };
        for domain in ["Page.enable", "Network.enable", "Runtime.enable"] {
            self.call(Some(&tab), domain, json!({})).await?;
        }
        Ok(tab)
    }

    /// Navigates `tab` to `url` and waits for the page's load event and its own requests.
    pub(super) async fn navigate(&mut self, tab: &Tab, url: &str) -> anyhow::Result<()> {
        let mark = self.mark();
        let answer = self
            .call(Some(tab), "Page.navigate", json!({ "url": url }))
            .await?;
        if let Some(error) = answer.get("errorText").and_then(Value::as_str) {
            anyhow::bail!("the browser could not open the demo site: {error}");
        }
        self.wait_for(mark, "the page to load", |e| {
            e.is(tab, "Page.loadEventFired")
        })
        .await?;
        self.settled(tab).await
    }

    /// Waits until the page's own requests have succeeded or failed (`window.ledgerly.settled`).
    pub(super) async fn settled(&mut self, tab: &Tab) -> anyhow::Result<()> {
        self.call(
            Some(tab),
            "Runtime.evaluate",
            json!({
                "expression": "window.ledgerly && window.ledgerly.settled",
                "awaitPromise": true,
            }),
        )
        .await
        .map(drop)
    }

    /// Clicks the middle of the element `selector` names, as a user would: move, press, release.
    pub(super) async fn click(&mut self, tab: &Tab, selector: &str) -> anyhow::Result<()> {
        let expression = format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return null; \
             e.scrollIntoView({{ block: 'center' }}); const r = e.getBoundingClientRect(); \
             return {{ x: r.x + r.width / 2, y: r.y + r.height / 2 }}; }})()",
            json!(selector)
        );
        let found = self
            .call(
                Some(tab),
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await?;
        let point = &found["result"]["value"];
        let (Some(x), Some(y)) = (point["x"].as_f64(), point["y"].as_f64()) else {
            anyhow::bail!("the demo page has no element {selector}");
        };
        self.call(
            Some(tab),
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseMoved", "x": x, "y": y }),
        )
        .await?;
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                Some(tab),
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )
            .await?;
        }
        Ok(())
    }

    /// Types `text` into the focused field, as `fill` does in Playwright.
    pub(super) async fn insert_text(&mut self, tab: &Tab, text: &str) -> anyhow::Result<()> {
        self.call(Some(tab), "Input.insertText", json!({ "text": text }))
            .await
            .map(drop)
    }

    /// Presses Enter in the focused field.
    pub(super) async fn press_enter(&mut self, tab: &Tab) -> anyhow::Result<()> {
        let key = json!({
            "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13,
        });
        let mut down = key.clone();
        down["type"] = json!("keyDown");
        down["text"] = json!("\r");
        down["unmodifiedText"] = json!("\r");
        let mut up = key;
        up["type"] = json!("keyUp");
        self.call(Some(tab), "Input.dispatchKeyEvent", down).await?;
        self.call(Some(tab), "Input.dispatchKeyEvent", up)
            .await
            .map(drop)
    }

    /// Waits for the main-frame navigation that something after `mark` started, and for its
    /// page to load and settle. Returns the URL it landed on (memory only: it may hold a query).
    pub(super) async fn landed(&mut self, tab: &Tab, mark: Mark) -> anyhow::Result<String> {
        let navigated = self
            .wait_for(mark, "the next page", |e| {
                e.is(tab, "Page.frameNavigated") && e.params["frame"].get("parentId").is_none()
            })
            .await?;
        let url = navigated.params["frame"]["url"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.wait_for(mark, "the next page to load", |e| {
            e.is(tab, "Page.loadEventFired")
        })
        .await?;
        self.settled(tab).await?;
        Ok(url)
    }

    /// Takes a screenshot of `tab`, after one fresh round trip. The relay's observer reads what
    /// it forwards in order per direction; the round trip makes sure every event this client
    /// has already seen (the navigation that ends a typed-into page, the failures the frame
    /// should follow) reached the observer before the screenshot command does.
    pub(super) async fn screenshot(&mut self, tab: &Tab) -> anyhow::Result<()> {
        self.call(Some(tab), "Page.getLayoutMetrics", json!({}))
            .await?;
        self.call(
            Some(tab),
            "Page.captureScreenshot",
            json!({ "format": "png" }),
        )
        .await
        .map(drop)
    }

    /// Ends the session the way a polite client does: a close frame, the answering close, then
    /// the socket.
    pub(super) async fn close(mut self) {
        let closed = self.client.close(STEP_TIMEOUT);
        self.events.during(closed, drop).await;
    }
}

/// `webSocketDebuggerUrl` from the relay's `/json/version` (the relay rewrote it to itself).
async fn browser_url(endpoint: &str) -> anyhow::Result<String> {
    let relay = cdp_relay::Upstream::parse(endpoint)?;
    let version = cdp_relay_proxy::upstream::version(&relay)
        .await
        .context("the relay's /json/version")?;
    Ok(version.websocket_url)
}

/// Bounds `fut` by [`STEP_TIMEOUT`], naming what it waited for.
async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> anyhow::Result<T> {
    tokio::time::timeout(STEP_TIMEOUT, fut)
        .await
        .map_err(|_| anyhow::anyhow!("waited {}s for {what}", STEP_TIMEOUT.as_secs()))
}
