//! The run's evidence as MCP resources, read-only and confined to the evidence root:
//!
//! ```text
//! evidence://runs                                the runs, newest first (JSON)
//! evidence://runs/{runId}/summary.md             {runId}: a run id, or `current`
//! evidence://runs/{runId}/report.html
//! evidence://runs/{runId}/actions.jsonl
//! evidence://runs/{runId}/manifest.json
//! evidence://runs/{runId}/replay.spec.ts         the run as a Playwright test (`cdp-relay export`)
//! evidence://runs/{runId}/trace.zip              the run as a Playwright trace (a blob)
//! evidence://runs/{runId}/run.har                the run's requests as HAR 1.2
//! evidence://runs/{runId}/artifacts/{name}       images as blobs with their MIME type
//! ```
//!
//! A URI is taken apart as plain text and never percent-decoded: every path segment must pass
//! the evidence id rule (`[A-Za-z0-9._-]`, not starting with `.`), so `..`, `%2e%2e`, `/` and
//! absolute paths are refused before anything is opened. The run directory must be a real
//! directory inside the root ([`cdp_evidence::Store::run_dir`]) and every file is opened through
//! [`cdp_evidence::RunDir`] (`openat`, no symlink followed). An artifact is served only when
//! the run's journal lists it, and only with a single link (a hard link planted in
//! `artifacts/` may be any file of the filesystem). The summary and report of a run still
//! recording are rendered in memory on each read, and the replay test, the trace and the HAR
//! of any run are written in memory on each read; nothing here writes.

use cdp_evidence::{RunDir, Store};
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use rmcp::ErrorData;

/// The scheme and root of every evidence URI.
pub(crate) const PREFIX: &str = "evidence://runs";
/// Largest file served whole (report pages, journals and frames are far smaller).
pub(crate) const MAX_BYTES: u64 = 64 << 20;

/// The files of a run that are resources.
const FILES: [(&str, &str, &str); 7] = [
    (
        cdp_report::SUMMARY_FILE,
        "text/markdown",
        "The run as text: steps, failures, typing verdicts",
    ),
    (
        cdp_report::HTML_FILE,
        "text/html",
        "The self-contained filmstrip report",
    ),
    (
        cdp_evidence::JOURNAL_FILE,
        "application/jsonl",
        "The journal: one JSON record per line",
    ),
    (
        cdp_evidence::MANIFEST_FILE,
        "application/json",
        "The run's manifest",
    ),
    (
        cdp_report::replay::SPEC_FILE,
        "text/x-typescript",
        "The run as a Playwright test that replays it (typed text from environment variables)",
    ),
    (
        cdp_report::trace::TRACE_FILE,
        "application/zip",
        "The run as a Playwright trace (open it with npx playwright show-trace)",
    ),
    (
        cdp_report::har::HAR_FILE,
        "application/json",
        "The run's failed requests as HAR 1.2 (origin and path only)",
    ),
];

/// A parsed evidence URI.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Target<'a> {
    /// `evidence://runs`.
    Runs,
    /// A file of a run.
    File { run: RunRef<'a>, name: &'a str },
    /// An artifact of a run.
    Artifact { run: RunRef<'a>, name: &'a str },
}

/// `current` or a run id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RunRef<'a> {
    Current,
    Id(&'a str),
}

/// True for URIs this module answers (everything else goes to the wrapped server).
pub(crate) fn is_ours(uri: &str) -> bool {
    uri.starts_with("evidence:")
}

fn refused() -> ErrorData {
    ErrorData::invalid_params(
        "not an evidence resource: use evidence://runs or evidence://runs/{runId}/{summary.md|report.html|actions.jsonl|manifest.json|replay.spec.ts|trace.zip|run.har|artifacts/NAME}",
        None,
    )
}

fn segment(s: &str) -> Result<&str, ErrorData> {
    cdp_evidence::validate_id("resource path segment", s).map_err(|_| refused())?;
    Ok(s)
}

fn run(s: &str) -> Result<RunRef<'_>, ErrorData> {
    Ok(match segment(s)? {
        "current" => RunRef::Current,
        id => RunRef::Id(id),
    })
}

/// Takes an evidence URI apart (see the module docs); never decodes, never touches a file.
pub(crate) fn parse(uri: &str) -> Result<Target<'_>, ErrorData> {
    let rest = uri.strip_prefix(PREFIX).ok_or_else(refused)?;
    if rest.is_empty() || rest == "/" {
        return Ok(Target::Runs);
    }
    let rest = rest.strip_prefix('/').ok_or_else(refused)?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [id, name] if FILES.iter().any(|(f, _, _)| f == name) => Ok(Target::File {
            run: run(id)?,
            name,
        }),
        [id, cdp_evidence::ARTIFACTS_DIR, name] => Ok(Target::Artifact {
            run: run(id)?,
            name: segment(name)?,
        }),
        _ => Err(refused()),
    }
}

/// How long a reader of the run being recorded waits for what the relay saw before the read to
/// be written.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits, at most [`SETTLE`], until what the relay saw before now is in the journal: the traffic
/// reader has handled every copy stamped before now, and the writer has appended everything
/// sent to it. Records still held for a frame, a verdict or a click's element come later; a
/// replay spec of a run still being recorded says so in its header.
pub(crate) async fn settle(h: &cdp_capture::PipelineHandle) {
    let written = async {
        h.order().caught_up().await;
        h.writer().sync().await;
    };
    let _ = tokio::time::timeout(SETTLE, written).await;
}

/// What the resource reader needs: the root, and the run being recorded.
pub(crate) struct Evidence<'a> {
    pub store: &'a Store,
    /// The current run's id, when evidence is recording.
    pub current: Option<String>,
    /// Over HTTP, the MCP session whose runs alone are shown; `None`: every run (stdio).
    pub session: Option<String>,
}

impl Evidence<'_> {
    fn run_dir(&self, run: &RunRef<'_>) -> Result<(String, RunDir), ErrorData> {
        let id = match run {
            RunRef::Current => self.current.clone().ok_or_else(|| {
                ErrorData::resource_not_found("no run is being recorded (evidence is off)", None)
            })?,
            RunRef::Id(id) => (*id).to_owned(),
        };
        if self.session.is_some() && !self.in_session(&id) {
            return Err(ErrorData::resource_not_found(
                format!("no run {id} in this MCP session"),
                None,
            ));
        }
        let path = self.store.run_dir(&id).map_err(|e| match e {
            cdp_evidence::Error::RunNotFound { .. } => {
                ErrorData::resource_not_found(format!("no run {id} in the evidence root"), None)
            }
            cdp_evidence::Error::Confinement { .. } => ErrorData::invalid_params(
                format!("run {id} is not a real directory inside the evidence root"),
                None,
            ),
            _ => ErrorData::resource_not_found(format!("run {id} cannot be read"), None),
        })?;
        let dir = RunDir::open(&path)
            .map_err(|_| ErrorData::resource_not_found(format!("run {id} cannot be read"), None))?;
        Ok((id, dir))
    }

    fn in_session(&self, id: &str) -> bool {
        self.store.list_runs().is_ok_and(|runs| {
            runs.iter()
                .any(|r| r.id == id && r.session_id.is_some() && r.session_id == self.session)
        })
    }

    /// Reads one resource. `running` says whether the named run is the one being recorded
    /// (its summary and report are then rendered now).
    pub(crate) fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let content = match parse(uri)? {
            Target::Runs => {
                let mut runs = self.store.list_runs().map_err(|_| {
                    ErrorData::internal_error("the evidence root cannot be listed", None)
                })?;
                runs.reverse();
                runs.retain(|r| self.session.is_none() || r.session_id == self.session);
                let text = serde_json::to_string_pretty(&runs)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                text_contents(uri, "application/json", text)
            }
            Target::File { run, name } => {
                let (id, dir) = self.run_dir(&run)?;
                let mime = FILES
                    .iter()
                    .find(|(f, _, _)| *f == name)
                    .map_or("text/plain", |(_, m, _)| m);
                if name == cdp_report::replay::SPEC_FILE {
                    let export = cdp_report::replay::export(
                        dir.path(),
                        cdp_report::replay::Format::default(),
                    )
                    .map_err(|_| {
                        ErrorData::internal_error(format!("run {id} cannot be exported"), None)
                    })?;
                    return Ok(ReadResourceResult::new(vec![text_contents(
                        uri,
                        mime,
                        export.text,
                    )]));
                }
                if let Some(content) = export(uri, &id, &dir, name, mime)? {
                    return Ok(ReadResourceResult::new(vec![content]));
                }
                let running = self.current.as_deref() == Some(id.as_str());
                let rendered = matches!(name, cdp_report::SUMMARY_FILE | cdp_report::HTML_FILE);
                let bytes = if rendered && running {
                    None
                } else {
                    dir.read_file(name, MAX_BYTES).map_err(|e| match e {
                        cdp_evidence::Error::Confinement { .. } => ErrorData::invalid_params(
                            format!("{name} of run {id} is not a regular file inside the run"),
                            None,
                        ),
                        _ => ErrorData::resource_not_found(
                            format!("{name} of run {id} cannot be read"),
                            None,
                        ),
                    })?
                };
                let text = match bytes {
                    Some(b) => String::from_utf8_lossy(&b).into_owned(),
                    // Not rendered yet (a running run): render now, in memory.
                    None if rendered => {
                        let out = cdp_report::render_to_memory(
                            dir.path(),
                            &cdp_report::Options::default(),
                        )
                        .map_err(|_| {
                            ErrorData::internal_error(format!("run {id} cannot be rendered"), None)
                        })?;
                        if name == cdp_report::SUMMARY_FILE {
                            out.summary
                        } else {
                            out.html
                        }
                    }
                    None => {
                        return Err(ErrorData::resource_not_found(
                            format!("run {id} has no {name}"),
                            None,
                        ))
                    }
                };
                text_contents(uri, mime, text)
            }
            Target::Artifact { run, name } => {
                let (id, dir) = self.run_dir(&run)?;
                // Only what the relay stored and recorded: a file planted in artifacts/ (by a
                // tool writing there, or a hard link to a file elsewhere) is not evidence.
                if !listed(&dir, name) {
                    return Err(ErrorData::resource_not_found(
                        format!("run {id} has no artifact {name} in its journal"),
                        None,
                    ));
                }
                let file = dir
                    .artifact(&format!("{}/{name}", cdp_evidence::ARTIFACTS_DIR))
                    .map_err(|why| match why {
                        cdp_evidence::ArtifactRefusal::Missing => ErrorData::resource_not_found(
                            format!("run {id} has no artifact {name}"),
                            None,
                        ),
                        other => ErrorData::invalid_params(
                            format!("artifact {name} of run {id} {}", other.reason()),
                            None,
                        ),
                    })?;
                let bytes = file.read_capped(MAX_BYTES).ok().flatten().ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!("artifact {name} is too large to serve"),
                        None,
                    )
                })?;
                use base64::Engine as _;
                ResourceContents::BlobResourceContents {
                    uri: uri.to_owned(),
                    mime_type: Some(mime_of(name).to_owned()),
                    blob: base64::engine::general_purpose::STANDARD.encode(bytes),
                    meta: None,
                }
            }
        };
        Ok(ReadResourceResult::new(vec![content]))
    }
}

/// The trace or the HAR of a run, built on read from its journal; `None` for another file.
fn export(
    uri: &str,
    id: &str,
    dir: &RunDir,
    name: &str,
    mime: &str,
) -> Result<Option<ResourceContents>, ErrorData> {
    let failed = || ErrorData::internal_error(format!("run {id} cannot be exported"), None);
    if name == cdp_report::har::HAR_FILE {
        let har = cdp_report::har::export(dir.path()).map_err(|_| failed())?;
        return Ok(Some(text_contents(uri, mime, har.text)));
    }
    if name != cdp_report::trace::TRACE_FILE {
        return Ok(None);
    }
    let (bytes, _) = cdp_report::trace::to_memory(dir.path()).map_err(|_| failed())?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ErrorData::invalid_params(
            format!(
                "the trace of run {id} is too large to serve ({} MiB): write it with cdp-relay export {id} --format trace --out run.zip",
                bytes.len() >> 20
            ),
            None,
        ));
    }
    use base64::Engine as _;
    Ok(Some(ResourceContents::BlobResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(mime.to_owned()),
        blob: base64::engine::general_purpose::STANDARD.encode(bytes),
        meta: None,
    }))
}

/// True when a record of the run's journal names `artifacts/{name}` (read line by line, as
/// the summary reads it: memory bounded by one line).
fn listed(dir: &RunDir, name: &str) -> bool {
    let want = format!("{}/{name}", cdp_evidence::ARTIFACTS_DIR);
    let manifest = dir.manifest().ok().flatten();
    let mut found = false;
    let _ = dir.scan_journal(manifest.as_ref(), None, |line| {
        if let cdp_evidence::JournalLine::Record(r) = line {
            found = found || r.artifacts.contains(&want);
        }
    });
    found
}

fn text_contents(uri: &str, mime: &str, text: String) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(mime.to_owned()),
        text,
        meta: None,
    }
}

/// The MIME type of an artifact, by its extension.
pub(crate) fn mime_of(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()) {
        Some(e) if e == "png" => "image/png",
        Some(e) if e == "jpg" || e == "jpeg" => "image/jpeg",
        Some(e) if e == "webp" => "image/webp",
        _ => "application/octet-stream",
    }
}

/// The resources listed: the run list and the current run's files.
pub(crate) fn list(current: bool) -> ListResourcesResult {
    let mut out = vec![Resource::new(PREFIX, "runs")
        .with_description("The evidence runs, newest first")
        .with_mime_type("application/json")];
    if current {
        for (file, mime, description) in FILES {
            out.push(
                Resource::new(
                    format!("{PREFIX}/current/{file}"),
                    format!("current/{file}"),
                )
                .with_description(description)
                .with_mime_type(mime),
            );
        }
    }
    ListResourcesResult::with_all_items(out)
}

/// The resource templates: any run's files and artifacts.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    let mut out: Vec<_> = FILES
        .iter()
        .map(|(file, mime, description)| {
            ResourceTemplate::new(format!("{PREFIX}/{{runId}}/{file}"), format!("run {file}"))
                .with_description(format!("{description} ({{runId}}: a run id or `current`)"))
                .with_mime_type(*mime)
        })
        .collect();
    out.push(
        ResourceTemplate::new(
            format!("{PREFIX}/{{runId}}/artifacts/{{name}}"),
            "run artifact",
        )
        .with_description("A screenshot or frame of a run, as a blob with its MIME type"),
    );
    ListResourceTemplatesResult::with_all_items(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_parsed_without_decoding_and_refused_when_odd() {
        assert_eq!(parse("evidence://runs").unwrap(), Target::Runs);
        assert_eq!(parse("evidence://runs/").unwrap(), Target::Runs);
        assert_eq!(
            parse("evidence://runs/current/summary.md").unwrap(),
            Target::File {
                run: RunRef::Current,
                name: "summary.md"
            }
        );
        assert_eq!(
            parse("evidence://runs/20260101T000000000Z-0011/artifacts/000001-frame.jpeg").unwrap(),
            Target::Artifact {
                run: RunRef::Id("20260101T000000000Z-0011"),
                name: "000001-frame.jpeg"
            }
        );
        for bad in [
            "evidence://runs/../summary.md",
            "evidence://runs/current/../../etc/passwd",
            "evidence://runs/%2e%2e/summary.md",
            "evidence://runs/current/artifacts/%2e%2e",
            "evidence://runs/current/artifacts/../manifest.json",
            "evidence://runs/current/artifacts/.hidden",
            "evidence://runs/current/artifacts/a/b.png",
            "evidence://runs/current//summary.md",
            "evidence://runs/current/budget.json",
            "evidence://runs/current/actions.jsonl.lock",
            "evidence://runs/current",
            "evidence://runsx",
            "evidence:///etc/passwd",
            "evidence://runs//etc/passwd",
            "file:///etc/passwd",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_artifacts_the_journal_lists_are_served_and_only_with_one_link() {
        use cdp_evidence::{Action, EvidenceConfig, Record, RecordKind};
        use cdp_sanitize::SafeText;
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(EvidenceConfig::at(tmp.path().join("evidence"))).unwrap();
        let run = store.join_session("s", "relay").unwrap();
        let cdp_evidence::ArtifactOutcome::Stored(a) = run
            .store_artifact("frame", "jpeg", b"\xff\xd8\xffjpeg")
            .unwrap()
        else {
            panic!("not stored")
        };
        let frame = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(Action::new(SafeText::literal("frame"))),
        );
        let relative = a.as_str().to_owned();
        run.append(frame.artifact(a)).unwrap();
        let evidence = Evidence {
            store: &store,
            current: Some(run.id().to_owned()),
            session: None,
        };
        let uri = |name: &str| format!("{PREFIX}/current/artifacts/{name}");
        let listed = relative.strip_prefix("artifacts/").unwrap().to_owned();
        assert!(evidence.read(&uri(&listed)).is_ok(), "a recorded frame");
        // Planted beside it: a file no record names, and a hard link to a file outside.
        std::fs::write(run.dir().join("artifacts/000777-frame.png"), b"planted").unwrap();
        assert!(evidence.read(&uri("000777-frame.png")).is_err());
        let outside = tmp.path().join("outside.png");
        std::fs::write(&outside, b"outside the root").unwrap();
        let path = run.dir().join(&relative);
        std::fs::remove_file(&path).unwrap();
        std::fs::hard_link(&outside, &path).unwrap();
        let e = evidence.read(&uri(&listed)).unwrap_err();
        assert!(e.message.contains("hard links"), "{e:?}");
    }

    #[test]
    fn the_replay_test_of_a_run_is_written_on_read() {
        assert_eq!(
            parse("evidence://runs/current/replay.spec.ts").unwrap(),
            Target::File {
                run: RunRef::Current,
                name: "replay.spec.ts"
            }
        );
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(cdp_evidence::EvidenceConfig::at(tmp.path())).unwrap();
        let run = store.join_session("s", "relay").unwrap();
        let evidence = Evidence {
            store: &store,
            current: Some(run.id().to_owned()),
            session: None,
        };
        for id in ["current", run.id()] {
            let read = evidence
                .read(&format!("{PREFIX}/{id}/replay.spec.ts"))
                .unwrap();
            let ResourceContents::TextResourceContents {
                text, mime_type, ..
            } = &read.contents[0]
            else {
                panic!("not text")
            };
            assert_eq!(mime_type.as_deref(), Some("text/x-typescript"));
            assert!(text.contains("from '@playwright/test'"), "{text}");
            assert!(text.contains(run.id()), "{text}");
        }
        assert!(!std::fs::exists(run.dir().join("replay.spec.ts")).unwrap());
    }

    #[test]
    fn the_trace_and_the_har_of_a_run_are_built_on_read() {
        use cdp_evidence::{Action, Record, RecordKind};
        use cdp_sanitize::SafeText;
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(cdp_evidence::EvidenceConfig::at(tmp.path())).unwrap();
        let run = store.join_session("s", "relay").unwrap();
        run.append(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(Action::new(SafeText::literal("Page.reload"))),
        ))
        .unwrap();
        let evidence = Evidence {
            store: &store,
            current: Some(run.id().to_owned()),
            session: None,
        };
        for id in ["current", run.id()] {
            let read = evidence.read(&format!("{PREFIX}/{id}/trace.zip")).unwrap();
            let ResourceContents::BlobResourceContents {
                blob, mime_type, ..
            } = &read.contents[0]
            else {
                panic!("not a blob")
            };
            assert_eq!(mime_type.as_deref(), Some("application/zip"));
            use base64::Engine as _;
            let zip = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .unwrap();
            assert!(zip.starts_with(b"PK\x03\x04"), "a zip archive");
            // Entry names are not compressed: the trace's own files are there.
            let text = String::from_utf8_lossy(&zip);
            assert!(text.contains("trace.trace") && text.contains("trace.network"));
            let read = evidence.read(&format!("{PREFIX}/{id}/run.har")).unwrap();
            let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
                panic!("not text")
            };
            let har: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(har["log"]["version"], "1.2");
        }
        for name in ["trace.zip", "run.har"] {
            assert!(!std::fs::exists(run.dir().join(name)).unwrap());
        }
        assert!(parse("evidence://runs/current/../trace.zip").is_err());
    }

    #[test]
    fn artifacts_have_their_image_type() {
        assert_eq!(mime_of("000001-frame.jpeg"), "image/jpeg");
        assert_eq!(mime_of("x.PNG"), "image/png");
        assert_eq!(mime_of("x.webp"), "image/webp");
        assert_eq!(mime_of("x.bin"), "application/octet-stream");
    }
}
