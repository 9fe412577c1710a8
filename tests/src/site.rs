//! A tiny static web site on loopback, for pages that need a real http:// origin (workers,
//! cookies, failing requests). Routes are fixed per test; unknown paths get 404.

use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One canned response.
#[derive(Debug, Clone)]
pub struct Route {
    /// HTTP status.
    pub status: u16,
    /// Content-Type.
    pub content_type: &'static str,
    /// Extra header lines (`Name: value`).
    pub headers: Vec<String>,
    /// Body.
    pub body: String,
    /// Answer only requests carrying exactly this `Authorization` value; others get 401.
    pub require_authorization: Option<String>,
    /// Never answer (the client has to give up or abort).
    pub hang: bool,
}

impl Route {
    /// 200 with a content type and body.
    pub fn ok(content_type: &'static str, body: impl Into<String>) -> Route {
        Route {
            status: 200,
            content_type,
            headers: Vec::new(),
            body: body.into(),
            require_authorization: None,
            hang: false,
        }
    }

    /// A response with another status.
    pub fn status(mut self, status: u16) -> Route {
        self.status = status;
        self
    }

    /// Adds a header line (`Name: value`).
    pub fn header(mut self, line: impl Into<String>) -> Route {
        self.headers.push(line.into());
        self
    }

    /// Requires an `Authorization` header with this exact value.
    pub fn authorized_by(mut self, value: impl Into<String>) -> Route {
        self.require_authorization = Some(value.into());
        self
    }

    /// A route that never answers.
    pub fn hanging() -> Route {
        Route {
            hang: true,
            ..Route::ok("text/plain", "")
        }
    }
}

/// A running site; stops on drop.
pub struct Site {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    task: JoinHandle<()>,
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Site {
    /// Serves `routes` (path without query → response).
    pub async fn start(routes: HashMap<&'static str, Route>) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind site");
        let origin = format!("http://{}", listener.local_addr().expect("addr"));
        let routes = Arc::new(routes);
        let task = tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let routes = routes.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let mut head = Vec::new();
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tcp.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head);
                    let path = text
                        .split_whitespace()
                        .nth(1)
                        .unwrap_or("/")
                        .split('?')
                        .next()
                        .unwrap_or("/")
                        .to_owned();
                    let mut route = routes
                        .get(path.as_str())
                        .cloned()
                        .unwrap_or_else(|| Route::ok("text/plain", "not found").status(404));
                    if route.hang {
                        // Hold the connection open until the client gives up.
                        let _ = tcp.read(&mut buf).await;
                        return;
                    }
                    if let Some(want) = &route.require_authorization {
                        let got = text.lines().find_map(|l| {
                            let (n, v) = l.split_once(':')?;
                            n.trim()
                                .eq_ignore_ascii_case("authorization")
                                .then(|| v.trim().to_owned())
                        });
                        if got.as_deref() != Some(want.as_str()) {
                            route = Route::ok("text/plain", "unauthorized").status(401);
                        }
                    }
                    let reason = match route.status {
                        200 => "OK",
                        401 => "Unauthorized",
                        404 => "Not Found",
                        500 => "Internal Server Error",
                        _ => "Status",
                    };
                    let mut resp = format!(
                        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
                        route.status,
                        route.content_type,
                        route.body.len()
                    );
                    for h in &route.headers {
                        resp.push_str(h);
                        resp.push_str("\r\n");
                    }
                    resp.push_str("\r\n");
                    resp.push_str(&route.body);
                    let _ = tcp.write_all(resp.as_bytes()).await;
                    let _ = tcp.shutdown().await;
                });
            }
        });
        Site { origin, task }
    }
}
