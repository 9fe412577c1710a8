//! The demo's web site: "Ledgerly", a small invoicing app served in-process with hyper on
//! `127.0.0.1:0`, with the failures a real app has.
//!
//! - `/login`: a sign-in form with a username, a password and a one-time-code field; `POST
//!   /session` checks them (so the demo proves the typing arrived) and sets a session cookie.
//! - `/dashboard`: the dashboard; its live-updates `fetch` goes to a port that refuses connections,
//!   with a token in its query, and logs a `console.error` when it fails.
//! - `/search?q=…`: the search page; its `fetch` to `/api/search` answers 500.
//! - `/invoices/INV-1042`: an invoice whose receipt image is a 404.
//!
//! Every page exposes `window.ledgerly.settled`, a promise that resolves once the page's own
//! requests have succeeded or failed, so the client waits on the page, never on a clock. The site
//! never logs a request: the sign-in form carries the demo's planted secrets.

use super::{LIVE_TOKEN, OTP, PASSWORD, SESSION_COOKIE, USERNAME};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpSocket};
use tokio::task::JoinSet;

/// The invoice the agent opens in a second page.
pub(super) const INVOICE_PATH: &str = "/invoices/INV-1042";

/// Largest form body read (the sign-in form is well under 1 KiB).
const MAX_FORM: usize = 16 * 1024;

/// The running site. Dropping it stops serving and frees the refusing port.
pub(super) struct Site {
    origin: String,
    task: tokio::task::JoinHandle<()>,
    /// Bound but never listening: connections to it are refused at once, and no other process
    /// can take the port while the demo runs.
    _refusing: TcpSocket,
}

impl Site {
    /// Binds `127.0.0.1:0` (and a refusing port for the live-updates fetch) and serves.
    pub(super) async fn start() -> std::io::Result<Site> {
        let refusing = TcpSocket::new_v4()?;
        refusing.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let refused = refusing.local_addr()?;
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let origin = format!("http://{}", listener.local_addr()?);
        let pages = Arc::new(Pages::new(&format!("http://{refused}")));
        let task = tokio::spawn(async move {
            // Dropping the set (when this task is aborted) aborts every connection too.
            let mut connections = JoinSet::new();
            loop {
                // Accepting fails only when the process is out of descriptors: the client's
                // next page load then fails with a clear timeout instead of this loop spinning.
                let Ok((tcp, _)) = listener.accept().await else {
                    break;
                };
                let pages = pages.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let pages = pages.clone();
                        async move { Ok::<_, std::convert::Infallible>(pages.answer(req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Site {
            origin,
            task,
            _refusing: refusing,
        })
    }

    /// `http://127.0.0.1:PORT<path>`.
    pub(super) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Body = Full<Bytes>;

/// The site's pages, rendered once.
struct Pages {
    login: String,
    login_failed: String,
    dashboard: String,
    search: String,
    invoice: String,
}

impl Pages {
    fn new(refused_origin: &str) -> Pages {
        Pages {
            login: login_page(false),
            login_failed: login_page(true),
            dashboard: dashboard_page(refused_origin),
            search: search_page(),
            invoice: invoice_page(),
        }
    }

    async fn answer(&self, req: Request<Incoming>) -> Response<Body> {
        let path = req.uri().path().to_owned();
        let failed_login = req.uri().query().is_some_and(|q| q.contains("error="));
        match (req.method(), path.as_str()) {
            (&Method::GET, "/") => redirect("/login", None),
            (&Method::GET, "/login") if failed_login => html(&self.login_failed),
            (&Method::GET, "/login") => html(&self.login),
            (&Method::POST, "/session") => sign_in(req).await,
            (&Method::GET, "/dashboard") => html(&self.dashboard),
            (&Method::GET, "/search") => html(&self.search),
            (&Method::GET, "/api/search") => respond(
                StatusCode::INTERNAL_SERVER_ERROR,
                "application/json",
                r#"{"error":"search index unavailable"}"#.into(),
            ),
            (&Method::GET, INVOICE_PATH) => html(&self.invoice),
            (&Method::GET, "/static/app.css") => {
                respond(StatusCode::OK, "text/css; charset=utf-8", STYLE.into())
            }
            _ => respond(StatusCode::NOT_FOUND, "text/plain", "not found".into()),
        }
    }
}

/// `POST /session`: the dashboard for the demo's credentials, the form again otherwise.
async fn sign_in(req: Request<Incoming>) -> Response<Body> {
    let body = match Limited::new(req.into_body(), MAX_FORM).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return respond(StatusCode::PAYLOAD_TOO_LARGE, "text/plain", "".into()),
    };
    let (mut user, mut password, mut otp) = (false, false, false);
    for (name, value) in url::form_urlencoded::parse(&body) {
        match name.as_ref() {
            "user" => user = value == USERNAME,
            "password" => password = value == PASSWORD,
            "otp" => otp = value == OTP,
            _ => {}
        }
    }
    if user && password && otp {
        let cookie = format!("ledgerly_session={SESSION_COOKIE}; Path=/; HttpOnly; SameSite=Lax");
        redirect("/dashboard", Some(cookie))
    } else {
        redirect("/login?error=1", None)
    }
}

fn html(page: &str) -> Response<Body> {
    respond(StatusCode::OK, "text/html; charset=utf-8", page.to_owned())
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    h.insert(
        CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    resp
}

fn redirect(to: &'static str, cookie: Option<String>) -> Response<Body> {
    let mut resp = respond(StatusCode::SEE_OTHER, "text/plain", String::new());
    let h = resp.headers_mut();
    h.insert(LOCATION, hyper::header::HeaderValue::from_static(to));
    if let Some(value) = cookie.and_then(|c| c.parse().ok()) {
        h.insert(SET_COOKIE, value);
    }
    resp
}

/// One page of the app: the shared head, the top bar, `main`, and the page's script.
fn page(title: &str, nav: Option<&str>, main: &str, script: &str) -> String {
    let links = [
        ("Dashboard", "/dashboard"),
        ("Search", "/search"),
        ("Invoices", INVOICE_PATH),
    ];
    let nav = match nav {
        None => String::new(),
        Some(current) => {
            let items: String = links
                .iter()
                .map(|(name, href)| {
                    let here = if *name == current {
                        r#" aria-current="page""#
                    } else {
                        ""
                    };
                    format!(r#"<a href="{href}"{here}>{name}</a>"#)
                })
                .collect();
            format!(r#"<nav>{items}</nav><span class="who">Acme GmbH</span>"#)
        }
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · Ledgerly</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/app.css">
</head><body>
<header><a class="brand" href="/dashboard"><span class="logo">L</span>Ledgerly</a>{nav}</header>
<main>{main}</main>
<script>window.ledgerly = {{ settled: Promise.resolve() }};
{script}</script>
</body></html>
"#
    )
}

fn login_page(failed: bool) -> String {
    let error = if failed {
        r#"<p class="banner bad">That did not work. Check your password and code.</p>"#
    } else {
        ""
    };
    let main = format!(
        r#"<section class="card narrow">
<h1>Sign in</h1>
<p class="muted">Welcome back. Use your work account.</p>
{error}
<form method="post" action="/session">
  <label for="user">Email</label>
  <input id="user" name="user" type="email" autocomplete="username" placeholder="you@company.com">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password">
  <label for="otp">One-time code</label>
  <input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="6" placeholder="6 digits from your app">
  <button id="sign-in" type="submit">Sign in</button>
</form>
</section>"#
    );
    page("Sign in", None, &main, "")
}

fn dashboard_page(refused_origin: &str) -> String {
    let main = r#"<div class="title-row"><h1>Dashboard</h1><span id="live" class="pill">Connecting…</span></div>
<div id="offline" class="banner bad" hidden>Live updates are offline. Figures may be out of date.</div>
<section class="figures">
  <div class="card"><p class="muted">Outstanding</p><p class="figure">€12,480.00</p></div>
  <div class="card"><p class="muted">Overdue</p><p class="figure bad-text">3 invoices</p></div>
  <div class="card"><p class="muted">Paid this month</p><p class="figure">€8,920.50</p></div>
</section>
<section class="card">
<h2>Recent invoices</h2>
<table>
<thead><tr><th>Invoice</th><th>Customer</th><th>Due</th><th class="num">Amount</th><th>Status</th></tr></thead>
<tbody>
<tr><td><a href="/invoices/INV-1042">INV-1042</a></td><td>Nordwind Logistics</td><td>12 May</td><td class="num">€4,200.00</td><td><span class="pill pill-bad">Overdue</span></td></tr>
<tr><td>INV-1041</td><td>Kestrel Studio</td><td>30 May</td><td class="num">€1,150.00</td><td><span class="pill">Sent</span></td></tr>
<tr><td>INV-1040</td><td>Bergmann &amp; Söhne</td><td>2 May</td><td class="num">€2,730.50</td><td><span class="pill pill-ok">Paid</span></td></tr>
</tbody></table>
</section>"#;
    let script = format!(
        r#"const live = document.getElementById('live');
window.ledgerly.settled = fetch('{refused_origin}/v1/updates?token={LIVE_TOKEN}')
  .then(() => {{ live.textContent = 'Live'; live.className = 'pill pill-ok'; }})
  .catch((e) => {{
    live.textContent = 'Offline'; live.className = 'pill pill-bad';
    document.getElementById('offline').hidden = false;
    console.error('Live updates disconnected: ' + e.message);
  }});"#
    );
    page("Dashboard", Some("Dashboard"), main, &script)
}

fn search_page() -> String {
    let main = r#"<h1>Search</h1>
<form class="search" action="/search" method="get" role="search">
  <input id="q" name="q" type="search" placeholder="Invoices, customers, amounts…" aria-label="Search">
  <button type="submit">Search</button>
</form>
<div id="results" class="card"><p class="muted">Search by invoice number, customer or amount.</p></div>"#;
    let script = r#"const q = new URLSearchParams(location.search).get('q');
const results = document.getElementById('results');
if (q) {
  document.getElementById('q').value = q;
  results.replaceChildren(Object.assign(document.createElement('p'), { className: 'muted', textContent: 'Searching…' }));
  window.ledgerly.settled = fetch('/api/search?q=' + encodeURIComponent(q)).then(async (r) => {
    if (r.ok) { results.textContent = await r.text(); return; }
    const banner = Object.assign(document.createElement('p'), { className: 'banner bad' });
    banner.textContent = 'Search is unavailable right now (HTTP ' + r.status + '). Try again in a few minutes.';
    results.replaceChildren(banner);
    console.error('Search failed: HTTP ' + r.status + ' from /api/search');
  });
}"#;
    page("Search", Some("Search"), main, script)
}

fn invoice_page() -> String {
    let main = r#"<div class="title-row"><h1>Invoice INV-1042</h1><span class="pill pill-bad">Overdue</span></div>
<section class="card">
<dl class="facts">
  <dt>Customer</dt><dd>Nordwind Logistics</dd>
  <dt>Issued</dt><dd>12 April</dd>
  <dt>Due</dt><dd>12 May</dd>
  <dt>Amount</dt><dd>€4,200.00</dd>
</dl>
</section>
<section class="card">
<h2>Receipt</h2>
<img id="receipt" src="/files/INV-1042-receipt.png" alt="Receipt scan (INV-1042)" width="320" height="120">
</section>"#;
    let script = r#"const img = document.getElementById('receipt');
window.ledgerly.settled = new Promise((done) => {
  if (img.complete) { done(); } else { img.addEventListener('load', done); img.addEventListener('error', done); }
});"#;
    page("Invoice INV-1042", Some("Invoices"), main, script)
}

const STYLE: &str = r#":root { --ink: #1d2433; --muted: #667085; --line: #e4e7ec; --bg: #f6f7f9; --brand: #3b5bdb; --bad: #c92a2a; --bad-bg: #fff1f0; --ok: #2b8a3e; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; align-items: center; gap: 28px; padding: 12px 32px; background: #fff; border-bottom: 1px solid var(--line); }
.brand { display: flex; align-items: center; gap: 8px; font-weight: 700; font-size: 17px; color: var(--ink); text-decoration: none; }
.logo { display: inline-grid; place-items: center; width: 28px; height: 28px; border-radius: 7px; background: var(--brand); color: #fff; }
nav { display: flex; gap: 20px; }
nav a { color: var(--muted); text-decoration: none; padding: 4px 0; }
nav a[aria-current] { color: var(--ink); border-bottom: 2px solid var(--brand); }
.who { margin-left: auto; color: var(--muted); }
main { max-width: 960px; margin: 0 auto; padding: 28px 32px; }
h1 { font-size: 24px; margin: 0 0 16px; }
h2 { font-size: 16px; margin: 0 0 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 20px; margin-bottom: 16px; }
.narrow { max-width: 380px; margin: 40px auto; }
.muted { color: var(--muted); margin: 0 0 12px; }
label { display: block; font-weight: 600; margin: 12px 0 4px; }
input { width: 100%; padding: 9px 11px; border: 1px solid #d0d5dd; border-radius: 7px; font: inherit; }
input:focus { outline: 2px solid var(--brand); outline-offset: 1px; }
button { margin-top: 18px; padding: 9px 18px; border: 0; border-radius: 7px; background: var(--brand); color: #fff; font: inherit; font-weight: 600; }
form.search { display: flex; gap: 8px; margin-bottom: 16px; }
form.search button { margin-top: 0; }
.title-row { display: flex; align-items: center; gap: 12px; }
.title-row h1 { margin-bottom: 16px; }
.title-row .pill { margin-bottom: 16px; }
.figures { display: grid; grid-template-columns: repeat(3, 1fr); gap: 16px; }
.figure { font-size: 22px; font-weight: 700; margin: 0; }
.bad-text { color: var(--bad); }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 8px 6px; border-top: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; border-top: 0; }
.num { text-align: right; }
a { color: var(--brand); }
.pill { display: inline-block; padding: 1px 10px; border-radius: 99px; background: #eef1f6; color: var(--muted); font-size: 13px; font-weight: 600; }
.pill-bad { background: var(--bad-bg); color: var(--bad); }
.pill-ok { background: #ebfbee; color: var(--ok); }
.banner { padding: 10px 14px; border-radius: 8px; margin: 0 0 16px; }
.bad { background: var(--bad-bg); color: var(--bad); border: 1px solid #ffc9c9; }
.facts { display: grid; grid-template-columns: 140px 1fr; gap: 6px 16px; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; font-weight: 600; }
img { display: block; border: 1px dashed #d0d5dd; border-radius: 8px; color: var(--muted); }
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One HTTP/1.1 exchange; returns the status line and headers, and the body.
    async fn exchange(site: &Site, request: &str) -> (String, String) {
        let authority = site.origin.trim_start_matches("http://");
        let mut tcp = tokio::net::TcpStream::connect(authority).await.unwrap();
        let request = request.replace("{host}", authority);
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        tcp.read_to_end(&mut raw).await.unwrap();
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        (head.to_owned(), body.to_owned())
    }

    async fn get(site: &Site, path: &str) -> (String, String) {
        exchange(
            site,
            &format!("GET {path} HTTP/1.1\r\nHost: {{host}}\r\nConnection: close\r\n\r\n"),
        )
        .await
    }

    async fn sign_in(site: &Site, form: &str) -> String {
        let request = format!(
            "POST /session HTTP/1.1\r\nHost: {{host}}\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        );
        exchange(site, &request).await.0
    }

    #[tokio::test]
    async fn pages_and_failures() {
        let site = Site::start().await.unwrap();
        let (head, body) = get(&site, "/login").await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body.contains(r#"autocomplete="one-time-code""#));
        assert!(body.contains(r#"type="password""#));
        let (head, body) = get(&site, "/dashboard").await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body.contains(&format!("?token={LIVE_TOKEN}")));
        let (head, _) = get(&site, "/api/search?q=x").await;
        assert!(head.starts_with("HTTP/1.1 500"), "{head}");
        let (head, _) = get(&site, "/files/INV-1042-receipt.png").await;
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
        let (head, body) = get(&site, INVOICE_PATH).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body.contains("/files/INV-1042-receipt.png"));
        let (head, _) = get(&site, "/static/app.css").await;
        assert!(head.contains("text/css"), "{head}");
    }

    #[tokio::test]
    async fn sign_in_checks_every_field() {
        let site = Site::start().await.unwrap();
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let good = format!(
            "user={}&password={}&otp={}",
            enc(USERNAME),
            enc(PASSWORD),
            enc(OTP)
        );
        let head = sign_in(&site, &good).await;
        assert!(head.starts_with("HTTP/1.1 303"), "{head}");
        assert!(head.contains("location: /dashboard"), "{head}");
        assert!(head.contains(SESSION_COOKIE), "{head}");
        let wrong = good.replace(&enc(OTP), "000000");
        let head = sign_in(&site, &wrong).await;
        assert!(head.contains("location: /login?error=1"), "{head}");
        assert!(!head.contains(SESSION_COOKIE), "{head}");
        let (_, body) = get(&site, "/login?error=1").await;
        assert!(body.contains("That did not work"));
    }

    #[tokio::test]
    async fn the_live_updates_port_refuses() {
        let site = Site::start().await.unwrap();
        let (_, body) = get(&site, "/dashboard").await;
        let start = body.find("fetch('").unwrap() + "fetch('http://".len();
        let authority = body[start..].split('/').next().unwrap();
        let refused = tokio::net::TcpStream::connect(authority).await.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}
