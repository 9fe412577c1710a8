//! The demo's CDP client: what an agent's browser tool does, in a few hundred lines.
//!
//! It finds the browser websocket through the relay's `/json/version` (as Playwright and
//! Puppeteer do), opens it, and drives pages over flattened sessions. Calls are sequential: a
//! call sends one command and reads until its answer, keeping every event it passes in a log
//! that [`Cdp::wait_for`] searches, so the script waits on what the browser says, never on a
//! clock. Every wait is bounded by [`STEP_TIMEOUT`] and fails naming what it waited for.
//!
//! Session and target ids are capabilities: they stay in memory and never reach a log line or
//! an error message.

use anyhow::Context as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// The longest any one step (a command's answer, a page load, an event) may take.
pub(super) const STEP_TIMEOUT: Duration = Duration::from_secs(20);

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

/// One websocket to the browser endpoint.
pub(super) struct Cdp {
    ws: WebSocketStream<TcpStream>,
    next_id: u64,
    events: Vec<Event>,
}

impl Cdp {
    /// Connects to the browser endpoint the relay at `endpoint` (`http://127.0.0.1:PORT`)
    /// advertises.
    pub(super) async fn connect(endpoint: &str) -> anyhow::Result<Cdp> {
        let authority = endpoint.trim_start_matches("http://");
        let url = within("the relay's /json/version", browser_url(endpoint)).await??;
        let tcp = TcpStream::connect(authority)
            .await
            .with_context(|| format!("cannot connect to the relay at {authority}"))?;
        let _ = tcp.set_nodelay(true);
        let (ws, _) = within(
            "the browser websocket",
            tokio_tungstenite::client_async(url.as_str(), tcp),
        )
        .await?
        // The URL holds the browser's id: say what failed without it.
        .map_err(|e| anyhow::anyhow!("the relay refused the browser websocket: {}", kind(&e)))?;
        Ok(Cdp {
            ws,
            next_id: 1,
            events: Vec::new(),
        })
    }

    /// Sends `method` on `tab` (or the browser session) and returns its `result`.
    pub(super) async fn call(
        &mut self,
        tab: Option<&Tab>,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut command = json!({ "id": id, "method": method, "params": params });
        if let Some(tab) = tab {
            command["sessionId"] = json!(tab.session);
        }
        self.ws
            .send(Message::text(command.to_string()))
            .await
            .map_err(|e| anyhow::anyhow!("cannot send {method}: {}", kind(&e)))?;
        let what = format!("the answer to {method}");
        let answer = within(&what, async {
            loop {
                if let Some(answer) = self.read().await? {
                    if answer.get("id").and_then(Value::as_u64) == Some(id) {
                        return Ok::<_, anyhow::Error>(answer);
                    }
                }
            }
        })
        .await??;
        if let Some(error) = answer.get("error") {
            let message = error["message"].as_str().unwrap_or("no message");
            anyhow::bail!("the browser refused {method}: {message}");
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// The current end of the event log.
    pub(super) fn mark(&self) -> Mark {
        Mark(self.events.len())
    }

    /// The first event after `since` that `matches`, reading more if it has not come yet.
    pub(super) async fn wait_for(
        &mut self,
        since: Mark,
        what: &str,
        matches: impl Fn(&Event) -> bool,
    ) -> anyhow::Result<&Event> {
        let mut next = since.0;
        let found = within(what, async {
            loop {
                if let Some(i) = (next..self.events.len()).find(|&i| matches(&self.events[i])) {
                    return Ok::<_, anyhow::Error>(i);
                }
                next = self.events.len();
                self.read().await?;
            }
        })
        .await??;
        Ok(&self.events[found])
    }

    /// Reads one message: an answer is returned, an event is logged (`None`).
    async fn read(&mut self) -> anyhow::Result<Option<Value>> {
        loop {
            let text = match self.ws.next().await {
                Some(Ok(Message::Text(t))) => t,
                Some(Ok(Message::Close(_))) | None => {
                    anyhow::bail!("the relay closed the browser connection")
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => anyhow::bail!("the browser connection failed: {}", kind(&e)),
            };
            let Ok(message) = serde_json::from_str::<Value>(text.as_str()) else {
                continue;
            };
            if message.get("id").is_some() {
                return Ok(Some(message));
            }
            if let Some(method) = message.get("method").and_then(Value::as_str) {
                self.events.push(Event {
                    session: message
                        .get("sessionId")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    method: method.to_owned(),
                    params: message.get("params").cloned().unwrap_or(Value::Null),
                });
                return Ok(None);
            }
        }
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
    /// the socket (the client closes TCP itself rather than wait for the other side to).
    pub(super) async fn close(mut self) {
        let _ = self.ws.close(None).await;
        let _ = tokio::time::timeout(STEP_TIMEOUT, async {
            while let Some(Ok(message)) = self.ws.next().await {
                if message.is_close() {
                    break;
                }
            }
        })
        .await;
    }
}

/// `webSocketDebuggerUrl` from the relay's `/json/version` (the relay rewrote it to itself).
async fn browser_url(endpoint: &str) -> anyhow::Result<String> {
    let relay = cdp_relay::Upstream::parse(endpoint)?;
    let version = cdp_relay::proxy::upstream::version(&relay)
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

/// A websocket error without anything from the URL.
fn kind(e: &tokio_tungstenite::tungstenite::Error) -> String {
    use tokio_tungstenite::tungstenite::Error as E;
    match e {
        E::Http(response) => format!("HTTP {}", response.status().as_u16()),
        E::Io(io) => io.to_string(),
        E::ConnectionClosed | E::AlreadyClosed => "the connection is closed".into(),
        E::Protocol(p) => p.to_string(),
        _ => "websocket error".into(),
    }
}
