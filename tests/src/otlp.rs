//! A loopback OTLP/HTTP receiver (`POST /v1/traces`, protobuf): keeps every byte it was sent and
//! the spans decoded from it, for the gateway's telemetry tests and its benchmark. It can also
//! take connections and never answer, as a receiver that hangs does.

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
pub use opentelemetry_proto::tonic::trace::v1::span::Event;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// How the receiver answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Decodes and answers 200.
    Accept,
    /// Reads the request and never answers.
    Hang,
}

#[derive(Default)]
struct Got {
    bytes: Vec<u8>,
    spans: Vec<Span>,
    service_names: Vec<String>,
    requests: usize,
}

/// The receiver; it stops when dropped.
pub struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Got>>,
    arrived: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// Listens on a free loopback port.
    pub async fn start(mode: Mode) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the OTLP receiver");
        let addr = listener.local_addr().expect("its address");
        let got = Arc::new(Mutex::new(Got::default()));
        let arrived = Arc::new(Notify::new());
        let (g, a) = (got.clone(), arrived.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (g, a) = (g.clone(), a.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (g, a) = (g.clone(), a.clone());
                        async move { Ok::<_, hyper::Error>(answer(req, mode, &g, &a).await) }
                    });
                    let http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let _ = http.serve_connection(TokioIo::new(tcp), svc).await;
                });
            }
        });
        Receiver {
            addr,
            got,
            arrived,
            task,
        }
    }

    /// Its base URL (`http://127.0.0.1:PORT`), as `--otlp-endpoint` takes it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every byte of every request body so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.got.lock().expect("receiver lock").bytes.clone()
    }

    /// The spans decoded so far.
    pub fn spans(&self) -> Vec<Span> {
        self.got.lock().expect("receiver lock").spans.clone()
    }

    /// The `service.name` of each resource received.
    pub fn service_names(&self) -> Vec<String> {
        self.got
            .lock()
            .expect("receiver lock")
            .service_names
            .clone()
    }

    /// Export requests received (answered or not).
    pub fn requests(&self) -> usize {
        self.got.lock().expect("receiver lock").requests
    }

    /// The spans once `done` says they are all there (bound the wait with `within`).
    pub async fn wait_for(&self, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        loop {
            let arrived = self.arrived.notified();
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            arrived.await;
        }
    }
}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    mode: Mode,
    got: &Mutex<Got>,
    arrived: &Notify,
) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    use http_body_util::BodyExt;
    let path_ok = req.uri().path() == "/v1/traces"
        && req
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            == Some("application/x-protobuf");
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    {
        let mut g = got.lock().expect("receiver lock");
        g.requests += 1;
        g.bytes.extend_from_slice(&body);
        if let (true, Ok(export)) = (path_ok, ExportTraceServiceRequest::decode(body.as_ref())) {
            for rs in export.resource_spans {
                if let Some(name) = rs
                    .resource
                    .as_ref()
                    .and_then(|r| string_attr(&r.attributes, "service.name"))
                {
                    g.service_names.push(name);
                }
                for ss in rs.scope_spans {
                    g.spans.extend(ss.spans);
                }
            }
        }
    }
    arrived.notify_waiters();
    if mode == Mode::Hang {
        std::future::pending::<()>().await;
    }
    let status = if path_ok { 200 } else { 400 };
    let mut resp = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::new()));
    *resp.status_mut() = hyper::StatusCode::from_u16(status).expect("a status");
    resp
}

/// An attribute's value as text (strings as they are, numbers and booleans written out).
pub fn string_attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    let v = attrs.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    Some(match v.value.as_ref()? {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::BoolValue(b) => b.to_string(),
        any_value::Value::DoubleValue(d) => d.to_string(),
        _ => return None,
    })
}

/// A span's attribute as text.
pub fn attr(span: &Span, key: &str) -> Option<String> {
    string_attr(&span.attributes, key)
}

/// Lowercase hex of an id's bytes, as `traceparent` writes it.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}
