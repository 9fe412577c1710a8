//! Where runs go: an object store built from `s3://bucket/prefix` and the `AWS_*` settings, the
//! names of a run's objects in it, the write check a relay makes before it starts, and store
//! errors turned into one line a person can act on.
//!
//! Never logs or returns a credential: settings values are only handed to the store builder,
//! and error text goes through the sanitizer before anyone sees it.

use crate::config::UploadSettings;
use crate::Error;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};
use std::sync::Arc;
use std::time::Duration;

/// The one retry policy for requests to the store: uploads, the write check, and `--remote`
/// reads all go through it, and nothing above it retries a request (a run whose upload failed
/// is uploaded again whole at the uploader's next scan, a new attempt, not a retry).
///
/// object_store retries what may succeed a moment later: a 5xx or 429 answer (S3's `SlowDown`),
/// a refused or closed connection, a read that timed out. It never retries a refusal (403,
/// 404) nor a write that timed out (it may have landed). At most [`MAX_RETRIES`] retries, the
/// waits between them growing from [`BACKOFF_FIRST`] (×2 each, jittered, at most
/// [`BACKOFF_MAX`]: 3.75 s in all at worst), none started more than [`RETRY_WINDOW`] after the
/// first try. Each try is bounded by the request timeout (`UploadSettings::request_timeout`),
/// so a request gives up within `RETRY_WINDOW + BACKOFF_MAX + request_timeout`. A blip during
/// shutdown is ridden out well inside the relay's shutdown grace (25 s by default), which the
/// uploader enforces whatever the store is doing.
pub const MAX_RETRIES: usize = 4;
/// The first wait before a retry.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between two tries.
pub const BACKOFF_MAX: Duration = Duration::from_secs(4);
/// No retry starts later than this after the first try.
pub const RETRY_WINDOW: Duration = Duration::from_secs(10);

/// [`MAX_RETRIES`] and friends as object_store takes them.
fn retry_config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: BACKOFF_FIRST,
            max_backoff: BACKOFF_MAX,
            base: 2.0,
        },
        max_retries: MAX_RETRIES,
        retry_timeout: RETRY_WINDOW,
    }
}

/// The object a relay writes at start to prove it may write (overwritten every time, so a
/// fleet leaves one small object per prefix). Its name is hidden: it is never a run.
pub(crate) const WRITE_CHECK: &str = ".cdp-relay-write-check";

/// The bucket and prefix runs are uploaded to.
#[derive(Clone)]
pub struct Target {
    store: Arc<dyn ObjectStore>,
    /// `prefix` without slashes at either end; may be empty.
    prefix: String,
    /// `s3://bucket/prefix` as the user wrote it (minus a trailing slash), for messages.
    display: String,
    /// The bucket name, for messages.
    bucket: String,
    check_timeout: Duration,
    /// Built to read runs back (`--remote`): errors speak of reading, not uploading.
    reading: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.display)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// Builds the store from the settings, to upload to. Nothing is contacted yet.
    pub fn new(settings: &UploadSettings) -> Result<Target, Error> {
        Target::build(settings, false)
    }

    /// Builds the store from the settings, to read runs back from (`runs --remote`, `report
    /// --remote`): its errors say reading and name the read permissions.
    pub fn for_reading(settings: &UploadSettings) -> Result<Target, Error> {
        Target::build(settings, true)
    }

    fn build(settings: &UploadSettings, reading: bool) -> Result<Target, Error> {
        let flag = if reading {
            "--remote"
        } else {
            "--evidence-upload"
        };
        let (bucket, prefix) = parse_url(&settings.url, flag)?;
        install_crypto_provider();
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&bucket)
            .with_client_options(
                ClientOptions::new()
                    .with_timeout(settings.request_timeout)
                    .with_connect_timeout(Duration::from_secs(5)),
            )
            .with_retry(retry_config());
        for (key, value) in &settings.options {
            // Unknown keys are ignored, as `AmazonS3Builder::from_env` ignores them (AWS_PROFILE,
            // AWS_PAGER… belong to other tools).
            if let Ok(k) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                if matches!(k, AmazonS3ConfigKey::Bucket) {
                    continue;
                }
                builder = builder.with_config(k, value.expose());
            }
        }
        let store = builder.build().map_err(|e| {
            let reason = format!("{} (check the AWS_* settings)", one_line(&e));
            let target = settings.url.clone();
            if reading {
                Error::Remote { target, reason }
            } else {
                Error::Upload { target, reason }
            }
        })?;
        let display = if prefix.is_empty() {
            format!("s3://{bucket}")
        } else {
            format!("s3://{bucket}/{prefix}")
        };
        Ok(Target {
            store: Arc::new(store),
            prefix,
            display,
            bucket,
            check_timeout: settings.check_timeout,
            reading,
        })
    }

    /// `s3://bucket/prefix`.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The store itself.
    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// `<prefix>/<run>/<relative>`; `relative` is `name` or `artifacts/name`, already validated.
    pub(crate) fn object(&self, run_id: &str, relative: &str) -> ObjectPath {
        self.key(&format!("{run_id}/{relative}"))
    }

    /// The prefix under which runs are listed.
    pub(crate) fn root(&self) -> Option<ObjectPath> {
        (!self.prefix.is_empty()).then(|| ObjectPath::from(self.prefix.as_str()))
    }

    /// Where a run's files go, for messages and the run's upload state: `s3://b/p/<run>/`.
    pub fn run_url(&self, run_id: &str) -> String {
        format!("{}/{run_id}/", self.display)
    }

    fn key(&self, rest: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(rest)
        } else {
            ObjectPath::from(format!("{}/{rest}", self.prefix))
        }
    }

    /// Writes the small write-check object: proves the endpoint answers, the credentials are
    /// accepted and the bucket exists and takes writes. Bounded by the settings' check timeout.
    pub async fn check_writable(&self, host: &str) -> Result<(), Error> {
        let body = serde_json::json!({
            "checkedAt": cdp_evidence::time::format_rfc3339_millis(std::time::SystemTime::now()),
            "host": host,
            "by": "cdp-relay",
        })
        .to_string();
        let key = self.key(WRITE_CHECK);
        let put = self.store.put(&key, body.into());
        match tokio::time::timeout(self.check_timeout, put).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(self.error(&e)),
            Err(_) => Err(self.timed_out(self.check_timeout)),
        }
    }

    /// A store error as this crate's error, explained.
    pub(crate) fn error(&self, e: &object_store::Error) -> Error {
        self.failed(self.explain(e))
    }

    /// An error about this target: an upload's, or a read's for a reading target.
    pub(crate) fn failed(&self, reason: String) -> Error {
        let target = self.display.clone();
        if self.reading {
            Error::Remote { target, reason }
        } else {
            Error::Upload { target, reason }
        }
    }

    /// No answer in time.
    pub(crate) fn timed_out(&self, after: Duration) -> Error {
        self.failed(format!(
            "no answer within {} s (is AWS_ENDPOINT_URL right, and the endpoint reachable?)",
            after.as_secs()
        ))
    }

    /// One line saying what went wrong and what to do.
    pub(crate) fn explain(&self, e: &object_store::Error) -> String {
        use object_store::Error as E;
        match e {
            E::Unauthenticated { .. } | E::PermissionDenied { .. } => format!(
                "access denied ({}); check the credentials (AWS_ACCESS_KEY_ID and \
                 AWS_SECRET_ACCESS_KEY, or the role) and that they may {} {}",
                status_word(e),
                if self.reading {
                    "s3:ListBucket and s3:GetObject in"
                } else {
                    "s3:PutObject into"
                },
                self.display
            ),
            E::NotFound { .. } => format!(
                "bucket {} not found; create it, or fix the bucket in the URL (and \
                 AWS_ENDPOINT_URL / AWS_REGION)",
                self.bucket
            ),
            _ => format!(
                "{} (is AWS_ENDPOINT_URL right, and the endpoint reachable?)",
                one_line(e)
            ),
        }
    }
}

/// reqwest's TLS (rustls, built without a provider of its own) uses the process's default
/// crypto provider: ring, as object_store's signing does. An error means one is installed
/// already (ours, or a program that embeds this library chose its own).
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// `s3://bucket/prefix` → (bucket, prefix without slashes at either end).
/// `flag` names the flag the URL came from, for the message.
pub(crate) fn parse_url(raw: &str, flag: &str) -> Result<(String, String), Error> {
    let bad = |why: &str| {
        // The URL is echoed through the sanitizer: a pasted `s3://key:secret@…` stays unseen.
        let shown = cdp_sanitize::Sanitizer::new().text_capped(raw, 200);
        Error::Usage(format!(
            "{flag} {:?} {why}; expected s3://BUCKET or s3://BUCKET/PREFIX",
            shown.as_str()
        ))
    };
    // The URL parser would resolve `a/../b` to `b`; a prefix is taken as written or refused.
    if raw.split('/').any(|seg| seg == "." || seg == "..") {
        return Err(bad("has a . or .. segment"));
    }
    let url = url::Url::parse(raw).map_err(|_| bad("is not a URL"))?;
    if !matches!(url.scheme(), "s3" | "s3a") {
        return Err(bad(
            "is not an s3:// URL (S3-compatible stores take s3:// plus AWS_ENDPOINT_URL)",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "carries credentials; pass them in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() || url.port().is_some() {
        return Err(bad("has a port, query or fragment"));
    }
    let bucket = url.host_str().unwrap_or_default().to_owned();
    let valid_bucket = (3..=63).contains(&bucket.len())
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'));
    if !valid_bucket {
        return Err(bad("names no valid bucket (3-63 of a-z 0-9 . -)"));
    }
    let prefix = url.path().trim_matches('/').to_owned();
    if !prefix.is_empty() {
        let segments_ok = prefix.split('/').all(|s| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        });
        if !segments_ok {
            return Err(bad(
                "has a prefix that is not plain path segments of A-Z a-z 0-9 . _ -",
            ));
        }
    }
    Ok((bucket, prefix))
}

/// The HTTP status a store error carries, for the message.
fn status_word(e: &object_store::Error) -> &'static str {
    match e {
        object_store::Error::Unauthenticated { .. } => "401",
        _ => "403",
    }
}

/// An error and its causes on one line, sanitized (a store may quote the key id back) and cut
/// to a readable length.
pub(crate) fn one_line(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = err.source();
    }
    let joined = parts.join(": ");
    let flat = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    cdp_sanitize::Sanitizer::new()
        .text_capped(&flat, 400)
        .into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("s3://evidence", "--evidence-upload").unwrap(),
            ("evidence".into(), String::new())
        );
        assert_eq!(
            parse_url("s3://my.bucket-1/fleet/prod/", "--evidence-upload").unwrap(),
            ("my.bucket-1".into(), "fleet/prod".into())
        );
        assert_eq!(parse_url("s3a://bkt/p", "--remote").unwrap().1, "p");
        for bad in [
            "",
            "evidence",
            "https://s3.amazonaws.com/b",
            "s3://UPPER",
            "s3://ab",
            "s3://key:secret@bucket/p",
            "s3://bucket/a//b",
            "s3://bucket/a/../b",
            "s3://bucket/p?x=1",
            "s3://bucket:9000/p",
            "s3://bucket/sp ace",
        ] {
            let e = parse_url(bad, "--remote").unwrap_err();
            assert!(e.to_string().starts_with("--remote "), "{e}");
            assert!(e.is_usage(), "{bad}: {e}");
            assert!(!e.to_string().contains("secret@"), "{e}");
        }
    }

    #[test]
    fn keys_and_debug_hide_nothing_they_should_not_show() {
        let mut s = UploadSettings::new("s3://bkt/fleet/a");
        s.options.push((
            "AWS_ACCESS_KEY_ID".into(),
            crate::SecretValue::new("AKIDEXAMPLE".into()),
        ));
        s.options.push((
            "AWS_SECRET_ACCESS_KEY".into(),
            crate::SecretValue::new("wJalrXUtnFEMI/K7MDENG".into()),
        ));
        s.options.push((
            "AWS_ENDPOINT_URL".into(),
            crate::SecretValue::new("http://127.0.0.1:1".into()),
        ));
        let t = Target::new(&s).unwrap();
        assert_eq!(
            t.object("r1", "artifacts/a.png").as_ref(),
            "fleet/a/r1/artifacts/a.png"
        );
        assert_eq!(t.run_url("r1"), "s3://bkt/fleet/a/r1/");
        assert!(!format!("{t:?}").contains("wJalr"));
        assert!(!format!("{s:?}").contains("wJalr"));
        let mut bare = UploadSettings::new("s3://bkt");
        bare.options = s.options.clone();
        let bare = Target::new(&bare).unwrap();
        assert_eq!(
            bare.object("r1", "manifest.json").as_ref(),
            "r1/manifest.json"
        );
        assert!(bare.root().is_none());
    }

    #[test]
    fn the_retry_policy_fits_in_the_shutdown_grace() {
        let c = retry_config();
        assert_eq!(c.max_retries, MAX_RETRIES);
        // object_store's backoff: the first wait is `init`, each next one at most `base` times
        // the last, all capped at `max_backoff`.
        let mut wait = c.backoff.init_backoff;
        let mut worst = Duration::ZERO;
        for _ in 0..c.max_retries {
            worst += wait;
            wait = wait.mul_f64(c.backoff.base).min(c.backoff.max_backoff);
        }
        assert_eq!(worst, Duration::from_millis(3750));
        // No retry starts after the window; the last one waits at most `max_backoff` first.
        let last_start = c.retry_timeout + c.backoff.max_backoff;
        assert!(
            last_start < crate::config::DEFAULT_SHUTDOWN_GRACE,
            "{last_start:?}"
        );
        let s = UploadSettings::new("s3://bkt");
        assert!(s.request_timeout + last_start < Duration::from_secs(60));
    }

    #[test]
    fn reading_errors_say_reading_and_name_the_read_permissions() {
        let denied = || object_store::Error::PermissionDenied {
            path: "fleet/r1/manifest.json".into(),
            source: "403 AccessDenied".into(),
        };
        let s = UploadSettings::new("s3://bkt/fleet");
        let write = Target::new(&s).unwrap().error(&denied()).to_string();
        assert!(
            write.starts_with("evidence upload to s3://bkt/fleet"),
            "{write}"
        );
        assert!(write.contains("s3:PutObject"), "{write}");
        let read = Target::for_reading(&s)
            .unwrap()
            .error(&denied())
            .to_string();
        assert!(
            read.starts_with("reading evidence from s3://bkt/fleet"),
            "{read}"
        );
        assert!(
            read.contains("s3:GetObject") && read.contains("s3:ListBucket"),
            "{read}"
        );
        assert!(
            !read.contains("upload") && !read.contains("PutObject"),
            "{read}"
        );
    }
}
