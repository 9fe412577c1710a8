//! `POST /relay/v1/evidence`: a producer on another host (an MCP server, a device layer in
//! another pod) appends records to the relay's current run over HTTP.
//!
//! The body is what `cdp-relay evidence append` reads on stdin — one JSON record per line — and
//! every line goes through the same validation and sanitizing ([`cdp_evidence::producer`]),
//! with the run's own sanitizer (secrets registered with the run are masked too). All or
//! nothing: a bad line refuses the whole request with 400 naming the line (by number, never its
//! content), and a good request goes to the run's writer as one batch, written in one append,
//! so records of two requests never interleave and a request is never half-written. When
//! another producer finalized the run (or its directory was deleted), the writer moves to the
//! session's next run and the records land there, as with `evidence append`
//! (`evidence/src/rejoin.rs`); the answer names the run that holds them.
//!
//! The access policy and token are the proxy's, applied before this runs.

use crate::ops::Reply;
use cdp_capture::writer::AppendError;
use cdp_capture::PipelineHandle;
use cdp_evidence::producer;
use cdp_evidence::{Record, RunEnded, Source};
use cdp_sanitize::Sanitizer;

/// Largest body accepted. 4 MiB: records are cut to 64 KiB each anyway.
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// Default `source` of records that do not name one.
pub const DEFAULT_SOURCE: &str = "remote";
/// Bad lines named in a 400 answer; the rest are counted.
const NAMED_BAD_LINES: usize = 5;

/// Checks what can be checked before the body is read: method, content type, query. Returns
/// the `source` for records that do not name one.
pub fn check_request(
    method: &str,
    content_type: Option<&str>,
    query: Option<&str>,
) -> Result<String, Reply> {
    if method != "POST" {
        return Err(Reply::method_not_allowed(
            "POST",
            "append records with POST /relay/v1/evidence and one JSON record per line as the body",
        ));
    }
    if let Some(ct) = content_type {
        let mime = ct
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let accepted = [
            "application/x-ndjson",
            "application/jsonl",
            "application/json",
            "text/plain",
        ];
        if !accepted.contains(&mime.as_str()) {
            return Err(Reply::text(
                415,
                "cdp-relay: send the records as application/x-ndjson (one JSON object per line)",
            ));
        }
    }
    let mut source = DEFAULT_SOURCE.to_owned();
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "source" {
            return Err(Reply::text(
                400,
                "cdp-relay: the only query parameter is source=NAME",
            ));
        }
        if cdp_evidence::validate_id("source", value).is_err() {
            return Err(Reply::text(
                400,
                "cdp-relay: source must be 1-128 of A-Z a-z 0-9 . _ - (not starting with .)",
            ));
        }
        if !producer::source_allowed(value) {
            return Err(Reply::text(
                400,
                "cdp-relay: source may not be relay: that names the relay's own records",
            ));
        }
        value.clone_into(&mut source);
    }
    Ok(source)
}

/// Parses and sanitizes every line; any bad line refuses them all.
pub fn parse_body(body: &[u8], sanitizer: &Sanitizer) -> Result<Vec<Record>, Reply> {
    let mut records = Vec::new();
    let mut bad: Vec<String> = Vec::new();
    let mut bad_count = 0usize;
    for (i, line) in body.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match producer::parse_line(line, sanitizer) {
            Ok(r) => records.push(r),
            Err(reason) => {
                bad_count += 1;
                if bad.len() < NAMED_BAD_LINES {
                    bad.push(format!("line {}: {reason}", i + 1));
                }
            }
        }
    }
    if bad_count > 0 {
        let more = bad_count - bad.len();
        let tail = if more > 0 {
            format!(" (and {more} more bad line(s))")
        } else {
            String::new()
        };
        return Err(Reply::text(
            400,
            &format!(
                "cdp-relay: {}{tail}; nothing was appended (see docs/evidence-format.md)",
                bad.join("; ")
            ),
        ));
    }
    if records.is_empty() {
        return Err(Reply::text(
            400,
            "cdp-relay: no records in the body; send one JSON record per line",
        ));
    }
    Ok(records)
}

/// The whole request: validation, then one batch through the run's writer. Blocks until the
/// writer has written it: call it off the async workers.
pub fn append_blocking(
    evidence: Option<&PipelineHandle>,
    method: &str,
    content_type: Option<&str>,
    query: Option<&str>,
    body: &[u8],
) -> Reply {
    let source = match check_request(method, content_type, query) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let Some(evidence) = evidence else {
        return Reply::text(
            409,
            "cdp-relay: evidence is off, so there is no run to append to",
        );
    };
    let records = match parse_body(body, evidence.sanitizer()) {
        Ok(r) => r,
        Err(r) => return r,
    };
    let count = records.len();
    let Ok(source) = Source::new(&source) else {
        // check_request validated it already.
        return Reply::text(400, "cdp-relay: the only query parameter is source=NAME");
    };
    // Records that name no source are the producer's (the writer's own are the relay's).
    let records = records
        .into_iter()
        .map(|r| match r.source_override() {
            Some(_) => r,
            None => r.source(source.clone()),
        })
        .collect();
    match evidence.writer().append_records_blocking(records) {
        Ok(appended) => {
            if let Some(ended) = appended.rejoined {
                let why = match ended {
                    RunEnded::Finalized => "was finalized by another producer",
                    RunEnded::Deleted => "was deleted",
                };
                tracing::info!(
                    "evidence: the run {why}; a remote producer's records went to run {}",
                    appended.run_id
                );
            }
            Reply {
                status: 200,
                content_type: "application/json",
                body: format!(
                    "{}\n",
                    serde_json::json!({"runId": appended.run_id, "appended": count})
                ),
                allow: None,
            }
        }
        Err(AppendError::Stopped) => Reply::text(
            503,
            "cdp-relay: the relay is stopping, so nothing was appended; try again once it is back",
        ),
        Err(e) => {
            // Paths and OS errors only: never a record.
            tracing::warn!("evidence: a remote producer's records could not be appended: {e}");
            Reply::text(
                503,
                "cdp-relay: the records could not be written to the run; try again",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked_before_the_body() {
        assert_eq!(check_request("POST", None, None).unwrap(), "remote");
        assert_eq!(
            check_request(
                "POST",
                Some("application/x-ndjson; charset=utf-8"),
                Some("source=device")
            )
            .unwrap(),
            "device"
        );
        let r = check_request("GET", None, None).unwrap_err();
        assert_eq!((r.status, r.allow), (405, Some("POST")));
        assert_eq!(
            check_request("POST", Some("multipart/form-data"), None)
                .unwrap_err()
                .status,
            415
        );
        assert_eq!(
            check_request("POST", None, Some("source=../x"))
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            check_request("POST", None, Some("source=relay"))
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            check_request("POST", None, Some("run=abc"))
                .unwrap_err()
                .status,
            400
        );
    }

    #[test]
    fn one_bad_line_refuses_all_and_names_lines_not_values() {
        let s = Sanitizer::new();
        let ok = r#"{"tool":"adb","kind":"action","payload":{"method":"tap"}}"#;
        let body = format!("{ok}\n\n{{\"tool\":\"hunter2\"}}\r\n{ok}\nnot json hunter2\n");
        let r = parse_body(body.as_bytes(), &s).unwrap_err();
        assert_eq!(r.status, 400);
        assert!(
            r.body.contains("line 3:") && r.body.contains("line 5:"),
            "{}",
            r.body
        );
        assert!(r.body.contains("nothing was appended"), "{}", r.body);
        assert!(!r.body.contains("hunter2"), "{}", r.body);
        assert_eq!(
            parse_body(format!("{ok}\r\n\n{ok}").as_bytes(), &s)
                .unwrap()
                .len(),
            2
        );
        assert_eq!(parse_body(b" \n\n", &s).unwrap_err().status, 400);
        // A remote record cannot pass for the relay's own, nor claim a trillion lost records.
        for spoof in [
            r#"{"tool":"t","kind":"action","payload":{"method":"m"},"source":"relay"}"#,
            r#"{"tool":"t","kind":"marker","payload":{"marker":"evidenceDropped","count":999999999999}}"#,
        ] {
            let r = parse_body(spoof.as_bytes(), &s).unwrap_err();
            assert_eq!(r.status, 400, "{spoof}");
            assert!(!r.body.contains("999999999999"), "{}", r.body);
        }
        let fine = r#"{"tool":"t","kind":"marker","payload":{"marker":"evidenceDropped","count":1000000}}"#;
        assert!(parse_body(fine.as_bytes(), &s).is_ok());
        let many: String = (0..9).map(|_| "x\n").collect();
        let r = parse_body(many.as_bytes(), &s).unwrap_err();
        assert!(r.body.contains("and 4 more"), "{}", r.body);
    }

    #[test]
    fn records_go_through_the_writer_under_the_producers_source_until_the_relay_stops() {
        let tmp = tempfile::tempdir().unwrap();
        let settings = cdp_capture::Settings::at(tmp.path());
        let pipeline = cdp_capture::Pipeline::start(&settings, cdp_capture::Hooks::default())
            .expect("pipeline");
        let handle = pipeline.handle().clone();
        let append = |query, line: &str| {
            append_blocking(Some(&handle), "POST", None, query, line.as_bytes())
        };
        let plain = r#"{"tool":"adb","kind":"unnamed","payload":{}}"#;
        let named = r#"{"tool":"adb","kind":"named","payload":{},"source":"mcp"}"#;
        let r = append(None, plain);
        assert_eq!(r.status, 200, "{}", r.body);
        let answer: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(answer["runId"], handle.status().run_id.as_str());
        assert_eq!(answer["appended"], 1);
        assert_eq!(
            append(Some("source=device"), &format!("{plain}\n{named}")).status,
            200
        );

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let summary = rt.block_on(pipeline.finish()).expect("summary");
        let r = append(None, plain);
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(r.body.contains("stopping"), "{}", r.body);

        // Records that name no source are the producer's, never the relay's.
        let journal =
            std::fs::File::open(summary.run_dir.join(cdp_evidence::JOURNAL_FILE)).unwrap();
        let records = cdp_evidence::read_journal_from(std::io::BufReader::new(journal))
            .unwrap()
            .records;
        let sources: Vec<(&str, Option<&str>)> = records
            .iter()
            .filter(|r| r.kind == "unnamed" || r.kind == "named")
            .map(|r| (r.kind.as_str(), r.source.as_deref()))
            .collect();
        assert_eq!(
            sources,
            [
                ("unnamed", Some("remote")),
                ("unnamed", Some("device")),
                ("named", Some("mcp"))
            ]
        );
    }

    #[test]
    fn evidence_off_is_a_conflict() {
        let ok = br#"{"tool":"adb","kind":"action","payload":{"method":"tap"}}"#;
        assert_eq!(append_blocking(None, "POST", None, None, ok).status, 409);
        assert_eq!(append_blocking(None, "PUT", None, None, ok).status, 405);
    }
}
