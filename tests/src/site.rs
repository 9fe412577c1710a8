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
}

impl Route {
    /// 200 with a content type and body.
    pub fn ok(content_type: &'static str, body: impl Into<String>) -> Route {
        Route {
            status: 200,
            content_type,
            headers: Vec::new(),
            body: body.into(),
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
                    let route = routes.get(path.as_str()).cloned().unwrap_or(Route {
                        status: 404,
                        content_type: "text/plain",
                        headers: Vec::new(),
                        body: "not found".into(),
                    });
                    let mut resp = format!(
                        "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
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
