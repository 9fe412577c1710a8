//! A real S3-protocol server for the upload tests: `s3s-fs` (objects as files under a temporary
//! directory) behind `s3s`'s SigV4 authentication, on 127.0.0.1 with an OS-chosen port, on a
//! thread and runtime of its own.
//!
//! Faults a real outage produces, on demand: [`S3Server::stop`] drops every connection at once
//! and closes each new one as it arrives (a crashed server behind a load balancer), and
//! [`S3Server::restart`] serves again on the same port with the same data.
//! [`S3Server::stall_puts_after`] lets a number of object writes through and holds the next
//! one unanswered, so a test can stop the server while an upload is in the middle.
//! [`S3Server::fail_puts`] answers the next object writes `503 SlowDown`, as a throttled S3
//! does, and [`S3Server::put_tries`] counts the writes of each key, so a test can count the
//! retries a client made.
//!
//! One gap of `s3s-fs` is closed here: it creates a missing bucket on the first write, where S3
//! answers `404 NoSuchBucket`; this server answers as S3 does.

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// The access key every test client uses.
pub const ACCESS_KEY: &str = "AKIDCDPRELAYTEST0001";
/// Its secret.
pub const SECRET_KEY: &str = "cdp-relay-test-secret-key-0123456789abcdef";

#[derive(Default)]
struct Faults {
    /// Object writes (PUT) let through before the stall; `usize::MAX` means never stall.
    puts_left: AtomicUsize,
    stalled: Notify,
    stalled_once: AtomicBool,
    puts_seen: AtomicUsize,
    /// Object writes still to answer `503 SlowDown`; `usize::MAX` means every one.
    fail_left: AtomicUsize,
    /// Object writes received, by path (`/bucket/key`, query left out).
    puts_by_path: Mutex<BTreeMap<String, usize>>,
}

/// An in-process S3-compatible server (see the module docs). Stopped on drop.
pub struct S3Server {
    data: tempfile::TempDir,
    addr: SocketAddr,
    /// `true` while serving; each change drops every open connection.
    up: watch::Sender<(bool, u64)>,
    faults: Arc<Faults>,
    thread: Option<std::thread::JoinHandle<()>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl S3Server {
    /// Starts the server with these buckets (created empty).
    pub fn start(buckets: &[&str]) -> S3Server {
        let data = tempfile::tempdir().expect("s3 data dir");
        for b in buckets {
            std::fs::create_dir(data.path().join(b)).expect("bucket dir");
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind s3");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("s3 addr");
        let (up, up_rx) = watch::channel((true, 0u64));
        let faults = Arc::new(Faults {
            puts_left: AtomicUsize::new(usize::MAX),
            ..Faults::default()
        });
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel();
        let root = data.path().to_path_buf();
        let f = faults.clone();
        let thread = std::thread::Builder::new()
            .name("s3-server".into())
            .spawn(move || serve(listener, root, up_rx, f, shutdown_rx))
            .expect("spawn s3 thread");
        S3Server {
            data,
            addr,
            up,
            faults,
            thread: Some(thread),
            shutdown: Some(shutdown),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The environment a client needs: endpoint, region, credentials, plain HTTP allowed.
    pub fn env(&self) -> Vec<(String, String)> {
        self.env_with(ACCESS_KEY, SECRET_KEY)
    }

    /// [`S3Server::env`] with other credentials (to test refusal).
    pub fn env_with(&self, access: &str, secret: &str) -> Vec<(String, String)> {
        vec![
            ("AWS_ENDPOINT_URL".into(), self.endpoint()),
            ("AWS_REGION".into(), "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID".into(), access.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), secret.into()),
            ("AWS_ALLOW_HTTP".into(), "true".into()),
        ]
    }

    /// Upload settings for `url` against this server.
    pub fn settings(&self, url: &str) -> cdp_relay::UploadSettings {
        let mut s = cdp_relay::UploadSettings::new(url);
        s.options = self
            .env()
            .into_iter()
            .map(|(k, v)| (k, cdp_relay::SecretValue::new(v)))
            .collect();
        s
    }

    /// Drops every open connection and closes new ones as they arrive, until
    /// [`S3Server::restart`]. Data is kept.
    pub fn stop(&self) {
        self.up.send_modify(|(up, generation)| {
            *up = false;
            *generation += 1;
        });
    }

    /// Serves again, on the same port, with the same data.
    pub fn restart(&self) {
        self.faults.puts_left.store(usize::MAX, Ordering::SeqCst);
        self.up.send_modify(|(up, generation)| {
            *up = true;
            *generation += 1;
        });
    }

    /// Lets `n` more object writes through, then holds the next one unanswered (and every one
    /// after it) until [`S3Server::stop`].
    pub fn stall_puts_after(&self, n: usize) {
        self.faults.stalled_once.store(false, Ordering::SeqCst);
        self.faults.puts_left.store(n, Ordering::SeqCst);
    }

    /// Answers the next `n` object writes (parts included) `503 SlowDown` without storing them;
    /// `usize::MAX` answers every one so until `fail_puts(0)`.
    pub fn fail_puts(&self, n: usize) {
        self.faults.fail_left.store(n, Ordering::SeqCst);
    }

    /// Object writes received for `bucket`/`key` so far (each retry counts).
    pub fn put_tries(&self, bucket: &str, key: &str) -> usize {
        let tries = self.faults.puts_by_path.lock().expect("puts_by_path");
        tries.get(&format!("/{bucket}/{key}")).copied().unwrap_or(0)
    }

    /// Object writes received, by key (`bucket/key`): what a test counts retries in.
    pub fn put_tries_by_key(&self) -> BTreeMap<String, usize> {
        let tries = self.faults.puts_by_path.lock().expect("puts_by_path");
        tries
            .iter()
            .map(|(p, n)| (p.trim_start_matches('/').to_owned(), *n))
            .collect()
    }

    /// Waits until a write is being held by [`S3Server::stall_puts_after`].
    pub async fn stalled(&self) {
        loop {
            let notified = self.faults.stalled.notified();
            if self.faults.stalled_once.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Object writes (PUTs, parts included) the server has received.
    pub fn puts_seen(&self) -> usize {
        self.faults.puts_seen.load(Ordering::SeqCst)
    }

    /// Every object of `bucket` as (key, bytes), keys sorted.
    pub fn objects(&self, bucket: &str) -> Vec<(String, Vec<u8>)> {
        let root = self.data.path().join(bucket);
        let mut out = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let key = p
                        .strip_prefix(&root)
                        .expect("under the bucket")
                        .to_string_lossy()
                        .into_owned();
                    out.push((key, std::fs::read(&p).expect("read object")));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Every file the server stores (objects, metadata, unfinished multipart parts): what a
    /// privacy sweep must search.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// The path of `bucket`/`key` on disk.
    pub fn object_path(&self, bucket: &str, key: &str) -> PathBuf {
        self.data.path().join(bucket).join(key)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    listener: std::net::TcpListener,
    root: PathBuf,
    up: watch::Receiver<(bool, u64)>,
    faults: Arc<Faults>,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("s3 runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        let fs = s3s_fs::FileSystem::new(&root).expect("s3s-fs");
        let mut builder = S3ServiceBuilder::new(fs);
        builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        let s3 = builder.build();
        let http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        tokio::pin!(shutdown);
        loop {
            let tcp = tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((tcp, _)) => tcp,
                    Err(_) => continue,
                },
            };
            let (serving, generation) = *up.borrow();
            if !serving {
                // Down: the connection is closed at once, as by a crashed server.
                drop(tcp);
                continue;
            }
            let s3 = s3.clone();
            let faults = faults.clone();
            let root = root.clone();
            let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let s3 = s3.clone();
                let faults = faults.clone();
                let root = root.clone();
                async move {
                    // s3s-fs creates a missing bucket on the first write; S3 answers 404
                    // NoSuchBucket, and so does this server.
                    let bucket = req.uri().path().trim_start_matches('/').split('/').next().unwrap_or("");
                    if !bucket.is_empty() && !root.join(bucket).is_dir() {
                        let body = format!(
                            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>\
                             <Message>The specified bucket does not exist</Message><BucketName>{bucket}</BucketName></Error>"
                        );
                        let mut resp = hyper::Response::new(s3s::Body::from(body));
                        *resp.status_mut() = hyper::StatusCode::NOT_FOUND;
                        return Ok(resp);
                    }
                    if req.method() == hyper::Method::PUT {
                        faults.puts_seen.fetch_add(1, Ordering::SeqCst);
                        *faults
                            .puts_by_path
                            .lock()
                            .expect("puts_by_path")
                            .entry(req.uri().path().to_owned())
                            .or_default() += 1;
                        let failing = faults
                            .fail_left
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
                                0 => None,
                                usize::MAX => Some(usize::MAX),
                                n => Some(n - 1),
                            })
                            .is_ok();
                        if failing {
                            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown\
                                        </Code><Message>Please reduce your request rate.</Message></Error>";
                            let mut resp = hyper::Response::new(s3s::Body::from(body.to_owned()));
                            *resp.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
                            return Ok(resp);
                        }
                        let left = faults.puts_left.load(Ordering::SeqCst);
                        if left == 0 {
                            faults.stalled_once.store(true, Ordering::SeqCst);
                            faults.stalled.notify_waiters();
                            std::future::pending::<()>().await;
                        } else if left != usize::MAX {
                            faults.puts_left.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                    hyper::service::Service::call(&s3, req).await
                }
            });
            let conn = http.serve_connection(TokioIo::new(tcp), svc).into_owned();
            let mut changes = up.clone();
            tokio::spawn(async move {
                tokio::pin!(conn);
                loop {
                    tokio::select! {
                        _ = &mut conn => return,
                        changed = changes.changed() => {
                            // Any change of state ends connections of the old generation.
                            if changed.is_err() || changes.borrow().1 != generation {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    rt.shutdown_timeout(Duration::from_secs(2));
}
